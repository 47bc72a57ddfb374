"""Why a video's build failed, and what to do about it.

A build that fails leaves its video in the manifest with status ``failed`` (readers refuse it)
and writes ``work/<video_id>/failure.json`` beside its checkpoints: the error's first line and
the source it was building. ``memtools info``, every tool that meets the video and ``memtools
check`` (``failed_videos``) then say why, and the command that resumes the build. A failure of a
build that recorded nothing (an older memtools; a fleet worker elsewhere) still names the command.
"""

from __future__ import annotations

import contextlib
import json
import shlex
from dataclasses import dataclass
from pathlib import Path

from memtools.store.catalog.manifest import Manifest, now

FAILURE_FILE = "failure.json"
REASON_CHARS = 400


@dataclass(frozen=True)
class BuildFailure:
    """The failed build of one video: ``reason`` (the error's first line) and ``source`` (the file,
    folder or stream it was building), each None when the build did not record it."""

    video_id: str
    reason: str | None = None
    source: str | None = None
    follow: bool = False  # a live build (``memtools build --follow``)

    def command(self, memory: Path | str) -> str:
        """The command that builds the video again (resuming from the steps already done)."""
        source = shlex.quote(self.source) if self.source else "SOURCE"
        follow = "--follow " if self.follow else ""
        return (f"memtools build {follow}{source} --memory {shlex.quote(str(memory))} "
                f"--video-id {shlex.quote(self.video_id)}")

    def advice(self, memory: Path | str) -> str:
        """One line: why the build failed, and what to run."""
        why = f"its build failed: {self.reason.rstrip(' .')}" if self.reason else "its build failed"
        return f"{why}. Fix that, then run `{self.command(memory)}`: it resumes from the steps already done"


def record_failure(work_dir: Path, exc: BaseException, source: str | Path, *, follow: bool = False) -> None:
    """Write why the build failed into the video's work folder (never raises: the build's own
    error is what the caller reports)."""
    reason = "interrupted" if isinstance(exc, KeyboardInterrupt) else _first_line(exc)
    data = {"reason": reason, "source": str(source), "follow": follow, "at": now()}
    with contextlib.suppress(OSError):
        work_dir.mkdir(parents=True, exist_ok=True)
        (work_dir / FAILURE_FILE).write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")


def _first_line(exc: BaseException) -> str:
    line = (str(exc).strip().splitlines() or [type(exc).__name__])[0].strip()
    return line if len(line) <= REASON_CHARS else line[:REASON_CHARS - 1].rstrip() + "…"


def clear_failure(work_dir: Path) -> None:
    """Forget an earlier failure as a new build of the video starts."""
    with contextlib.suppress(OSError):
        (work_dir / FAILURE_FILE).unlink(missing_ok=True)


def build_failure(memory: Path, video_id: str) -> BuildFailure:
    """What the failed build of ``video_id`` recorded (only the id when nothing was recorded)."""
    try:
        data = json.loads((Path(memory) / "work" / video_id / FAILURE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return BuildFailure(video_id)
    if not isinstance(data, dict):
        return BuildFailure(video_id)
    reason, source = data.get("reason"), data.get("source")
    return BuildFailure(video_id, reason if isinstance(reason, str) and reason else None,
                        source if isinstance(source, str) and source else None, data.get("follow") is True)


def failed_videos(memory: Path, manifest: Manifest) -> list[BuildFailure]:
    """Every video whose last build failed, with why (for ``memtools check`` and ``memtools info``)."""
    return [build_failure(memory, vid) for vid, entry in sorted(manifest.videos.items()) if entry.status == "failed"]
