"""The fleet's single writer: group commit of finished videos.

Each write of a memory has a fixed cost whatever it holds (kuzu's COMMIT, the largest part;
the graph opened read-write and closed, the schema checked, one COPY per table, lance appends
and index folding, the journal, the manifest rewritten, the pre-write integrity check: ~0.5 s
of CPU on a 2-core EPYC, docs/scaling.md), and with the texts embedded in the workers that
fixed cost is most of what the writer spends on a video. So the driver hands
the writer every bundle that is ready when it is free, and the writer puts them in one
``Memory.write_videos`` batch: one journal, one graph transaction, one append per lance table,
one manifest write for the group.

A group is bounded (``GroupLimits``: videos, nodes, texts) so it stays one atomic batch of
``write_videos`` and its embedding cache is never dropped half way. A group that fails is
written again one video at a time: the good videos land, the one that cannot be written is
returned as failed (the driver marks it ``failed``). A bundle whose vectors were made by
another embedder is refused before the group is written.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memtools.builder.bundle import VideoBundle, stage_frames, write_bundle
from memtools.builder.bundle_vectors import writer_cache
from memtools.builder.checkpoint import Checkpoints
from memtools.errors import MemoryBusy
from memtools.store.writes.batch import BATCH_NODES, EMBED_CACHE_TEXTS

if TYPE_CHECKING:
    from pathlib import Path

    from memtools.store import Memory

log = logging.getLogger(__name__)

GROUP_VIDEOS = 16  # videos per write at most: a reader sees them appear together


@dataclass(frozen=True)
class GroupLimits:
    """How much one write may hold: ``videos``, graph ``nodes`` (below ``write_videos``'s own
    batch bound, so the group is one atomic batch) and worker-made ``texts`` (below the size at
    which ``write_videos`` clears its embedding cache)."""

    videos: int = GROUP_VIDEOS
    nodes: int = BATCH_NODES - 1
    texts: int = EMBED_CACHE_TEXTS


def bundle_nodes(bundle: VideoBundle) -> int:
    """The nodes ``write_videos`` counts toward its batch bound."""
    g = bundle.graph
    return 0 if g is None else len(g.entities) + len(g.events) + len(g.ocr) + len(g.macros)


def bundle_texts(bundle: VideoBundle) -> int:
    return 0 if bundle.vectors is None else len(bundle.vectors.vectors)


def group_size(ready: Sequence[VideoBundle], limits: GroupLimits) -> int:
    """How many of the first ``ready`` bundles fit one write (at least one when there are any)."""
    count = nodes = texts = 0
    for bundle in ready:
        nodes += bundle_nodes(bundle)
        texts += bundle_texts(bundle)
        if count and (count >= limits.videos or nodes > limits.nodes or texts > limits.texts):
            break
        count += 1
    return count


def group_full(ready: Sequence[VideoBundle], limits: GroupLimits) -> bool:
    """The ready bundles fill a write: waiting for more would not make it bigger."""
    size = group_size(ready, limits)
    return size >= limits.videos or 0 < size < len(ready)


def write_group(memory: Memory, bundles: Sequence[VideoBundle]) -> dict[str, str]:
    """Write finished bundles, together when there are several; returns the videos that could
    not be written (video id -> why, one line). ``MemoryBusy`` (another process holds the memory)
    is raised: it is not about one video."""
    failed: dict[str, str] = {}
    checked: list[tuple[VideoBundle, dict[str, object] | None]] = []
    for bundle in bundles:
        if bundle.graph is None:
            continue
        try:
            cache = None if bundle.vectors is None else writer_cache(memory, bundle.vectors, bundle.report.video_id)
        except Exception as exc:
            failed[bundle.report.video_id] = one_line(exc)
        else:
            checked.append((bundle, cache))
    if len(checked) > 1:
        try:
            _write_together(memory, checked)
            return failed
        except MemoryBusy:
            raise
        except Exception as exc:  # written again one by one: the good videos land
            log.info("a group write of %d videos failed (%s); writing them one at a time",
                     len(checked), one_line(exc))
    for bundle, _ in checked:
        try:
            write_bundle(memory, bundle)
        except MemoryBusy:
            raise
        except Exception as exc:
            failed[bundle.report.video_id] = one_line(exc)
    return failed


def _write_together(memory: Memory, checked: Sequence[tuple[VideoBundle, dict[str, object] | None]]) -> None:
    """``write_bundle`` for several bundles in one ``write_videos`` batch: keyframe files staged, then
    graph + tables + frames swapped in (one atomic step), then each video's ``done`` checkpoint."""
    cache: dict[str, object] = {}
    staged: dict[str, Path] = {}
    for bundle, vectors in checked:
        cache.update(vectors or {})
        staged[bundle.report.video_id] = stage_frames(memory, bundle)
    graphs = [bundle.graph for bundle, _ in checked if bundle.graph is not None]
    memory.write_videos(graphs, batch_size=len(graphs), embed_cache=cache, staged_frames=staged)
    for bundle, _ in checked:
        checkpoints = Checkpoints(memory.work_dir(bundle.report.video_id))
        checkpoints.save("report", bundle.report.model_dump(mode="json"))
        checkpoints.save("done", bundle.state)


def one_line(exc: BaseException) -> str:
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return f"{type(exc).__name__}: {text[:300]}"
