"""``repair``: rebuild what ``integrity.check`` found broken, where the other parts hold it.

What can be derived, and from what:

* lance rows and vectors come from the graph: each video is read back from kuzu as a
  ``VideoGraph`` and the lance part of a write runs again (``index_rows`` + the embedder);
  the indexes are rebuilt with them;
* a video the graph holds but the manifest lost (a write killed after the graph committed)
  goes back into the manifest, counted from the graph; wrong counts are recounted;
* leftovers of interrupted writes (temp manifests, ``.write-intent``) and frames of videos
  the manifest does not list are removed.

What cannot: a lost graph (or a video missing from it). The report says how to get it back
(rerun ``memtools build`` when ``work/`` checkpoints exist, else import it again). With
``forget_lost=True`` (``memtools repair --forget-lost``) such videos are marked ``lost`` in the
manifest and their vector rows dropped (a lost graph is started afresh), so the rest of the
memory works and the lost videos can be imported again.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from memtools.store import integrity
from memtools.store.entities import entity_rows
from memtools.store.keyframe_check import repair_keyframes
from memtools.store.manifest import VideoEntry, now, read_manifest, write_manifest
from memtools.store.navigation_check import repair_navigation
from memtools.store.payload import index_rows

if TYPE_CHECKING:
    from memtools.store.base import GraphStore
    from memtools.store.memory import Memory

log = logging.getLogger(__name__)

VIDEOS_PER_WRITE = 50
LOST = "lost"


@dataclass
class RepairResult:
    done: list[str] = field(default_factory=list)
    after: integrity.Report | None = None

    @property
    def ok(self) -> bool:
        return self.after is not None and self.after.ok

    def render(self) -> str:
        lines = [f"Repaired: {d}" for d in self.done] or ["Nothing to repair."]
        if self.after is not None and not self.after.ok:
            lines.append("Still damaged (cannot be rebuilt from the other parts):")
            lines += [f"  - [{p.part}] {p.text}: {p.restore or 'see memtools check'}" for p in self.after.problems]
        elif self.after is not None:
            lines.append("OK: the manifest, the graph and the vectors agree.")
        return "\n".join(lines)


def repair(memory: Memory, progress: Callable[[str], None] | None = None, *,
           forget_lost: bool = False) -> RepairResult:
    """Fix every derivable problem ``check`` reports; returns what was done and what is left."""
    say = progress or (lambda _: None)
    before = integrity.check(memory)
    result = RepairResult()
    if before.ok:
        result.after = before
        return result
    path = memory.path
    manifest = read_manifest(path)
    ready = [v for v, e in manifest.videos.items() if e.status == "ready"]
    graph_file = integrity.graph_file_name(manifest)
    if (path / graph_file).is_file() or not ready or forget_lost:
        if not (path / graph_file).is_file():
            result.done.append(f"started an empty {graph_file}")
        with memory._writing(guard=False) as kuzu:
            kuzu.ensure_schema()
            _repair_graph_and_vectors(memory, kuzu, before, result, say, forget_lost)
            repair_keyframes(memory, kuzu, before.problems, result.done, say)
            repair_navigation(memory, kuzu, before.problems, result.done, say)
    _remove_leftovers(memory, result)
    memory.refresh()
    result.after = integrity.check(memory)
    return result


def _repair_graph_and_vectors(memory: Memory, kuzu: GraphStore, before: integrity.Report, result: RepairResult,
                              say: Callable[[str], None], forget_lost: bool) -> None:
    path = memory.path
    manifest = read_manifest(path)
    in_graph = set(kuzu.video_ids())
    counts = kuzu.counts_by_video()
    for vid in sorted(in_graph - set(manifest.videos)):
        video = kuzu.get(vid)
        manifest.videos[vid] = VideoEntry(title=getattr(video, "title", ""), duration=getattr(video, "duration", 0.0),
                                          status="ready", updated_at=now())
        result.done.append(f"added video {vid!r} (found in the graph) back to the manifest")
    lost = []
    for vid, entry in manifest.videos.items():
        if entry.status != "ready" or (vid not in in_graph and not forget_lost):
            continue
        if vid not in in_graph:
            entry.status = LOST
            lost.append(vid)
            result.done.append(f"marked video {vid!r} as lost (the graph does not hold it; import it again)")
            continue
        have = {k: counts.get(vid, {}).get(k, 0) for k in (*integrity.SEARCHABLE, "keyframe", "edges")}
        if entry.counts != have:
            if entry.counts:
                result.done.append(f"recounted video {vid!r} from the graph")
            entry.counts = have
    ready = sorted(v for v, e in manifest.videos.items() if e.status == "ready" and v in in_graph)
    vector_damage = [p for p in before.problems if p.part == "vectors"]
    vector_damage += [integrity.Problem("vectors", "lost", True, vid) for vid in lost]
    if vector_damage:
        _rebuild_vectors(memory, kuzu, ready, vector_damage, result, say)
    manifest.generation += 1
    write_manifest(path, manifest)
    memory.manifest = manifest


def _rebuild_vectors(memory: Memory, kuzu: GraphStore, ready: list[str], damage: list[integrity.Problem],
                     result: RepairResult, say: Callable[[str], None]) -> None:
    index = memory.vectors_unchecked
    whole = any(p.video_id == "" for p in damage)  # missing, unreadable, wrong dimension, duplicates, no index
    if whole:
        try:
            index.restore(None)  # drop the table
        except Exception:  # a damaged table may not even drop: remove its folder
            if not index.remote:
                shutil.rmtree(Path(index.path) / integrity.NODES_TABLE, ignore_errors=True)
        index._nodes = None
        todo, stale = ready, []
    else:
        todo = sorted({p.video_id for p in damage if p.video_id in ready})
        stale = sorted({p.video_id for p in damage if p.video_id not in ready})
    if stale:
        index.replace_videos(stale, [])
        result.done.append(f"removed the vector rows of {len(stale)} video(s) the memory does not hold")
    rows_written = 0
    for start in range(0, len(todo), VIDEOS_PER_WRITE):
        chunk = todo[start:start + VIDEOS_PER_WRITE]
        graphs = [g for g in (kuzu.video_graph(v) for v in chunk) if g is not None]
        rows = index_rows(graphs)
        vectors: dict[str, object] = {}
        memory._embed_rows(rows, vectors)
        profiles = entity_rows(graphs, {r["id"]: r["vector"] for r in rows if r["kind"] == "entity"})
        memory._embed_rows(profiles, vectors)
        index.replace_videos(chunk, rows)
        memory.entities.replace_videos(chunk, profiles)  # derived from the same graph, so rebuilt with it
        rows_written += len(rows)
        say(f"vectors: {start + len(chunk)}/{len(todo)} video(s)")
    index.finish_write()
    memory.entities.finish_write()
    if todo:
        result.done.append(f"rebuilt {rows_written} vector row(s) of {len(todo)} video(s) from the graph")
    elif whole:
        result.done.append("rebuilt the vector table and its indexes")


def _remove_leftovers(memory: Memory, result: RepairResult) -> None:
    path = memory.path
    for temp in path.glob(integrity.TEMP_GLOB):
        with contextlib.suppress(OSError):
            temp.unlink()
            result.done.append(f"removed {temp.name}, left by an interrupted write")
    if (path / integrity.INTENT_FILE).exists() and integrity.clear_stale_intent(path):
        result.done.append(f"removed {integrity.INTENT_FILE}, left by an interrupted write")
    frames = path / "frames"
    known = set(read_manifest(path).videos)
    for folder in sorted(frames.iterdir()) if frames.is_dir() else []:
        if folder.is_dir() and folder.name not in known:
            shutil.rmtree(folder, ignore_errors=True)
            result.done.append(f"removed frames/{folder.name} (a video the manifest does not list)")
