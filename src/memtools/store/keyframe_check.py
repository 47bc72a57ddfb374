"""``memtools check`` / ``repair`` for the lance ``keyframes`` table (memories with an image embedder).

Check: the table is readable, its vectors have the image embedder's dimension, each ready
video has as many rows as the manifest's ``keyframe_vectors`` and only ids of its stored
keyframes, and no rows belong to videos the memory does not hold. Every such problem is
repairable: the rows are embedded again from the JPEGs in ``frames/`` (keyframes whose file
is gone stay without a vector; ``check`` reports those files separately).
"""

from __future__ import annotations

import math
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from memtools.store.keyframe_index import TABLE, KeyframeIndex
from memtools.store.keyframe_vectors import embed_keyframes
from memtools.store.manifest import Manifest, read_manifest, write_manifest
from memtools.store.problems import Problem, Report
from memtools.store.problems import first_line as _first_line

if TYPE_CHECKING:
    from memtools.store.base import GraphStore
    from memtools.store.memory import Memory

PART = "keyframes"


def check_keyframes(memory: Memory, manifest: Manifest, ready: list[str], report: Report) -> None:
    info = manifest.image_embedder
    if info is None:
        report.parts[PART] = "no vectors (built without an image embedder; search_frames is off)"
        return
    table = KeyframeIndex(memory.vectors_unchecked, info.dim)
    try:
        lance = table.table()
        if lance is not None:
            rows = lance.search().select(["id", "video_id", "vector"]).limit(None).to_arrow()
            dim = lance.schema.field("vector").type.list_size
        else:
            rows, dim = None, info.dim
    except Exception as exc:  # lance raises many kinds on damaged files
        report.parts[PART] = "UNREADABLE"
        report.problems.append(Problem(PART, f"the keyframes table cannot be read: {_first_line(exc)}", True))
        return
    ids = rows.column("id").to_pylist() if rows is not None else []
    vids = rows.column("video_id").to_pylist() if rows is not None else []
    report.parts[PART] = f"{len(ids)} row(s), image embedder {info.name} (dim {info.dim})"
    if dim != info.dim:
        report.problems.append(Problem(PART, f"keyframe vectors have dimension {dim} but {info.name} makes "
                                       f"{info.dim}", True))
    per_video = Counter(vids)
    for vid in sorted(set(per_video) - set(ready)):
        report.problems.append(Problem(PART, f"{per_video[vid]} keyframe row(s) of video {vid!r}, which is not a "
                                       "ready video of this memory", True, vid))
    for vid in ready:
        want = manifest.videos[vid].keyframe_vectors
        if per_video.get(vid, 0) != want:
            report.problems.append(Problem(PART, f"{vid}: {per_video.get(vid, 0)} keyframe row(s), the manifest "
                                           f"lists {want}", True, vid))


def repair_keyframes(memory: Memory, kuzu: GraphStore, problems: list[Problem], done: list[str],
                     say: Callable[[str], None]) -> None:
    """Embed the keyframes of the damaged videos again (all of them when the table itself is damaged)."""
    damage = [p for p in problems if p.part == PART]
    manifest = read_manifest(memory.path)
    if not damage or manifest.image_embedder is None:
        return
    embedder = memory.image_embedder
    if embedder is None:  # the manifest names one, so the memory loads it; kept for the type checker
        return
    table = KeyframeIndex(memory.vectors_unchecked, manifest.image_embedder.dim)
    ready = sorted(v for v, e in manifest.videos.items() if e.status == "ready")
    if any(p.video_id == "" for p in damage):  # unreadable or wrong dimension: start the table afresh
        try:
            table.restore(None)
        except Exception:
            shutil.rmtree(Path(memory.vectors_unchecked.path) / f"{TABLE}.lance", ignore_errors=True)
        table._table = None
        todo = ready
    else:
        todo = sorted({p.video_id for p in damage if p.video_id in ready})
        stale = sorted({p.video_id for p in damage if p.video_id not in ready})
        if stale:
            table.replace_videos(stale, [])
            done.append(f"removed the keyframe rows of {len(stale)} video(s) the memory does not hold")
    table.table(create=True)
    written = 0
    for n, vid in enumerate(todo, 1):
        rows = embed_keyframes(memory.path, kuzu.keyframes(vid, 0.0, math.inf), embedder)
        table.replace_videos([vid], rows)
        manifest.videos[vid].keyframe_vectors = len(rows)
        written += len(rows)
        say(f"keyframes: {n}/{len(todo)} video(s)")
    table.finish_write()
    manifest.generation += 1
    write_manifest(memory.path, manifest)
    memory.manifest = manifest
    if todo:
        done.append(f"embedded {written} keyframe(s) of {len(todo)} video(s) again from frames/")
