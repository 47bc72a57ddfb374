"""Deleting a person's voice and face vectors from their files (``forget_person``, ``memtools.changes.people``),
and finishing a deletion a kill interrupted: the change log's ``pending`` row names the clusters, and the
deletion is idempotent, so doing it again completes it (``finish_forgetting``, called as pending changes are
settled, ``memtools.changes.apply.settle_pending``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from memtools.changes.kept_video import kept_root
from memtools.changes.log import ChangeLog
from memtools.store.faults import fault_point
from memtools.store.library.layer import relink_people
from memtools.store.tables.faces import faces_path
from memtools.store.tables.per_video import write_whole
from memtools.store.tables.voices import voices_path

if TYPE_CHECKING:
    from memtools.store import Memory

FORGET = "forget_person"


def _drop(path: Path, key: str, labels: set[str]) -> None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    kept = [c for c in data.get(key, []) if c.get("label") not in labels]
    if len(kept) != len(data.get(key, [])):
        write_whole(path, {**data, key: kept})


def delete_vectors(memory: Memory, clusters: list[tuple[str, ...]]) -> None:
    """Delete these clusters' centroids from their files (idempotent: a second run finds nothing to do). A cluster
    ``(video, kind, label, change)`` is one a forgotten video left in change ``change``'s kept copy
    (``memtools.changes.kept_video``): its kept voices, faces and speaker checkpoint are reached the same way."""
    for where in sorted({(c[0], *c[3:]) for c in clusters}):
        video_id = where[0]
        root = kept_root(memory.path, where[1]) if len(where) > 1 else memory.path
        mine = [c for c in clusters if (c[0], *c[3:]) == where]
        voices = {c[2] for c in mine if c[1] == "voice"}
        faces = {c[2] for c in mine if c[1] == "face"}
        if voices:
            _drop(voices_path(root, video_id), "voices", voices)
            work = root / memory.work_dir(video_id).relative_to(memory.path)
            shutil.rmtree(work / "speakers", ignore_errors=True)  # the build's checkpoint
        if faces:
            _drop(faces_path(root, video_id), "faces", faces)
        fault_point("forget-person-video")
    relink_people(memory.path)


def finish_forgetting(memory: Memory, log: ChangeLog) -> None:
    """Finish the ``forget_person`` changes a killed process left pending (deleting again), then settle them."""
    for c in log.pending():
        if c.action == FORGET:
            delete_vectors(memory, [tuple(x) for x in (log.before(c.id) or {}).get(FORGET, [])])
            log.settle(c.id, True)


__all__ = ["FORGET", "delete_vectors", "finish_forgetting"]
