"""``memtools check`` / ``repair`` for the lance ``keyframes`` table (memories with an image embedder);
the image files themselves are ``frame_files``'.

Check: the table is readable, its vectors have the image embedder's dimension, each ready video has as
many rows as the manifest's ``keyframe_vectors``, no rows belong to videos the memory does not
hold, and its indexes have their files. Every such problem is repairable: the rows are embedded
again from the JPEGs in ``frames/`` (keyframes whose file is gone stay without a vector).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from memtools.store.catalog.manifest import Manifest, read_manifest, write_manifest
from memtools.store.integrity.frame_files import image_damage
from memtools.store.integrity.lance_check import index_problems, table_folder, vector_dim
from memtools.store.integrity.table_swap import AsideTable
from memtools.store.problems import Problem, Report, unreadable
from memtools.store.resources import raise_if_exhausted
from memtools.store.tables.keyframe_index import TABLE, KeyframeIndex, keyframes_schema
from memtools.store.tables.keyframe_vectors import embed_keyframes

if TYPE_CHECKING:
    from memtools.store.base import GraphStore
    from memtools.store.catalog.parts import MemoryParts

PART = "keyframes"
def check_keyframes(memory: MemoryParts, manifest: Manifest, ready: list[str], report: Report) -> None:
    info = manifest.image_embedder
    if info is None:
        report.parts[PART] = "no vectors (built without an image embedder; search_frames is off)"
        return
    table = KeyframeIndex(memory.vectors_unchecked, info.dim)
    try:
        lance = table.table()
        if lance is not None:
            rows = lance.search().select(["id", "video_id"]).limit(None).to_arrow()
            dim = vector_dim(lance)
            broken_indexes = index_problems(lance, TABLE, rows.num_rows, table_folder(memory.vectors_unchecked, TABLE))
        else:
            rows, dim, broken_indexes = None, info.dim, []
    except Exception as exc:  # lance raises many kinds on damaged files; its text goes to the debug log
        raise_if_exhausted(exc, "checking the keyframes table")
        report.parts[PART] = "UNREADABLE"
        text = unreadable("the keyframes table cannot be read (a data file is missing or damaged)", exc)
        report.problems.append(Problem(PART, text, True))
        return
    ids = rows.column("id").to_pylist() if rows is not None else []
    vids = rows.column("video_id").to_pylist() if rows is not None else []
    report.parts[PART] = f"{len(ids)} row(s), image embedder {info.name} (dim {info.dim})"
    if dim != info.dim:
        report.problems.append(Problem(PART, f"keyframe vectors have dimension {dim} but {info.name} makes "
                                       f"{info.dim}", True))
    report.problems += [Problem(PART, line, True, index_only=True) for line in broken_indexes]
    per_video = Counter(vids)
    for vid in sorted(set(per_video) - set(ready)):
        report.problems.append(Problem(PART, f"{per_video[vid]} keyframe row(s) of video {vid!r}, which is not a "
                                       "ready video of this memory", True, vid))
    listed = dict(manifest.videos.items("ready"))  # one read of the catalog
    for vid in ready:
        want = listed[vid].keyframe_vectors
        if per_video.get(vid, 0) != want:
            report.problems.append(Problem(PART, f"{vid}: {per_video.get(vid, 0)} keyframe row(s), the manifest "
                                           f"lists {want}", True, vid))


def repair_keyframes(memory: MemoryParts, kuzu: GraphStore, problems: list[Problem], done: list[str],
                     say: Callable[[str], None], swaps: list[AsideTable]) -> None:
    """Embed the keyframes of the damaged videos again: all of them into a table built aside, checked and
    swapped in when the table itself is damaged (``swaps`` collects it); else the videos' rows in place.
    Lost or corrupt images cannot be derived; their keyframes stay without a vector. Indexes: ``repair``."""
    damage = [p for p in problems if p.part == PART and not p.index_only]
    manifest = read_manifest(memory.path)
    if not damage or manifest.image_embedder is None:
        return
    embedder = memory.image_embedder
    if embedder is None:  # the manifest names one, so the memory loads it; kept for the type checker
        return
    lance = memory.vectors_unchecked
    table = KeyframeIndex(lance, manifest.image_embedder.dim)
    ready = manifest.videos.ids("ready")
    per_video: dict[str, int] = {}
    if any(p.video_id == "" for p in damage):  # lost, unreadable or the wrong width: a new table
        aside = AsideTable(lance._db, TABLE, keyframes_schema(embedder.dim), None if lance.remote else Path(lance.path))
        ids: list[str] = []
        try:
            for n, vid in enumerate(ready, 1):
                rows = embed_keyframes(memory.path, _decodable(memory.path, kuzu, vid), embedder)
                aside.add(rows)
                ids += [r["id"] for r in rows]
                per_video[vid] = len(rows)
                say(f"keyframes: {n}/{len(ready)} video(s)")
            aside.verify(ids, embedder.dim)
        except BaseException:
            aside.discard()
            raise
        aside.swap_in()
        swaps.append(aside)
        if getattr(memory.keyframes, "_table", None) is not None:
            memory.keyframes._table = None
        todo = ready
    else:
        todo = sorted({p.video_id for p in damage if p.video_id in ready})
        stale = sorted({p.video_id for p in damage if p.video_id not in ready})
        if stale:
            table.replace_videos(stale, [])
            done.append(f"removed the keyframe rows of {len(stale)} video(s) the memory does not hold")
        table.table(create=True)
        for n, vid in enumerate(todo, 1):
            rows = embed_keyframes(memory.path, _decodable(memory.path, kuzu, vid), embedder)
            table.replace_videos([vid], rows)
            per_video[vid] = len(rows)
            say(f"keyframes: {n}/{len(todo)} video(s)")
    listed = manifest.videos
    entries = {vid: listed[vid].model_copy(update={"keyframe_vectors": n}) for vid, n in per_video.items()}
    manifest.totals = manifest.catalog.edit(entries, (), manifest.generation + 1)
    manifest.generation += 1
    write_manifest(memory.path, manifest)
    memory.manifest = manifest
    if todo:
        done.append(f"embedded {sum(per_video.values())} keyframe(s) of {len(todo)} video(s) again from frames/")


def _decodable(root: Path, kuzu: GraphStore, video_id: str) -> list:
    """A video's keyframes whose image decodes (a lost or corrupt one gets no vector)."""
    return [k for k in kuzu.keyframes(video_id, 0.0, math.inf) if image_damage(root / k.path) is None]
