"""What a forgotten video leaves beside the change log, for ``undo`` and for ``forget_person``.

Forgetting a video (change ``c0007``) keeps, under ``changes/c0007/`` (``CHANGES_DIR``), besides its keyframes:

- ``voices/<video>.json`` and ``faces/<video>.json``: its voice and face clusters (centroids), so an undo brings
  the video back whole, its voices and faces matched across the library again;
- ``people/<video>.json``: which library person each of its clusters was (``[[kind, label, person_id], ...]``;
  person ids are stable), so a later ``forget_person`` of that person reaches the kept copy too;
- ``work/<video>/``: the build's checkpoints (the speaker checkpoint holds the centroids), moved out of
  ``work/``, so nothing of the forgotten video is left there.

An undo of the forget puts the voices and faces back before the video is written (the library links them as it
is written), moves the checkpoints back unless a new build made ``work/<video>/`` meanwhile, and then removes the
kept copies: one copy of each vector, the live one.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from memtools.store.tables.faces import faces_path
from memtools.store.tables.per_video import per_video_file, write_whole
from memtools.store.tables.voices import voices_path

if TYPE_CHECKING:
    from memtools.store import Memory

CHANGES_DIR = "changes"
"""Under the memory folder: what forgotten videos leave for an undo, per change (``changes/<id>/...``)."""
PEOPLE = "people"


def kept_root(memory_path: Path, cid: str) -> Path:
    return Path(memory_path) / CHANGES_DIR / cid


def _vector_files(memory_path: Path, video_id: str) -> list[Path]:
    return [voices_path(memory_path, video_id), faces_path(memory_path, video_id)]


def _work(memory: Memory, root: Path, video_id: str) -> Path:
    return root / memory.work_dir(video_id).relative_to(memory.path)


def _people_of(memory_path: Path, video_id: str) -> list[list[str]]:
    """[kind, label, person] of the video's voice and face clusters, as the library layer holds them now."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{memory_path}/library.sqlite?mode=ro", uri=True)) as conn:
            rows = conn.execute("SELECT kind, label, person_id FROM clusters WHERE video_id = ? AND person_id IS "
                                "NOT NULL AND kind IN ('voice', 'face') ORDER BY kind, label", (video_id,)).fetchall()
    except sqlite3.Error:
        return []
    return [[str(k), str(label), str(p)] for k, label, p in rows]


def keep_video(memory: Memory, video_id: str, cid: str) -> None:
    """Before a video is forgotten: keep its vectors and who they are, and move its checkpoints aside."""
    root = kept_root(memory.path, cid)
    for live, kept in zip(_vector_files(memory.path, video_id), _vector_files(root, video_id), strict=True):
        if live.is_file():
            kept.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(live, kept)
    write_whole(per_video_file(root, PEOPLE, video_id), {"video_id": video_id,
                                                         "clusters": _people_of(memory.path, video_id)})
    work = memory.work_dir(video_id)
    if work.is_dir():
        _work(memory, root, video_id).parent.mkdir(parents=True, exist_ok=True)
        work.rename(_work(memory, root, video_id))


def unkeep_work(memory: Memory, video_id: str, cid: str) -> None:
    """The forget did not land: its checkpoints go back (the kept vectors are copies, and are removed)."""
    drop_kept(memory, video_id, cid)


def restore_vectors(memory: Memory, video_id: str, undone: str) -> list[Path]:
    """Before the undo of forget ``undone`` writes the video: its kept voices and faces, back in place."""
    put: list[Path] = []
    for live, kept in zip(_vector_files(memory.path, video_id), _vector_files(kept_root(memory.path, undone),
                                                                                video_id), strict=True):
        if kept.is_file():
            live.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(kept, live)
            put.append(live)
    return put


def kept_vectors(memory: Memory, video_id: str, undone: str) -> list[Path]:
    """The live vector files of ``video_id`` that forget ``undone`` keeps a copy of (an undo puts them back)."""
    root = kept_root(memory.path, undone)
    return [live for live, kept in zip(_vector_files(memory.path, video_id), _vector_files(root, video_id),
                                       strict=True) if kept.is_file()]


def drop_kept(memory: Memory, video_id: str, undone: str) -> None:
    """The video is back (or never went): checkpoints back to ``work/`` unless a build made it anew, copies gone."""
    root = kept_root(memory.path, undone)
    work = _work(memory, root, video_id)
    if work.is_dir():
        if memory.work_dir(video_id).exists():
            shutil.rmtree(work, ignore_errors=True)
        else:
            memory.work_dir(video_id).parent.mkdir(parents=True, exist_ok=True)
            work.rename(memory.work_dir(video_id))
    for kept in [*_vector_files(root, video_id), per_video_file(root, PEOPLE, video_id)]:
        kept.unlink(missing_ok=True)


def kept_clusters(memory_path: Path, person_ids: list[str] | None = None, video_id: str | None = None,
                  label: str | None = None) -> list[tuple[str, str, str, str]]:
    """(video, kind, label, change) of the clusters forgotten videos left in the change log's copies, of these
    persons (or of this video's cluster ``label``), whose vectors are still kept."""
    found: list[tuple[str, str, str, str]] = []
    for path in sorted(Path(memory_path, CHANGES_DIR).glob(f"*/{PEOPLE}/*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        vid, cid = str(data.get("video_id", "")), path.parent.parent.name
        for kind, lab, person in data.get("clusters", []):
            wanted = person in person_ids if person_ids is not None else (vid == video_id and lab == label)
            if wanted and has_kept(memory_path, (vid, kind, lab, cid)):
                found.append((vid, kind, lab, cid))
    return found


def has_kept(memory_path: Path, cluster: tuple[str, str, str, str]) -> bool:
    vid, kind, label, cid = cluster
    path = (voices_path if kind == "voice" else faces_path)(kept_root(memory_path, cid), vid)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return any(c.get("label") == label for c in data.get("voices" if kind == "voice" else "faces", []))


__all__ = ["CHANGES_DIR", "drop_kept", "has_kept", "keep_video", "kept_clusters", "kept_root", "kept_vectors",
           "restore_vectors", "unkeep_work"]
