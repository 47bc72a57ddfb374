"""Forgetting for good: a purge removes videos from every file of the memory folder, and keeps a receipt.

``forget_video`` is undoable, so it keeps what an undo needs (the video's graph in the change log, its
keyframes, voices, faces and checkpoints under ``changes/<id>/``) and the engines keep the deleted rows'
bytes until they reuse the space. A purge keeps nothing: after it, no caption or transcript of the video and
none of its vectors is in any file under the memory folder (tests/test_purge_bytes.py reads every byte).

    from memtools.changes.purge import purge_videos, receipts

    receipt = purge_videos(memory, ["thu_kitchen"])          # or forget_video(memory, "thu_kitchen", purge=True)
    receipt["files"], receipt["rows"], receipt["versions"]    # what went: files, rows per table, lance versions

A purge is one change in the change log (action ``purge``, recorded ``pending`` with its plan, ids and counts
only, before anything is removed; then ``done``); killed at any instant, the next writer finishes it
(``memtools.changes.purge_steps``, which lists the steps). The change log keeps a row saying what was purged,
when and by whom; the rows about the video keep their id, action, time and author, and lose their copy of the
video and their summary ("purged in c0012"). An undo of any of them says the video was purged.

The receipt (JSON) is returned and stored at ``purges/<change id>.json``::

    {"change_id": "c0012", "reason": "purge", "at": "2026-12-05T05:00:00+00:00", "who": "...", "front_end": "cli",
     "videos": ["thu_kitchen"], "files": ["frames/thu_kitchen/0001.jpg", ...],
     "rows": {"graph:Entity": 12, "lance:nodes": 40, "library.sqlite:clusters": 2, ...},
     "versions": {"lance:nodes": 7, ...}, "log_rows_redacted": 3, "bucket": null}

``bucket`` is filled later by ``memtools publish`` (``update_receipt``). ``reason`` is "purge" (``forget
--purge``), "retention" (the retention policy) or "forget_person" (``forget-person --purge``: no video, the
person's clusters in ``clusters``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtools.changes.apply import settle_pending
from memtools.changes.log import ChangeLog
from memtools.changes.purge_steps import (
    PURGE,
    PURGES_DIR,
    carry_out,
    plan_of,
    purged_in,
    receipt_path,
    write_receipt,
)
from memtools.errors import ToolError, ToolNotFound
from memtools.schema import video_id_problem
from memtools.store.faults import fault_point
from memtools.tools.caller import require_write

if TYPE_CHECKING:
    from memtools.store import Memory

REASONS = ("purge", "retention", "forget_person")


def _checked(memory: Memory, log: ChangeLog, video_ids: list[str]) -> list[str]:
    """The ids, each once; one that is not a video id, or names nothing the memory holds, is refused."""
    ids = list(dict.fromkeys(v.strip() for v in video_ids))
    for vid in ids:
        problem = video_id_problem(vid)
        if problem is not None:
            raise ToolError(f"video id {vid!r} {problem}; list_videos gives the ids")
    memory.refresh()
    for vid in ids:
        if vid in memory.manifest.videos or log.ids_about([vid], skip_action=PURGE):
            continue
        done = purged_in(log, vid)
        if done:
            raise ToolError(f"video {vid!r} was purged already, in {done}; nothing of it is left")
        raise ToolNotFound(f"no video {vid!r} in this memory, and no forgotten one in its change log; list_videos "
                           "gives the ids")
    return ids


def purge_videos(memory: Memory, video_ids: list[str], *, reason: str = PURGE,
                 clusters: list[list[str]] | None = None) -> dict[str, Any]:
    """Remove these videos (in the memory, or forgotten with only the change log's copies left) from every file
    of the memory folder; returns the receipt (module docstring). ``reason``: "purge", "retention" or
    "forget_person" (``clusters``: the forgotten person's, for the receipt; ``video_ids`` may then be empty)."""
    if reason not in REASONS:
        raise ValueError(f"reason must be one of {', '.join(REASONS)}, not {reason!r}")
    caller = require_write()
    log = ChangeLog(memory.path)
    with memory.writes_paused():
        memory.finish_recovery()
        settle_pending(memory, log)  # a purge a kill left pending is finished there
        ids = _checked(memory, log, video_ids)
        if not ids and reason != "forget_person":
            raise ToolError("no video to purge; give a video id (list_videos gives them)")
        plan = plan_of(memory, log, ids, reason)
        if clusters is not None:
            plan["clusters"] = [list(c) for c in clusters]
        what = ", ".join(ids) if ids else f"{len(clusters or [])} forgotten voice/face cluster(s)"
        cid = log.begin(front_end=caller.front_end, who=caller.who, action=PURGE, summary=f"purged {what} ({reason})",
                        video_id=ids[0] if ids else "", before=json.dumps({PURGE: plan}), after_digest=None)
        fault_point("purge-recorded")
        receipt = carry_out(memory, log, cid, plan)
        log.settle(cid, True)
    return receipt


def receipts(memory_path: str | os.PathLike) -> list[dict[str, Any]]:
    """The stored receipts of a memory's purges, oldest first."""
    out = []
    for path in sorted(Path(memory_path, PURGES_DIR).glob("c*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            out.append(data)
    return sorted(out, key=lambda r: (len(str(r.get("change_id", ""))), str(r.get("change_id", ""))))


def update_receipt(memory_path: str | os.PathLike, change_id: str, **fields: Any) -> None:
    """Set fields of a stored receipt (``memtools publish`` fills ``bucket``), written whole again."""
    path = receipt_path(Path(memory_path), change_id)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        known = ", ".join(str(r.get("change_id")) for r in receipts(memory_path)) or "none"
        raise ToolNotFound(f"no purge receipt {change_id!r} in {memory_path} (receipts: {known})") from None
    data.update(fields)
    write_receipt(Path(memory_path), data)


__all__ = ["REASONS", "purge_videos", "receipts", "update_receipt"]
