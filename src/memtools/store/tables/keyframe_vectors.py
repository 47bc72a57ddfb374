"""Keyframe vectors for a write: read the stored JPEGs of the videos being written, embed them
with the memory's image embedder, and hand ``Memory._write_batch`` the rows for the lance
``keyframes`` table (written in the same atomic step as the graph and the ``nodes`` table).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtools.errors import StoreError
from memtools.schema import Keyframe, VideoGraph
from memtools.store.catalog.manifest import EmbedderInfo, Manifest
from memtools.store.tables.keyframe_index import KeyframeIndex

if TYPE_CHECKING:
    from memtools.embed.images import ImageEmbedder
    from memtools.store.catalog.parts import MemoryParts

log = logging.getLogger(__name__)

EMBED_CHUNK = 64  # images decoded and embedded at a time: bounds the memory a long video needs


@dataclass
class FrameBatch:
    """The keyframe rows of one write (empty when the memory has no image embedder)."""

    info: EmbedderInfo | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)
    per_video: dict[str, int] = field(default_factory=dict)

    def record(self, manifest: Manifest) -> None:
        """Name the image embedder in the manifest (the first write with one turns visual search on)."""
        if self.info is not None and manifest.image_embedder is None:
            manifest.image_embedder = self.info


def embed_keyframes(root: Path, keyframes: Sequence[Keyframe], embedder: ImageEmbedder) -> list[dict[str, Any]]:
    """Rows (id, video_id, t, path, macro_id, vector) of the keyframes whose image file exists."""
    present = [k for k in keyframes if (root / k.path).is_file()]
    if len(present) < len(keyframes):
        log.warning("%d keyframe image(s) are missing and get no vector, e.g. %s", len(keyframes) - len(present),
                    next(k.path for k in keyframes if k not in present))
    rows: list[dict[str, Any]] = []
    for start in range(0, len(present), EMBED_CHUNK):
        chunk = present[start:start + EMBED_CHUNK]
        try:
            images = [(root / k.path).read_bytes() for k in chunk]
        except OSError as exc:
            raise StoreError(f"could not read keyframe images: {exc}") from exc
        vectors = embedder.embed_images(images)
        rows += [{"id": k.id, "video_id": k.video_id, "t": k.t, "path": k.path, "macro_id": k.macro_id or "",
                  "vector": v} for k, v in zip(chunk, vectors, strict=True)]
    return rows


def frame_rows(root: Path, graphs: Sequence[VideoGraph], embedder: ImageEmbedder | None,
               staged: Mapping[str, Path] | None = None) -> FrameBatch:
    """The keyframe rows of ``graphs`` (nothing without an image embedder). ``staged``: video id
    -> the folder its keyframe paths are relative to until the write (``memtools.store.writes.frame_swap``)."""
    if embedder is None:
        return FrameBatch()
    staged = staged or {}
    rows = embed_keyframes(Path(root), [k for g in graphs if g.video_id not in staged for k in g.keyframes], embedder)
    for g in graphs:
        if g.video_id in staged:
            rows += embed_keyframes(Path(staged[g.video_id]), g.keyframes, embedder)
    counts = Counter(row["video_id"] for row in rows)
    return FrameBatch(EmbedderInfo(name=embedder.name, dim=embedder.dim), rows,
                      {g.video_id: counts.get(g.video_id, 0) for g in graphs})


def table_for_write(memory: MemoryParts, frames: FrameBatch) -> KeyframeIndex | None:
    """The ``keyframes`` table this write changes (created on the first write with an image embedder)."""
    if frames.info is None:
        return memory.keyframes
    memory.manifest.check_image_embedder(memory.path, frames.info.name, frames.info.dim)
    table = memory.keyframes or KeyframeIndex(memory.vectors_unchecked, frames.info.dim)
    table.table(create=True)
    return table
