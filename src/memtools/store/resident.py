"""The nodes table's rows, held in memory at one table version: what vector search reads.

A library-wide search asks lance two similarity queries: the best ``candidates`` rows of the
whole library (stage 1) and every row of the ~8 opened videos (stage 2), then reads the text of
the shown moments. At 1,000 h lance spent ~35 ms of a 50 ms search on them, mostly reading
columns and vectors, not comparing. Held in memory (as in-process vector stores hold their
vectors: ~2.3 KB a row with MiniLM's 1.5 KB vector, ~1 GB at 1,000 h), the same answers take
a few milliseconds:

* **stage 2** (a filter naming videos, or a table without an ANN index): the rows passing the
  filter are found with numpy masks over each video's contiguous slice, and scored exactly
  (cosine, float32, as lance's flat search);
* **stage 1 on an ANN-indexed table**: lance's IVF-PQ index proposes ``limit x ANN_REFINE``
  row ids (the index alone, no columns read), and they are re-scored exactly here: what
  lance's ``refine_factor`` does, without reading 500 vectors and six columns per query;
* **payloads** (text, display, macro label, context) of the shown rows are taken from memory.

The rows are read once per table version (``LanceIndex`` reads them again after a write: ~1 s
at 1,000 h). A table whose rows would exceed the budget (``MEMTOOLS_RESIDENT_MB``, default
2048; 0 turns this off) is searched by lance as before.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memtools.errors import ConfigError, StoreError
from memtools.store.base import HitColumns, SearchFilter

RANKING = ("id", "video_id", "kind", "macro_id", "t_start", "t_end")
PAYLOAD = ("text", "display", "macro_label", "context")
DEFAULT_BUDGET_MB = 2048


def budget_bytes() -> int:
    """The memory the resident rows may take (``MEMTOOLS_RESIDENT_MB``)."""
    raw = os.environ.get("MEMTOOLS_RESIDENT_MB", "").strip()
    if not raw:
        return DEFAULT_BUDGET_MB << 20
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise ConfigError(f"MEMTOOLS_RESIDENT_MB must be a number of megabytes >= 0 (0 turns resident "
                          f"search rows off), not {raw!r}")
    return int(value * (1 << 20))


def row_bytes(dim: int) -> int:
    """What one resident row takes: its vector, its ranking columns and its payload (a typical
    payload is a sentence or two of text, and a few lines of context)."""
    return 4 * dim + 1200


@dataclass(frozen=True)
class ResidentRows:
    """Every row of one version of the nodes table, grouped by video (each video is one slice)."""

    version: int
    row_ids: np.ndarray    # lance row ids (uint64)
    ids: pa.Array          # string arrays
    video_ids: pa.Array
    kinds: pa.Array
    macro_ids: pa.Array
    t_start: np.ndarray    # float64
    t_end: np.ndarray
    kind_codes: np.ndarray  # int16 index into ``kind_names``
    kind_names: tuple[str, ...]
    vectors: np.ndarray    # float32 (rows, dim), unit length (a zero vector stays zero)
    videos: dict[str, tuple[int, int]]  # video id -> [start, end) of its rows
    by_row_id: np.ndarray  # argsort of row_ids
    sorted_row_ids: np.ndarray  # row_ids[by_row_id]
    id_rank: np.ndarray    # each row's place in id order (ties between hits are broken by id)
    payload: pa.Table      # text, display, macro_label, context

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def read(cls, table: Any, version: int, dim: int, stop: Any = None) -> ResidentRows:
        """Every row of ``table`` (a lance table handle checked out at ``version``): the columns in
        one scan, then the vectors batch by batch into one matrix (a batch's buffers are shared by
        its columns, so keeping any column of it would keep its vectors twice). ``stop``: an event
        that, once set, ends the read at the next batch (StoreError)."""
        data = table.search().select([*RANKING, *PAYLOAD]).with_row_id(True).limit(None).to_arrow()
        row_ids = data.column("_rowid").to_numpy()
        vectors = np.empty((data.num_rows, dim), dtype=np.float32)
        at = 0
        for batch in table.search().select(["vector"]).with_row_id(True).limit(None).to_batches():
            if stop is not None and stop.is_set():
                raise StoreError("reading the vector table into memory was stopped (the process is exiting)")
            size = batch.num_rows
            if at + size > len(vectors) or not np.array_equal(batch.column("_rowid").to_numpy(), row_ids[at:at + size]):
                raise StoreError(f"the vector table's version {version} was read in two different orders")
            vectors[at:at + size] = batch.column("vector").flatten().to_numpy().reshape(size, dim)
            at += size
            del batch
        if at != len(vectors):
            raise StoreError(f"the vector table's version {version} gave {at} vectors for {len(vectors)} rows")
        return cls.from_arrow(data, vectors, version)

    @classmethod
    def from_arrow(cls, data: pa.Table, vectors: np.ndarray, version: int) -> ResidentRows:
        """``data``: every row of the table with the ranking and payload columns and ``_rowid``;
        ``vectors``: their vectors, row for row (normalised in place)."""
        videos = pc.dictionary_encode(data.column("video_id").combine_chunks())
        codes = videos.indices.to_numpy(zero_copy_only=False)
        if len(codes) and np.any(np.diff(codes) < 0):  # a video's rows are not contiguous: group them
            order = np.argsort(codes, kind="stable")
            data, vectors = data.take(pa.array(order)), vectors[order]
            videos = pc.dictionary_encode(data.column("video_id").combine_chunks())
            codes = videos.indices.to_numpy(zero_copy_only=False)
        starts = np.flatnonzero(np.r_[True, np.diff(codes) != 0]) if len(codes) else np.zeros(0, int)
        ends = np.r_[starts[1:], len(codes)].astype(int)[:len(starts)]
        names = videos.dictionary.to_pylist()
        slices = {names[codes[s]]: (int(s), int(e)) for s, e in zip(starts, ends, strict=True)}
        for start in range(0, len(vectors), 65536):  # unit rows, in place (no temporary the size of the matrix)
            block = vectors[start:start + 65536]
            norms = np.sqrt(np.einsum("ij,ij->i", block, block))[:, None]
            np.divide(block, norms, out=block, where=norms > 0)
        kinds = pc.dictionary_encode(data.column("kind").combine_chunks())
        row_ids = data.column("_rowid").to_numpy().astype(np.uint64)
        by_row_id = np.argsort(row_ids, kind="stable")
        id_rank = np.empty(data.num_rows, dtype=np.int64)
        id_rank[pc.sort_indices(data.column("id")).to_numpy()] = np.arange(data.num_rows)
        return cls(
            version=version, row_ids=row_ids, ids=_strings(data, "id"), video_ids=_strings(data, "video_id"),
            kinds=_strings(data, "kind"), macro_ids=_strings(data, "macro_id", ""),
            t_start=data.column("t_start").to_numpy().astype(np.float64),
            t_end=data.column("t_end").to_numpy().astype(np.float64),
            kind_codes=kinds.indices.to_numpy(zero_copy_only=False).astype(np.int16),
            kind_names=tuple(kinds.dictionary.to_pylist()), vectors=vectors, videos=slices,
            by_row_id=by_row_id, sorted_row_ids=row_ids[by_row_id], id_rank=id_rank,
            payload=pa.table({name: data.column(name).combine_chunks() for name in PAYLOAD}),
        )

    # --- which rows ---------------------------------------------------------------------

    def select(self, f: SearchFilter) -> np.ndarray:
        """Row positions passing ``f``, grouped by video (a filter naming videos reads their slices only)."""
        if f.video_ids is None:
            rows = np.arange(len(self.ids))
        else:
            spans = [self.videos[v] for v in dict.fromkeys(f.video_ids) if v in self.videos]
            rows = np.concatenate([np.arange(s, e) for s, e in spans]) if spans else np.zeros(0, dtype=int)
        return rows[self._passes(rows, f)] if len(rows) else rows

    def _passes(self, rows: np.ndarray, f: SearchFilter) -> np.ndarray:
        keep = np.ones(len(rows), dtype=bool)
        if f.kinds:
            wanted = [i for i, k in enumerate(self.kind_names) if k in f.kinds]
            keep &= np.isin(self.kind_codes[rows], wanted)
        if f.start is not None:
            keep &= self.t_end[rows] >= f.start
        if f.end is not None:
            keep &= self.t_start[rows] <= f.end
        if f.as_of is not None:
            keep &= self.t_end[rows] <= f.as_of
        return keep

    def positions(self, row_ids: Sequence[int]) -> np.ndarray:
        """Row positions of these lance row ids (rows of another table version are dropped)."""
        wanted = np.asarray(row_ids, dtype=np.uint64)
        if not len(wanted) or not len(self.row_ids):
            return np.zeros(0, dtype=int)
        sorted_ids = self.sorted_row_ids
        at = np.minimum(np.searchsorted(sorted_ids, wanted), len(sorted_ids) - 1)
        found = sorted_ids[at] == wanted
        return self.by_row_id[at[found]]

    def payloads(self, refs: Sequence[int]) -> dict[str, tuple]:
        """id -> (text, display, macro_label, context) of the rows with these lance row ids."""
        at = pa.array(self.positions(refs), pa.int64())
        if not len(at):
            return {}
        taken = self.payload.take(at)
        columns = [self.ids.take(at).to_pylist()] + [taken.column(name).to_pylist() for name in PAYLOAD]
        return {i: (t, d, label, c) for i, t, d, label, c in zip(*columns, strict=True)}

    # --- scores -------------------------------------------------------------------------

    def best(self, rows: np.ndarray, vector: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``limit`` best of ``rows`` by cosine similarity to ``vector``: (rows, scores), best first."""
        if not len(rows) or limit <= 0:
            return rows[:0], np.zeros(0, dtype=np.float32)
        query = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(query))
        query = query / norm if norm > 0 else query
        scores = self._scores(rows, query)
        if limit < len(rows):
            head = np.argpartition(-scores, limit - 1)[:limit]
            rows, scores = rows[head], scores[head]
        order = np.argsort(-scores, kind="stable")
        return rows[order], scores[order]

    def _scores(self, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
        # A few contiguous runs (the slices of the opened videos) are multiplied in place, without
        # copying their vectors; scattered rows (ANN candidates) are gathered.
        breaks = np.flatnonzero(np.diff(rows) != 1) + 1
        if len(breaks) >= 64:
            return self.vectors[rows] @ query
        return np.concatenate([self.vectors[run[0]:run[-1] + 1] @ query for run in np.split(rows, breaks)])

    def columns(self, rows: np.ndarray, scores: np.ndarray) -> HitColumns:
        at = pa.array(rows, pa.int64())
        return HitColumns(self.ids.take(at), self.video_ids.take(at), self.kinds.take(at), self.macro_ids.take(at),
                          self.t_start[rows], self.t_end[rows], scores.astype(np.float64),
                          self.row_ids[rows].astype(np.int64), order=self.id_rank[rows])


def _strings(data: pa.Table, name: str, fill: str | None = None) -> pa.Array:
    column = data.column(name).combine_chunks()
    return column if fill is None else pc.fill_null(column, fill)
