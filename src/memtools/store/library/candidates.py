"""Which library entities a canonical entity can have evidence for (``memtools.store.library.link_rules``),
found without reading the whole library: an index by normalised name, one by head noun, and per entity
type one matrix of the library entities' unit profile vectors (grown by the entities made since the
last video, computed whole after a removal). Only these candidates are scored by ``evidence_for``.

``NameVectors`` holds the name vectors meaning evidence compares: each distinct name embedded once, by
the embedder the linker was given (none: no meaning evidence).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from memtools.store.library.meaning import unit

if TYPE_CHECKING:
    from memtools.store.library.members import LibEntity, Profile

Embed = Callable[[list[str]], Sequence[Any]]




class NameVectors:
    """Unit vectors of entity names by ``embed``, each name embedded once (``fill`` asks for many at once)."""

    def __init__(self, embed: Embed) -> None:
        self.embed = embed
        self.vectors: dict[str, np.ndarray] = {}

    def fill(self, names: Iterable[str]) -> None:
        missing = sorted({n for n in names if n and n not in self.vectors})
        if missing:
            self.vectors.update(zip(missing, (unit(v) for v in self.embed(missing)), strict=True))

    def cosine(self, a: str, b: str) -> float | None:
        """The cosine of two filled names (None: either is missing, or their sizes differ)."""
        x, y = self.vectors.get(a), self.vectors.get(b)
        if x is None or y is None or len(x) != len(y):
            return None
        return float(x @ y)


class Candidates:
    """The indexes above over the library entities ``add``\\ ed (``reset``: over these only)."""

    def __init__(self, worded: frozenset[str]) -> None:
        self.worded = worded
        self._by_key: dict[tuple[str, str], set[str]] = defaultdict(set)  # (type, key) -> library ids
        self._by_head: dict[tuple[str, str], set[str]] = defaultdict(set)  # (type, head noun) -> library ids
        self._matrices: dict[str, tuple[list[str], np.ndarray]] | None = None  # kept between videos
        self._unmatrixed: list[LibEntity] = []  # library entities given a vector since

    def reset(self, libs: Iterable[LibEntity]) -> None:
        self._by_key.clear()
        self._by_head.clear()
        self._matrices, self._unmatrixed = None, []
        for lib in libs:
            for m in lib.members:
                self.add(lib, m.profile)

    def add(self, lib: LibEntity, p: Profile) -> None:
        """``p`` joined ``lib`` (or made it)."""
        for key in p.keys:
            self._by_key[(lib.entity_type, key)].add(lib.id)
        for h in p.heads if lib.entity_type in self.worded else ():
            self._by_head[(lib.entity_type, h.noun)].add(lib.id)

    def vector_given(self, lib: LibEntity) -> None:
        """``lib`` has a vector now: in the matrix from the next video on."""
        self._unmatrixed.append(lib)

    def matrices(self, entities: Mapping[str, LibEntity]) -> dict[str, tuple[list[str], np.ndarray]]:
        if self._matrices is None:
            self._matrices, self._unmatrixed = _stack(entities.values(), {}), []
        elif self._unmatrixed:
            self._matrices, self._unmatrixed = _stack(self._unmatrixed, self._matrices), []
        return self._matrices

    def of(self, p: Profile, entities: Mapping[str, LibEntity], *, heads: bool, floor: float) -> list[LibEntity]:
        """The library entities sharing a name with ``p``, a head noun (``heads``), or a profile cosine of at
        least ``floor``, in id order (ties go to the older one)."""
        found = {lib for key in p.keys for lib in self._by_key.get((p.entity_type, key), ())}
        if heads and p.entity_type in self.worded:
            found.update(lib for h in p.heads for lib in self._by_head.get((p.entity_type, h.noun), ()))
        matrices = self.matrices(entities)
        if p.vector is not None and p.entity_type in matrices:
            ids, matrix = matrices[p.entity_type]
            scores = matrix @ unit(p.vector)
            found.update(ids[i] for i in np.flatnonzero(scores >= floor - 1e-4))
        return sorted((entities[x] for x in found if x in entities), key=lambda e: number(e.id))


def _stack(libs: Iterable[LibEntity], onto: Mapping[str, tuple[list[str], np.ndarray]]
           ) -> dict[str, tuple[list[str], np.ndarray]]:
    rows: dict[str, tuple[list[str], list[np.ndarray]]] = defaultdict(lambda: ([], []))
    for lib in libs:
        vector = lib.vector()
        if vector is not None:
            ids, vectors = rows[lib.entity_type]
            ids.append(lib.id)
            vectors.append(np.asarray(vector, dtype=np.float32))
    out = dict(onto)
    for etype, (ids, vectors) in rows.items():
        matrix = np.stack(vectors)
        matrix = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        if etype in out:
            old_ids, old = out[etype]
            ids, matrix = old_ids + ids, np.concatenate([old, matrix])
        out[etype] = (ids, matrix)
    return out


def number(lib_id: str) -> int:
    """The number of ``lib/entity_0007`` (7): ids sort by it."""
    return int(lib_id.rsplit("_", 1)[-1])
