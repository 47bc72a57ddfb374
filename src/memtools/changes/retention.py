"""A retention policy: videos older than N days are purged (``memtools retention``, and the server once a day).

The policy lives in ``<memory>/retention.json`` (``{"keep_days": N}``; ``{"keep_days": null}`` turns it off),
set by ``memtools retention --keep-days N`` / ``--off``; a memory without that file takes ``retention_days``
from the config file (``--config memtools.toml``), if one is given. A video's age runs from its recording start
(``memtools.wallclock``: the catalog's ``video_times``) or, without one, from when it was last written to the
memory (its catalog entry's ``updated_at``: added, or rebuilt). A video with neither is never due.

``apply`` purges every due video in one purge (``memtools.changes.purge.purge_videos``, reason ``retention``:
one change in the log, one receipt) and drops the lines of the reads audit log (``reads.jsonl``) older than
N days, all under the writers' lock. ``memtools.changes.retention_daily`` runs it in the server.

    from memtools.changes.retention import apply, due, set_policy

    set_policy("my-memory", 30)
    with Memory.open("my-memory") as memory:
        for video in due(memory, 30):
            print(video.line())
        outcome = apply(memory)              # the policy stored for the memory
        outcome.receipt                      # the purge's receipt, or None when nothing was due
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtools.errors import ConfigError

if TYPE_CHECKING:
    from memtools.store import Memory

POLICY_FILE = "retention.json"
CONFIG_KEY = "retention_days"
READS_FILE = "reads.jsonl"
MAX_DAYS = 100 * 366
"""The longest policy accepted (a century): more is a typo, not a policy."""


@dataclass(frozen=True)
class Policy:
    """How many days videos are kept (None: forever), and where that was said."""

    keep_days: int | None
    source: str

    def line(self) -> str:
        if self.keep_days is None:
            return f"No retention policy: videos are kept until forgotten ({self.source})."
        return (f"Videos recorded (or, without a recording time, added) more than {self.keep_days} day(s) ago are "
                f"purged ({self.source}).")


def checked_days(value: object, where: str) -> int:
    """``value`` as a number of days (1 to ``MAX_DAYS``), else ``ConfigError`` saying what to give."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DAYS:
        raise ConfigError(f"{where} must be a whole number of days from 1 to {MAX_DAYS}, not {value!r}; turn the "
                          "policy off with `memtools retention --off`")
    return value


def read_policy(memory_path: str | os.PathLike, config_file: str | os.PathLike | None = None) -> Policy:
    """The memory's policy: ``retention.json`` if it has one, else the config file's ``retention_days``."""
    path = Path(memory_path) / POLICY_FILE
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raw = None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the retention policy {path} ({exc}); set it again with `memtools retention "
                          f"--memory {memory_path} --keep-days N` (or --off)") from exc
    if raw is not None:
        if not isinstance(raw, dict) or "keep_days" not in raw:
            raise ConfigError(f"{path} must hold {{\"keep_days\": N}} (or null); set it again with `memtools "
                              f"retention --memory {memory_path} --keep-days N` (or --off)")
        days = raw["keep_days"]
        return Policy(None if days is None else checked_days(days, f"keep_days in {path}"), str(path))
    if config_file is not None:
        from memtools.config_file import load_config_file

        value = load_config_file(config_file, table=None).get(CONFIG_KEY)
        if value is not None:
            return Policy(checked_days(value, f"{CONFIG_KEY} in {config_file}"), str(config_file))
    return Policy(None, "none set")


def set_policy(memory_path: str | os.PathLike, keep_days: int | None) -> Policy:
    """Store the memory's policy (None: off, whatever a config file says); written whole (temp file + rename)."""
    if keep_days is not None:
        checked_days(keep_days, "--keep-days")
    path = Path(memory_path) / POLICY_FILE
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(json.dumps({"keep_days": keep_days}) + "\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
    return Policy(keep_days, str(path))


@dataclass(frozen=True)
class Due:
    """A video the policy purges: its id, title and the time its age runs from."""

    video_id: str
    title: str
    since: datetime
    recorded: bool  # ``since`` is the recording start (else when the video was added)

    def line(self) -> str:
        what = "recorded" if self.recorded else "added (no recording time)"
        return f"{self.video_id}  {what} {self.since.isoformat(timespec='seconds')}" + \
            (f"  \"{self.title}\"" if self.title else "")


def due(memory: Memory, keep_days: int, now: datetime | None = None) -> list[Due]:
    """The videos recorded (or, without a recording time, added) more than ``keep_days`` days before ``now``,
    oldest first."""
    cutoff = (now or datetime.now(timezone.utc)) - timedelta(days=checked_days(keep_days, "keep_days"))
    memory.refresh()
    starts = memory.recorded_starts()
    out = []
    for vid, entry in memory.manifest.videos.items():
        since = starts.get(vid)
        recorded = since is not None
        if since is None:
            since = _instant(entry.updated_at)
        if since is not None and since < cutoff:
            out.append(Due(vid, entry.title, since, recorded))
    return sorted(out, key=lambda d: (d.since, d.video_id))


def _instant(text: str) -> datetime | None:
    try:
        when = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


@dataclass
class Outcome:
    """What one application of the policy did."""

    policy: Policy
    due: list[Due] = field(default_factory=list)
    receipt: dict[str, Any] | None = None
    reads_dropped: int = 0

    def render(self) -> str:
        if self.policy.keep_days is None:
            return self.policy.line()
        lines = [self.policy.line()]
        if self.receipt is None:
            lines.append("No video is older than that: nothing purged.")
        else:
            lines.append(f"Purged {len(self.due)} video(s) in change {self.receipt['change_id']}:")
            lines += [f"  {d.line()}" for d in self.due]
            lines.append(json.dumps(self.receipt, indent=1, ensure_ascii=True))
        if self.reads_dropped:
            lines.append(f"Dropped {self.reads_dropped} line(s) older than {self.policy.keep_days} day(s) from "
                         f"{READS_FILE}.")
        return "\n".join(lines)


def apply(memory: Memory, policy: Policy | None = None, *, now: datetime | None = None,
          config_file: str | os.PathLike | None = None) -> Outcome:
    """Purge every video the policy (default: the memory's, ``read_policy``) makes due, in one purge, and prune
    the reads audit log; under the writers' lock, so what is due is what is purged."""
    from memtools.changes.purge import purge_videos

    policy = policy or read_policy(memory.path, config_file)
    outcome = Outcome(policy)
    if policy.keep_days is None:
        return outcome
    with memory.writes_paused():
        outcome.due = due(memory, policy.keep_days, now)
        if outcome.due:
            outcome.receipt = purge_videos(memory, [d.video_id for d in outcome.due], reason="retention")
        cutoff = (now or datetime.now(timezone.utc)) - timedelta(days=policy.keep_days)
        outcome.reads_dropped = prune_reads(memory.path, cutoff)
    return outcome


def prune_reads(memory_path: str | os.PathLike, cutoff: datetime, *, dry_run: bool = False) -> int:
    """Drop the lines of ``reads.jsonl`` recorded before ``cutoff``; how many went (``dry_run``: would go, and
    nothing changes). A line whose time cannot be read is kept. Lines a server appends meanwhile are kept: they
    are copied over after the rename too."""
    path = Path(memory_path) / READS_FILE
    try:
        handle = open(path, "rb")  # noqa: SIM115 - read to its end again after the rename
    except FileNotFoundError:
        return 0
    with handle:
        kept, dropped = [], 0
        for raw in handle:
            if raw.endswith(b"\n") and _older(raw, cutoff):
                dropped += 1
            else:
                kept.append(raw)
        if not dropped or dry_run:
            return dropped
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as out:
            out.writelines(kept)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
        late = handle.read()  # appended between the last read and the rename (writers append whole lines)
    if late:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, late)
        finally:
            os.close(fd)
    return dropped


def _older(raw: bytes, cutoff: datetime) -> bool:
    try:
        record = json.loads(raw)
        when = _instant(record["at"]) if isinstance(record, dict) else None
    except (ValueError, KeyError, TypeError):
        return False
    return when is not None and when < cutoff


__all__ = ["CONFIG_KEY", "POLICY_FILE", "Due", "Outcome", "Policy", "apply", "due", "prune_reads", "read_policy",
           "set_policy"]
