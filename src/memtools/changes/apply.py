"""Making one change to one video, recorded and undoable, whole or not at all under ``kill -9``.

Every change (a note, a rename, a merge, a split, forgetting a video, an undo) is the same few steps,
all under the memory's writer lock (``memtools.lock``, held across them):

1. a write a killed process left is finished or undone (``Memory.finish_recovery``), and a change
   the log still calls ``pending`` is settled: it landed when the video now is what it was to become
   (its digest), else it is ``abandoned``;
2. the video is read whole (``VideoGraph``) and the edit computed from it: a refused edit (an
   unknown id, a note too long) raises ``ToolError`` before anything is written;
3. the log records the change as ``pending`` with the video's prior state and the digest of its new
   one (``memtools.changes.log``); for a forgotten video, its keyframe files are kept beside the log
   (``changes/<id>/frames/<video>/``, hard links where the file system allows), and its voices, faces and
   build checkpoints too (``memtools.changes.kept_video``; an undo puts them back);
4. the memory's own journaled write (``Memory.write_video`` / ``delete_video``: all-or-nothing across
   lance and the graph engine, docs/storage.md);
5. the log marks it ``done``; the ids the change made are kept in the ``IdLedger`` (never handed out again),
   and the result says which canonical ids moved, are new or are gone (``memtools.changes.ids``).

A kill before 4 commits leaves the old video and a pending row settled as ``abandoned``; after, the
new video and a row settled as ``done``. "The old video" is verified, not trusted: settling an abandoned change
compares the video with the log's copy of it and writes that copy back when they differ (a kill inside the graph
engine's checkpoint can lose the replaced version as well, and the store's rollback then removes the video).
An undo writes the prior state back as a new change that names the one it undoes, so an undo of an undo redoes,
and every step stays in the log.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memtools.changes.forgetting import FORGET, finish_forgetting
from memtools.changes.ids import NO_ID_CHANGES, IdChanges, entity_groups, id_changes
from memtools.changes.kept_video import (
    CHANGES_DIR,
    drop_kept,
    keep_video,
    kept_vectors,
    restore_vectors,
    unkeep_work,
)
from memtools.changes.log import Change, ChangeLog, change_seq
from memtools.changes.purge_steps import finish_purges, purged_in
from memtools.errors import MemoryBusy, ToolError, ToolNotFound
from memtools.schema import VideoGraph
from memtools.store.faults import fault_point
from memtools.store.tables.id_ledger import IdLedger
from memtools.tools.caller import require_write

if TYPE_CHECKING:
    from memtools.store import Memory

def digest(graph: VideoGraph | None) -> str | None:
    """A digest of a video's content that does not depend on the order the store returns it in."""
    if graph is None:
        return None
    data = graph.model_dump(mode="json")
    for key, value in data.items():
        if isinstance(value, list):
            data[key] = sorted(value, key=lambda item: json.dumps(item, sort_keys=True))
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def read_video(memory: Memory, video_id: str) -> VideoGraph | None:
    with memory.reading() as graph:
        return graph.video_graph(video_id)


@dataclass(frozen=True)
class Edit:
    """What a change does to its video: ``after`` (``None`` to forget it) and a one-line summary."""

    action: str
    video_id: str
    summary: str
    after: VideoGraph | None


@dataclass(frozen=True)
class Applied:
    """A change that landed: its id, what it did, the video afterwards (``None`` when forgotten) and what it did to
    the video's canonical entity ids (``ids``: the ones to use now); a purge's ``receipt``
    (``memtools.changes.purge``)."""

    change_id: str
    action: str
    summary: str
    video_id: str
    after: VideoGraph | None
    ids: IdChanges = NO_ID_CHANGES
    receipt: dict | None = None


def settle_pending(memory: Memory, log: ChangeLog) -> None:
    """Settle the changes a killed process left ``pending`` (the memory recovered already); a ``forget_person``
    is finished instead (``memtools.changes.people``: its deletion is done again), and so is a purge
    (``memtools.changes.purge_steps``: its steps are done again from its plan)."""
    finish_forgetting(memory, log)
    finish_purges(memory, log)
    for change in log.pending():
        now = read_video(memory, change.video_id)
        landed = digest(now) == change.after_digest
        if not landed:
            _put_back(memory, log.before(change.id), now)
        _settle_kept(memory, log, change, landed)
        log.settle(change.id, landed)


def _settle_kept(memory: Memory, log: ChangeLog, change: Change, landed: bool) -> None:
    """What a killed forget or undo of a forget left beside the log, put where the settled change says: a forget
    that did not land gets its checkpoints back (its kept copies go); an undo of a forget that landed drops the
    kept copies (the live ones are back), one that did not removes the vectors it had put back already."""
    if change.action == "forget" and not landed:
        unkeep_work(memory, change.video_id, change.id)
        shutil.rmtree(memory.path / CHANGES_DIR / change.id, ignore_errors=True)  # its keyframes' copies too
    elif change.undoes and log.before(change.id) is None:
        if landed:
            drop_kept(memory, change.video_id, change.undoes)
        else:
            for live in kept_vectors(memory, change.video_id, change.undoes):
                live.unlink(missing_ok=True)


def _put_back(memory: Memory, before: dict | None, now: VideoGraph | None) -> None:
    """A change that did not land leaves its video as it was before: the store's rollback cannot always
    (a kill inside the engine's checkpoint can drop the replaced version too; it then removes the video, which a
    resumed build writes again), so the log's copy of the video is written back, journaled like any write."""
    if before is None:  # the change made the video (an undo of a forget): the rollback removed what it wrote
        return
    prior = VideoGraph.model_validate(before)
    if digest(now) != digest(prior):
        memory.write_videos([prior])


def settle_if_left(memory: Memory) -> None:
    """Settle changes a killed process left pending, when this process may write and no writer is busy."""
    log = ChangeLog(memory.path)
    if not log.pending() or not os.access(memory.path, os.W_OK):
        return
    with contextlib.suppress(MemoryBusy), memory.writes_paused():
        memory.finish_recovery()
        settle_pending(memory, log)


def _keep_frames(memory: Memory, video_id: str, cid: str) -> None:
    """Keep a forgotten video's keyframe files for an undo: ``changes/<id>/frames/<video>/``."""
    source = memory.frames_dir(video_id)
    if not source.is_dir():
        return
    target = memory.path / CHANGES_DIR / cid / source.relative_to(memory.path)

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, target, copy_function=link, dirs_exist_ok=True)


def _staged_frames(memory: Memory, undone: str, video_id: str) -> dict[str, Path]:
    root = memory.path / CHANGES_DIR / undone
    return {video_id: root} if (root / memory.frames_dir(video_id).relative_to(memory.path)).is_dir() else {}


def _made_ids(groups: dict[str, list[str]], graph: VideoGraph | None) -> list[str]:
    """The ids a video holds that the ledger keeps: its canonical ids, and its user-made mentions and events."""
    if graph is None:
        return list(groups)
    carried = [e.grounding.entity_id for e in graph.entities if e.grounding.entity_id]
    return [*groups, *carried, *(e.id for e in graph.entities), *(e.id for e in graph.events)]


def _ids_after(memory: Memory, ledger: IdLedger, video_id: str, before: dict[str, list[str]], cid: str,
               written: bool) -> IdChanges:
    """What the change did to the video's canonical ids, kept in the ledger; none are reported for a video
    forgotten or brought back whole."""
    after = entity_groups(memory, video_id)
    ledger.issue(after)
    if not (before and written):
        ledger.save()
        return NO_ID_CHANGES
    changed = id_changes(before, after)
    ledger.move(changed.moved, cid)
    ledger.save()
    return changed


def change(memory: Memory, video_id: str, make: Callable[[VideoGraph | None], Edit], *,
           undoes: str | None = None) -> Applied:
    """Apply the edit ``make`` computes from the video's current state, as one recorded change (module docstring)."""
    caller = require_write()
    log = ChangeLog(memory.path)
    with memory.writes_paused():
        memory.finish_recovery()
        settle_pending(memory, log)
        before = read_video(memory, video_id)
        groups = entity_groups(memory, video_id) if before is not None else {}
        edit = make(before)
        if edit.after is None and before is None:
            raise ToolNotFound(f"no video {video_id!r} in this memory; list_videos gives the ids")
        if edit.after is not None:
            try:
                edit.after.check()
            except ValueError as exc:
                raise ToolError(f"this change would leave video {video_id!r} inconsistent: {exc}") from exc
        cid = log.begin(front_end=caller.front_end, who=caller.who, action=edit.action, summary=edit.summary,
                        video_id=video_id, before=before.model_dump_json() if before is not None else None,
                        after_digest=digest(edit.after), undoes=undoes)
        ledger = IdLedger(memory.path)
        ledger.issue([*_made_ids(groups, before), *_made_ids({}, edit.after)])
        ledger.save()
        fault_point("change-recorded")
        back = bool(undoes and before is None)  # an undo of a forget: the video comes back whole
        restored: list[Path] = []
        try:
            if edit.after is None:
                _keep_frames(memory, video_id, cid)
                keep_video(memory, video_id, cid)
                fault_point("forget-kept")
                memory.delete_video(video_id)
            else:
                staged = _staged_frames(memory, undoes, video_id) if back and undoes else {}
                restored = restore_vectors(memory, video_id, undoes) if back and undoes else []
                fault_point("undo-vectors-restored")
                memory.write_videos([edit.after], staged_frames=staged)
        except BaseException:
            with contextlib.suppress(Exception):  # the store undid its write at once: the row is abandoned
                if edit.after is None:
                    unkeep_work(memory, video_id, cid)
                for path in restored:
                    path.unlink(missing_ok=True)
                settle_pending(memory, log)
            raise
        fault_point("change-written")
        if back and undoes:
            drop_kept(memory, video_id, undoes)
        log.settle(cid, True)
        ids = _ids_after(memory, ledger, video_id, groups, cid, edit.after is not None)
    return Applied(cid, edit.action, edit.summary, video_id, edit.after, ids)


def undo(memory: Memory, target: str) -> Applied:
    """Write back the video as it was before change ``target`` (refused when it changed since)."""
    log = ChangeLog(memory.path)
    found = log.get(target)
    if found is None:
        recent = ", ".join(c.id for c in log.entries(5)) or "none yet"
        raise ToolNotFound(f"no change {target!r} in this memory's log (recent: {recent}); `memtools log` or "
                           "list_changes lists them")
    if found.state != "done":
        raise ToolError(f"change {found.id} did not land ({found.state}), so there is nothing to undo")
    purged = purged_in(log, found.video_id, found.id) if found.action != "purge" else found.id
    if purged:
        raise ToolError(f"video {found.video_id!r} was purged in {purged}, so change {found.id} cannot come back "
                        "(a purge keeps nothing to undo it with)")
    if found.action == FORGET:
        raise ToolError(f"change {found.id} deleted voice and face vectors for good (they are not kept, so they "
                        "cannot come back); rebuilding the video with --speakers computes its voices again")
    if found.undone_by:
        raise ToolError(f"change {found.id} was already undone by {found.undone_by}; undo {found.undone_by} to "
                        "redo it")
    prior = log.before(found.id)

    def make(current: VideoGraph | None) -> Edit:
        if digest(current) != found.after_digest:
            later = [c.id for c in log.entries(20, found.video_id) if c.state == "done"
                     and (change_seq(c.id) or 0) > (change_seq(found.id) or 0)]
            by = f" (by {', '.join(reversed(later))})" if later else " (by a build or import)"
            raise ToolError(f"video {found.video_id!r} changed after {found.id}{by}; undo the later changes "
                            "first, newest first")
        after = VideoGraph.model_validate(prior) if prior is not None else None
        if found.undoes:
            return Edit("redo", found.video_id, f"undid {found.id}, so {found.undoes} holds again", after)
        return Edit("undo", found.video_id, f"undid {found.id} ({found.action}: {found.summary})"[:300], after)

    return change(memory, found.video_id, make, undoes=found.id)


__all__ = ["CHANGES_DIR", "Applied", "Edit", "change", "digest", "read_video", "settle_if_left", "settle_pending",
           "undo"]
