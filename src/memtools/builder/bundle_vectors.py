"""Embedding in the workers: a fleet build embeds each video's texts where the video was
perceived (a Ray task, or a thread beside the writer in process), so the single writer only
checks the vectors and stores them.

What a worker embeds is exactly what the writer would: the texts of ``index_rows`` (every
searchable node and the video's root) and, with their entity vectors, the canonical entity
profiles of ``entity_rows`` (and their names, which library linking compares by meaning), and the
library layer's activity texts. The bundle carries them
as ``text -> vector`` with the embedder's name and dimension; ``write_bundle`` refuses vectors
made by another embedder than the memory's, and hands the rest to the writer as its embedding
cache, where every text is then found (the writer embeds nothing). Keyframe image vectors are
still made by the writer.

A worker loads its embedder once per process, from the name the memory's manifest records
(``embedder_for_name``), so nothing heavy is pickled with each task.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from memtools.errors import StoreError
from memtools.store.library.layer import activity_texts
from memtools.store.tables.entities import entity_rows
from memtools.store.tables.payload import index_rows

if TYPE_CHECKING:
    from memtools.embed.base import Embedder
    from memtools.schema import VideoGraph
    from memtools.store.memory import Memory

EMBED_BATCH = 1024  # texts per embedder call in a worker

_loaded: dict[str, Embedder] = {}
_load_lock = threading.Lock()


@dataclass(frozen=True)
class WorkerEmbedder:
    """A picklable recipe for the embedder a worker uses: the name a manifest records, or a
    factory (in-process builds pass the memory's own embedder this way)."""

    name: str
    factory: Callable[[], Embedder] | None = None

    def load(self) -> Embedder:
        if self.factory is not None:
            return self.factory()
        with _load_lock:
            if self.name not in _loaded:
                from memtools.embed import embedder_for_name

                _loaded[self.name] = embedder_for_name(self.name)
            return _loaded[self.name]


@dataclass
class BundleVectors:
    """A video's text vectors, made in a worker."""

    embedder: str
    dim: int
    vectors: dict[str, np.ndarray]


def _embed_new(embedder: Embedder, texts: list[str], into: dict[str, np.ndarray]) -> None:
    unique = [t for t in dict.fromkeys(texts) if t not in into]
    for start in range(0, len(unique), EMBED_BATCH):
        chunk = unique[start:start + EMBED_BATCH]
        into.update(zip(chunk, np.asarray(embedder.embed_documents(chunk), dtype=np.float32), strict=True))


def video_vectors(graph: VideoGraph, embedder: Embedder) -> BundleVectors:
    """Every text the writer will embed for ``graph``, embedded with ``embedder``."""
    vectors: dict[str, np.ndarray] = {}
    rows = index_rows([graph])
    _embed_new(embedder, [row["text"] for row in rows], vectors)
    entities = {row["id"]: vectors[row["text"]] for row in rows if row["kind"] == "entity"}
    profiles = entity_rows([graph], entities)
    _embed_new(embedder, [row["text"] for row in profiles], vectors)
    _embed_new(embedder, activity_texts(graph), vectors)  # the library layer's new activities
    _embed_new(embedder, [row["name"] for row in profiles], vectors)  # names the layer's linker compares
    return BundleVectors(embedder.name, int(embedder.dim), vectors)


def writer_cache(memory: Memory, made: BundleVectors, video_id: str) -> dict[str, object]:
    """The writer's embedding cache from a worker's vectors, once they are checked to come from
    the memory's embedder (name and dimension)."""
    own = memory.embedder
    name, dim = own.name, int(own.dim)  # read once: a model's ``dim`` may read its config file
    if made.embedder != name or made.dim != dim:
        raise StoreError(f"video {video_id!r} was embedded by {made.embedder} (dim {made.dim}) in its worker, but "
                         f"the memory uses {name} (dim {dim}); build it again with the memory's embedder")
    for text, vector in made.vectors.items():
        if vector.shape != (dim,) or not np.isfinite(vector).all():
            raise StoreError(f"video {video_id!r}: a worker's vector for {text[:60]!r} is not a finite "
                             f"{dim}-dimensional vector; build the video again")
    return dict(made.vectors)
