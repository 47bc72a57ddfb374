"""The vectors a memory already holds for texts a write is about to embed.

A sentence model's output for one text depends, in its last bits, on the batch the text was
embedded in (padding length, the kernel the batch's shape picks). Two videos sharing a caption
would then hold two slightly different vectors for it, and two equally good moments would be
ordered by that noise, differently in an exported and re-imported copy (which carries one vector
per text). A write therefore reuses the vector a memory holds for a text, so one text has one
vector in one memory, whichever write brought it. Reading the ``text`` column costs one column
scan per table and write (about 20 ms per 100,000 rows); only the matching rows' vectors are read.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

log = logging.getLogger(__name__)


def held_vectors(tables: Iterable[Any], texts: Sequence[str], dim: int) -> dict[str, np.ndarray]:
    """text -> vector for those of ``texts`` a row of ``tables`` (lance tables, None skipped) holds with
    ``dim`` numbers. A table that cannot be read gives nothing: the write embeds those texts, as it
    would in a new memory, and the write's own checks deal with the table."""
    import pyarrow as pa  # here: a command that writes nothing does not pay for pyarrow.compute

    wanted = pa.array(list(dict.fromkeys(texts)), pa.string())
    found: dict[str, np.ndarray] = {}
    for table in tables:
        if table is None or len(found) == len(wanted):
            continue
        try:
            found.update((t, v) for t, v in _held(table, wanted, dim).items() if t not in found)
        except Exception as exc:  # lance raises plain OSError/ValueError/RuntimeError on a damaged table
            log.debug("held vectors: %s unreadable (%s); embedding instead", getattr(table, "name", table), exc)
    return found


def _held(table: Any, wanted: Any, dim: int) -> dict[str, np.ndarray]:
    import pyarrow.compute as pc

    found: dict[str, np.ndarray] = {}
    dataset = table.to_lance()
    column = dataset.to_table(columns=["text"]).column("text")
    rows = np.flatnonzero(pc.is_in(column, value_set=wanted).to_numpy(zero_copy_only=False))
    if not len(rows):
        return found
    held = dataset.take(rows.tolist(), columns=["text", "vector"])
    vectors = held.column("vector").combine_chunks()
    if vectors.type.list_size != dim:
        return found  # vectors of another model (a repair mends the manifest's dimension): never reused
    matrix = vectors.values.to_numpy(zero_copy_only=False).reshape(len(held), dim)
    for text, vector in zip(held.column("text").to_pylist(), matrix, strict=True):
        found.setdefault(text, np.array(vector, dtype=np.float32))
    return found


__all__ = ["held_vectors"]
