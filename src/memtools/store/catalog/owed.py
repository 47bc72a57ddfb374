"""The videos a memory owes: those a recovery had to remove because the graph engine lost their
previous version and no kept copy could put it back (``memtools.store.writes.kept``).

``lost-videos.json`` names each with when, why and the command that writes it again; every later
open says so (``memtools check``, ``memtools log``, ``list_videos``) until a write lands that video
again (``settle``), so nothing goes without a word.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

LOST = "lost-videos.json"


def owed(path: Path) -> dict[str, dict[str, Any]]:
    """The videos a recovery removed because their old version could not be put back: video id ->
    ``{"since", "why", "command"}``. A file that cannot be read counts as naming none (and says so)."""
    try:
        data = json.loads((path / LOST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("%s cannot be read (%s): the videos it named are not shown", path / LOST, exc)
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(vid): info for vid, info in data.items() if isinstance(info, dict)}


def owe(path: Path, videos: Iterable[str], why: str, command: str | None) -> None:
    """Record videos a recovery removed, so every later open names them."""
    entries = owed(path)
    since = datetime.now(timezone.utc).isoformat(timespec="seconds")
    entries.update({vid: {"since": since, "why": why, "command": command} for vid in videos})
    _write(path, entries)


def settle(path: Path, videos: Iterable[str]) -> None:
    """Videos written again: no longer owed."""
    entries = owed(path)
    if not entries:
        return
    left = {vid: info for vid, info in entries.items() if vid not in set(videos)}
    if len(left) == len(entries):
        return
    if left:
        _write(path, left)
    else:
        with contextlib.suppress(FileNotFoundError):
            (path / LOST).unlink()


def notice(path: Path) -> str | None:
    """One paragraph naming the owed videos and what writes them again, or None."""
    entries = owed(path)
    if not entries:
        return None
    names = sorted(entries)
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    commands = sorted({info.get("command") or "" for info in entries.values()} - {""})
    again = (f"run {commands[0]}" if len(commands) == 1 else
             "run the command that wrote them again" + (f" ({'; '.join(commands)})" if commands else ""))
    return (f"{len(names)} video(s) were removed by the recovery of an interrupted write because the graph "
            f"engine lost their previous version: {shown}. To write them again, {again}.")


def _write(path: Path, entries: Mapping[str, Any]) -> None:
    target = path / LOST
    tmp = target.with_name(LOST + ".tmp")
    tmp.write_text(json.dumps(entries, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, target)
