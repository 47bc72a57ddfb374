"""The texts a write embeds for a video, and their vectors as a memory already holds them.

What a write embeds (``memtools.store.writes.batch``) is what a fleet worker embeds for its writer
(``memtools.builder.bundle_vectors``): the retrieval payload of every searchable node and root
(``index_rows``), the canonical entity profiles (``entity_rows``, which group mentions by their
vectors), the library layer's activity cores and lemmas and the entity names it compares. An export
stores those texts' vectors; an import with the same embedder hands them to the writer as its
embedding cache, so it embeds nothing.

The vectors are read from where the source memory keeps them: the lance ``nodes`` and ``entities``
tables (each node's and canonical entity's row) and, when the library layer matches the memory,
its ``words`` (lemmas and names) and ``activities`` (core of each label) tables. Every embedder
gives unit vectors, so the layer's unit copies are the vectors the model gave.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from memtools.store.library import meaning
from memtools.store.library.layer import activity_texts
from memtools.store.library.reads import LibraryReads
from memtools.store.tables.entities import entity_rows
from memtools.store.tables.payload import index_rows

if TYPE_CHECKING:
    from memtools.schema import VideoGraph
    from memtools.store.memory import Memory

VectorOf = Callable[[str], "np.ndarray | None"]


def video_texts(graph: VideoGraph, vector_of: VectorOf) -> list[str]:
    """Every distinct text a write of ``graph`` embeds, in a stable order. ``vector_of`` gives the known
    vector of a text (or None): the entity profiles depend on the entity mentions' vectors."""
    rows = index_rows([graph])
    texts = [row["text"] for row in rows]
    entity_vectors = {}
    for row in rows:
        if row["kind"] == "entity" and (vector := vector_of(row["text"])) is not None:
            entity_vectors[row["id"]] = vector
    profiles = entity_rows([graph], entity_vectors)
    texts += [row["text"] for row in profiles]
    texts += activity_texts(graph)
    texts += [row["name"] for row in profiles]
    return list(dict.fromkeys(texts))


class SourceVectors:
    """The vectors a memory holds for the texts of its videos, read per batch of videos.

    A node's vector is taken from its own row (by node id), whatever the row's text: the graph reads an
    entity's attributes back in another order than they were written, so the payload a write of the
    read-back graph makes may order its words differently; the archive gives that text the node's
    vector, and an import searches with exactly the vectors the memory had."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self._library = LibraryReads.open(memory.path, memory.manifest.generation)
        self._activity_cores: dict[str, np.ndarray] | None = None
        self._nodes: dict[str, tuple[str, np.ndarray]] = {}
        self._entities: dict[str, tuple[str, np.ndarray]] = {}

    def _activities(self) -> dict[str, np.ndarray]:
        if self._activity_cores is None:
            self._activity_cores = {}
            for a in self._library.activities() if self._library is not None else []:
                if a.vector is not None:
                    self._activity_cores.setdefault(meaning.core(a.label), a.vector)
        return self._activity_cores

    def read(self, video_ids: Sequence[str]) -> None:
        """Read the ``nodes`` and ``entities`` rows (id -> text, vector) of these videos."""
        quoted = ", ".join("'" + v.replace("'", "''") + "'" for v in video_ids)
        self._nodes, self._entities = {}, {}
        for table, into in ((self.memory.vectors_unchecked.nodes(), self._nodes),
                            (self.memory.entities.table(), self._entities)):
            if table is None or not video_ids:
                continue
            data = (table.search().where(f"video_id IN ({quoted})").select(["id", "text", "vector"])
                    .limit(10_000_000).to_arrow())
            ids, texts = data.column("id").to_pylist(), data.column("text").to_pylist()
            flat = data.column("vector").combine_chunks().values.to_numpy(zero_copy_only=False)
            matrix = np.asarray(flat, dtype=np.float32).reshape(len(ids), -1)
            into.update((i, (t, v)) for i, t, v in zip(ids, texts, matrix, strict=True))

    def vectors(self, graph: VideoGraph) -> dict[str, np.ndarray]:
        """text -> vector for the texts a write of ``graph`` embeds that the memory holds vectors for."""
        by_text = {t: v for t, v in self._nodes.values()}
        out: dict[str, np.ndarray] = {}
        rows = index_rows([graph])
        for row in rows:
            vector = self._nodes[row["id"]][1] if row["id"] in self._nodes else by_text.get(row["text"])
            if vector is not None:
                out.setdefault(row["text"], vector)
        entity_vectors = {r["id"]: out[r["text"]] for r in rows if r["kind"] == "entity" and r["text"] in out}
        profiles = entity_rows([graph], entity_vectors)
        for row in profiles:
            if row["id"] in self._entities:
                out.setdefault(row["text"], self._entities[row["id"]][1])
        rest = [t for t in video_texts(graph, out.get) if t not in out]
        if rest and self._library is not None:
            out.update(self._library.word_vectors(rest))
            cores = self._activities()
            out.update({t: cores[t] for t in rest if t in cores and t not in out})
        return out


__all__ = ["SourceVectors", "video_texts"]
