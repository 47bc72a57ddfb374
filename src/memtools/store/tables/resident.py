"""The nodes table's rows, held in memory at one table version: what vector search reads.

A library-wide search asks lance two similarity queries: the best ``candidates`` rows of the
whole library (stage 1) and every row of the ~8 opened videos (stage 2), then reads the text of
the shown moments. At 1,000 h lance spent ~35 ms of a 50 ms search on them, mostly reading
columns and vectors, not comparing. Held rows answer the same queries in a few milliseconds:

* **stage 2** (a filter naming videos, or a table without an ANN index): the rows passing the
  filter are found with numpy masks over each video's contiguous slice, and scored exactly
  (cosine, float32, as lance's flat search);
* **stage 1 on an ANN-indexed table**: lance's IVF-PQ index proposes ``limit x ANN_REFINE``
  row ids (the index alone, no columns read), and they are re-scored exactly here: what
  lance's ``refine_factor`` does, without reading 500 vectors and six columns per query;
* **payloads** (text, display, macro label, context) of the shown rows are read by offset.

What is in memory is small (~0.55 KB a MiniLM row, 228 MiB at 1,000 h): the ranking columns and
int8 vectors with a per-row scale and error bound. The exact float32 vectors and the payloads
are in unnamed temporary files (``memtools.store.tables.resident_quant``). A query asking for fewer rows
than it filters ranks them by the int8 vectors and re-scores exactly every row whose error bound
lets it reach the top ``limit``; one asking for all of them (stage 2) scores them all exactly.
Either way the rows, scores and order are the float32 ones.

The rows are read once per table version (``LanceIndex`` reads them again after a write: ~1 s
at 1,000 h). A table whose rows would exceed the budget (``MEMTOOLS_RESIDENT_MB``, default
2048; 0 turns this off) is searched by lance as before.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from memtools.blas import row_dots
from memtools.errors import ConfigError, StoreError
from memtools.store.base import HitColumns, SearchFilter
from memtools.store.tables.resident_quant import SLACK, ExactVectors, Payloads, candidates, in_memory, quantise

RANKING = ("id", "video_id", "kind", "macro_id", "t_start", "t_end")
PAYLOAD = ("text", "display", "macro_label", "context")
DEFAULT_BUDGET_MB = 2048
BLOCK = 16384  # rows quantised, or scored by their int8 vectors, at a time (a float32 copy of 24 MB)


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
    """What one held row takes in memory: its int8 vector with its scale and error bound, its
    ranking columns (~120 bytes of ids, times and row-id indexes) and its payload's offset; the
    float32 vector and the payload live in a temporary file (``memtools.store.tables.resident_quant``)."""
    return dim + 240


def held_bytes(rows: int, dim: int) -> int:
    """What ``rows`` held rows take in memory: ``row_bytes`` each, and their float32 vectors where
    a table is small enough to keep them in memory (``resident_quant.in_memory``)."""
    return rows * row_bytes(dim) + (rows * dim * 4 if in_memory(rows, dim) else 0)


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
    codes: np.ndarray      # int8 (rows, dim): each unit row ~ scales[row] * codes[row]
    scales: np.ndarray     # float32
    bounds: np.ndarray     # float32: |exact cosine - quantised cosine| <= bounds[row] for a unit query
    exact: ExactVectors    # the unit float32 rows, in a temporary file
    videos: dict[str, tuple[int, int]]  # video id -> [start, end) of its rows
    by_row_id: np.ndarray  # argsort of row_ids
    sorted_row_ids: np.ndarray  # row_ids[by_row_id]
    id_rank: np.ndarray    # each row's place in id order (ties between hits are broken by id)
    payload: Payloads      # text, display, macro_label, context, in temporary files, in scan order
    payload_rows: np.ndarray | None  # each row's place in ``payload`` (None: the same as its own)

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def read(cls, table: Any, version: int, dim: int, stop: Any = None) -> ResidentRows:
        """Every row of ``table`` (a lance table handle checked out at ``version``): the columns in
        one scan, then the vectors batch by batch, quantised and written to the file as they come
        (no float32 matrix of the whole table is ever in memory). ``stop``: an event that, once set,
        ends the read at the next batch (StoreError)."""
        data = table.search().select(list(RANKING)).with_row_id(True).limit(None).to_arrow()
        row_ids = data.column("_rowid").to_numpy()
        payload = Payloads(len(row_ids), len(PAYLOAD))
        at = 0
        for batch in table.search().select(list(PAYLOAD)).with_row_id(True).limit(None).to_batches():
            if stop is not None and stop.is_set():
                raise StoreError("reading the vector table into memory was stopped (the process is exiting)")
            if at + batch.num_rows > len(row_ids) or not np.array_equal(batch.column("_rowid").to_numpy(),
                                                                        row_ids[at:at + batch.num_rows]):
                raise StoreError(f"the vector table's version {version} was read in two different orders")
            payload.add(at, [batch.column(name) for name in PAYLOAD])
            at += batch.num_rows
            del batch
        if at != len(row_ids):
            raise StoreError(f"the vector table's version {version} gave {at} payloads for {len(row_ids)} rows")

        def blocks() -> Iterator[tuple[int, np.ndarray]]:
            at = 0
            for batch in table.search().select(["vector"]).with_row_id(True).limit(None).to_batches():
                if stop is not None and stop.is_set():
                    raise StoreError("reading the vector table into memory was stopped (the process is exiting)")
                size = batch.num_rows
                if at + size > len(row_ids) or not np.array_equal(batch.column("_rowid").to_numpy(),
                                                                  row_ids[at:at + size]):
                    raise StoreError(f"the vector table's version {version} was read in two different orders")
                yield at, batch.column("vector").flatten().to_numpy().reshape(size, dim)
                at += size
                del batch
            if at != len(row_ids):
                raise StoreError(f"the vector table's version {version} gave {at} vectors for {len(row_ids)} rows")

        held = cls.from_arrow(data, blocks(), version, dim, payload)
        del data
        pa.default_memory_pool().release_unused()  # the scan's buffers: back to the system, not kept by arrow
        return held

    @classmethod
    def from_arrow(cls, data: pa.Table, vectors: np.ndarray | Iterable[tuple[int, np.ndarray]], version: int,
                   dim: int | None = None, payload: Payloads | None = None) -> ResidentRows:
        """``data``: every row of the table with the ranking columns and ``_rowid`` (and the payload
        columns unless ``payload`` holds them already, row for row); ``vectors``: their vectors, row
        for row (a matrix, or (first row, block) pairs in order)."""
        import pyarrow.compute as pc  # here, not at the top: a command that searches nothing never pays it (~40 ms)

        if payload is None:
            payload = Payloads(data.num_rows, len(PAYLOAD))
            payload.add(0, [data.column(name).combine_chunks() for name in PAYLOAD])
        if isinstance(vectors, np.ndarray):
            dim = vectors.shape[1]
            matrix = vectors
            vectors = ((s, matrix[s:s + BLOCK]) for s in range(0, len(matrix), BLOCK))
        assert dim is not None
        n = data.num_rows
        videos = pc.dictionary_encode(data.column("video_id").combine_chunks())
        codes = videos.indices.to_numpy(zero_copy_only=False)
        place = scan_of = None
        if len(codes) and np.any(np.diff(codes) < 0):  # a video's rows are not contiguous: group them
            order = np.argsort(codes, kind="stable")
            data, scan_of = data.take(pa.array(order)), order
            place = np.empty(n, dtype=np.int64)
            place[order] = np.arange(n)  # where the scan's row i is held
            videos = pc.dictionary_encode(data.column("video_id").combine_chunks())
            codes = videos.indices.to_numpy(zero_copy_only=False)
        starts = np.flatnonzero(np.r_[True, np.diff(codes) != 0]) if len(codes) else np.zeros(0, int)
        ends = np.r_[starts[1:], len(codes)].astype(int)[:len(starts)]
        names = videos.dictionary.to_pylist()
        slices = {names[codes[s]]: (int(s), int(e)) for s, e in zip(starts, ends, strict=True)}
        quantised = np.zeros((n, dim), dtype=np.int8)
        scales, bounds = np.zeros(n, dtype=np.float32), np.full(n, SLACK, dtype=np.float32)
        exact = ExactVectors(n, dim)
        for at, raw in vectors:
            block = np.array(raw, dtype=np.float32).reshape(-1, dim)  # a copy: normalised in place
            norms = np.sqrt(np.einsum("ij,ij->i", block, block))[:, None]
            np.divide(block, norms, out=block, where=norms > 0)  # unit rows (a zero vector stays zero)
            where = np.arange(at, at + len(block)) if place is None else place[at:at + len(block)]
            quantised[where], scales[where], bounds[where] = quantise(block)
            exact.put(where, block)
        kinds = pc.dictionary_encode(data.column("kind").combine_chunks())
        row_ids = data.column("_rowid").to_numpy().astype(np.uint64)
        by_row_id = np.argsort(row_ids, kind="stable")
        id_rank = np.empty(n, dtype=np.int64)
        id_rank[pc.sort_indices(data.column("id")).to_numpy()] = np.arange(n)
        return cls(
            version=version, row_ids=row_ids, ids=_strings(data, "id"), video_ids=_strings(data, "video_id"),
            kinds=_strings(data, "kind"), macro_ids=_strings(data, "macro_id", ""),
            t_start=data.column("t_start").to_numpy().astype(np.float64),
            t_end=data.column("t_end").to_numpy().astype(np.float64),
            kind_codes=kinds.indices.to_numpy(zero_copy_only=False).astype(np.int16),
            kind_names=tuple(kinds.dictionary.to_pylist()), codes=quantised, scales=scales, bounds=bounds,
            exact=exact, videos=slices, by_row_id=by_row_id, sorted_row_ids=row_ids[by_row_id], id_rank=id_rank,
            payload=payload, payload_rows=scan_of,
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
        at = self.positions(refs)
        if not len(at):
            return {}
        ids = self.ids.take(pa.array(at, pa.int64())).to_pylist()
        return dict(zip(ids, self.payload.take((at if self.payload_rows is None else self.payload_rows[at]).tolist()),
                        strict=True))

    # --- scores -------------------------------------------------------------------------

    def best(self, rows: np.ndarray, vector: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``limit`` best of ``rows`` by cosine similarity to ``vector``: (rows, scores), best
        first. Scores are the float32 ones: rows are ranked by their int8 vectors, and every row that
        can reach the top ``limit`` (``resident_quant.candidates``) is re-scored exactly."""
        if not len(rows) or limit <= 0:
            return rows[:0], np.zeros(0, dtype=np.float32)
        query = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(query))
        query = query / norm if norm > 0 else query
        if limit < len(rows) and self.exact.matrix is None:  # in memory, every row is scored exactly
            rows = rows[candidates(self.quantised_scores(rows, query), self.bounds[rows], limit)]
        scores = self.exact_scores(rows, query)
        if limit < len(rows):
            head = np.argpartition(-scores, limit - 1)[:limit]
            rows, scores = rows[head], scores[head]
        order = np.argsort(-scores, kind="stable")
        return rows[order], scores[order]

    def exact_scores(self, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
        """float32 cosines of ``rows`` with the unit ``query`` (their vectors read from the file, or
        from memory for a small table)."""
        return self.exact.scores(rows, query)

    def quantised_scores(self, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
        """Approximate cosines of ``rows``: each within ``bounds[row]`` of its exact one."""
        out = np.empty(len(rows), dtype=np.float32)
        for at in range(0, len(rows), BLOCK):
            part = rows[at:at + BLOCK]
            first, last = int(part[0]), int(part[-1])
            codes = self.codes[first:last + 1] if last - first + 1 == len(part) and last >= first else self.codes[part]
            out[at:at + len(part)] = row_dots(codes.astype(np.float32), query)
        return out * self.scales[rows]

    def columns(self, rows: np.ndarray, scores: np.ndarray) -> HitColumns:
        at = pa.array(rows, pa.int64())
        return HitColumns(self.ids.take(at), self.video_ids.take(at), self.kinds.take(at), self.macro_ids.take(at),
                          self.t_start[rows], self.t_end[rows], scores.astype(np.float64),
                          self.row_ids[rows].astype(np.int64), order=self.id_rank[rows])


def _strings(data: pa.Table, name: str, fill: str | None = None) -> pa.Array:
    column = data.column(name).combine_chunks()
    return column if fill is None else column.fill_null(fill)
