"""What the held search rows keep of each row's vector and payload (``memtools.store.tables.resident``).

* **int8 vectors** with a per-row scale (``scale = max |x| / 127``) and a per-row error bound:
  ``bound = ||x - scale * codes|| + SLACK``. For a unit query ``u``, Cauchy-Schwarz gives
  ``|x . u - scale * (codes . u)| <= ||x - scale * codes||``, so a row's exact cosine lies within
  ``bound`` of its quantised one; ``SLACK`` covers the float32 rounding of both products (each
  under ``dim * 2**-24`` for unit vectors: 2.3e-5 at 384 dimensions). 392 bytes a MiniLM row
  instead of 1,536.
* **the exact unit float32 vectors** in a temporary file, read back (``os.preadv``) only for the
  rows that can reach a query's top ``limit`` (``candidates``), so scores and order are the float32
  ones. Reads go through the page cache, never into the process's memory map: RSS stays the
  held rows' size however many videos are searched. A small table's (``IN_MEMORY_BYTES``, 16 MiB:
  ~25 h of video) stay in memory instead, and every row is scored from them exactly: at 10 h the
  file's reads (~400 of them for stage 1's re-scoring) cost more than the search's other steps.
* **the payloads** (text, display, macro label, context) in the same kind of file, the columns'
  UTF-8 bytes as arrow holds them, read for the shown moments only (33 bytes a row held: where
  each value starts, and whether it is null).

The files are unnamed (``tempfile.TemporaryFile``, ``O_TMPFILE`` on Linux): the space is given
back when the rows are dropped or the process ends, whatever way it ends.
"""

from __future__ import annotations

import os
import tempfile
import weakref
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from memtools.blas import row_dots
from memtools.errors import StoreError

SLACK = 1e-4  # float32 rounding of the quantised and the exact product (each < 2.3e-5 at 384 dims)
HEAD = 64     # the best max(4 x limit, HEAD) rows by quantised score are always re-scored exactly
IN_MEMORY_BYTES = 16 << 20  # exact vectors this small stay in memory (~11k MiniLM rows, ~25 h of video)
GAP = 8       # rows read from the file as one span when at most this far apart (8 MiniLM rows: 12 KB)


def in_memory(rows: int, dim: int) -> bool:
    """Whether the exact vectors of ``rows`` held rows stay in memory rather than in a file."""
    return rows * dim * 4 <= IN_MEMORY_BYTES


def quantise(block: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(codes int8, scales float32, bounds float32) of unit float32 rows: ``scales * codes``
    approximates each row, and ``bounds`` caps the error of its cosine with any unit query."""
    peak = np.abs(block).max(axis=1) if block.shape[1] else np.zeros(len(block), np.float32)
    scales = (peak / 127).astype(np.float32)
    safe = np.where(scales > 0, scales, np.float32(1))
    codes = np.clip(np.rint(block / safe[:, None]), -127, 127).astype(np.int8)
    residual = block - codes.astype(np.float32) * scales[:, None]
    bounds = (np.sqrt(np.einsum("ij,ij->i", residual, residual, dtype=np.float64)) + SLACK).astype(np.float32)
    return codes, scales, bounds


def candidates(quantised: np.ndarray, bounds: np.ndarray, limit: int) -> np.ndarray:
    """Positions (into ``quantised``) of every row whose exact score can reach the top ``limit``:
    the best ``max(4 x limit, HEAD)`` by quantised score, and every row whose upper bound reaches
    the ``limit``-th best lower bound (a row under it is beaten by ``limit`` rows for sure)."""
    n = len(quantised)
    head = max(4 * limit, HEAD)
    if n <= head or limit >= n:
        return np.arange(n)
    best = np.argpartition(-quantised, head - 1)[:head]
    lower = quantised[best] - bounds[best]
    cut = np.partition(lower, len(lower) - limit)[len(lower) - limit]  # limit-th best lower bound
    reach = quantised + bounds >= cut
    reach[best] = True
    return np.flatnonzero(reach)


class HeldFilesError(StoreError):
    """A held rows' temporary file could not be made or written (a full or read-only $TMPDIR)."""


class RowFile:
    """An unnamed temporary file read back by position (thread-safe: ``pread`` keeps no offset)."""

    def __init__(self) -> None:
        try:
            self._file = tempfile.TemporaryFile(prefix="memtools-held-")
        except OSError as exc:
            raise HeldFilesError(f"no temporary file for the held search rows in {tempfile.gettempdir()} "
                                 f"(set TMPDIR to a writable folder): {exc}") from exc
        self.fd = self._file.fileno()
        weakref.finalize(self, self._file.close)  # closed (and its space given back) with the held rows

    def write_at(self, data: np.ndarray | bytes, offset: int) -> None:
        view = memoryview(data if isinstance(data, bytes) else data.data).cast("B")
        try:
            while len(view):
                done = os.pwrite(self.fd, view, offset)
                view, offset = view[done:], offset + done
        except OSError as exc:
            raise HeldFilesError(f"writing the held search rows to {tempfile.gettempdir()} failed "
                                 f"(free some space there or set TMPDIR): {exc}") from exc

    def read_into(self, out: np.ndarray, offset: int) -> None:
        view = out.data.cast("B")
        while len(view):
            done = os.preadv(self.fd, [view], offset)
            if done <= 0:
                raise OSError(f"the held rows' file ended at byte {offset}")
            view, offset = view[done:], offset + done

    def close(self) -> None:
        self._file.close()


class ExactVectors:
    """The unit float32 vectors of the held rows, row for row: in a ``RowFile``, or in memory when
    they take at most ``IN_MEMORY_BYTES`` (a small library: the file's reads would cost more than
    the few megabytes kept)."""

    def __init__(self, rows: int, dim: int) -> None:
        self.dim, self.rows = dim, rows
        self.matrix: np.ndarray | None = None
        if in_memory(rows, dim):
            self.matrix = np.zeros((rows, dim), dtype=np.float32)
            return
        self.file = RowFile()
        if rows and dim:
            try:
                os.ftruncate(self.file.fd, rows * dim * 4)
            except OSError as exc:
                raise HeldFilesError(f"no room for the held search rows in {tempfile.gettempdir()}: {exc}") from exc

    def put(self, positions: np.ndarray, block: np.ndarray) -> None:
        """Write ``block`` (float32 rows) at these row positions (consecutive runs in one write each)."""
        block = np.ascontiguousarray(block, dtype=np.float32)
        if self.matrix is not None:
            self.matrix[positions] = block
            return
        for start, stop, at in _runs(positions):
            self.file.write_at(block[at:at + stop - start], start * self.dim * 4)

    def take(self, positions: np.ndarray) -> np.ndarray:
        """The float32 rows at ``positions`` (in that order)."""
        if self.matrix is not None:
            return self.matrix[positions]
        out = np.empty((len(positions), self.dim), dtype=np.float32)
        for start, stop, at in _runs(positions):
            self.file.read_into(out[at:at + stop - start], start * self.dim * 4)
        return out

    def scores(self, positions: np.ndarray, query: np.ndarray) -> np.ndarray:
        """The cosines of the rows at ``positions`` with the unit float32 ``query``, on the calling
        thread (``row_dots``). Rows a few apart are read (or scored) as one span: a filter that
        skips some kinds of a video's rows costs one read of the video, not one per run."""
        positions = np.asarray(positions, dtype=np.int64)
        out = np.empty(len(positions), dtype=np.float32)
        if not len(positions):
            return out
        if self.matrix is not None:
            start, stop = int(positions.min()), int(positions.max()) + 1
            if stop - start <= 2 * len(positions):  # one product over the span, no copy of the rows
                out[:] = row_dots(self.matrix[start:stop], query)[positions - start]
                return out
            return row_dots(self.matrix[positions], query)
        spans = _runs(positions, GAP)
        block = np.empty((max((stop - start for start, stop, _ in spans), default=0), self.dim), dtype=np.float32)
        for n, (start, stop, at) in enumerate(spans):
            end = spans[n + 1][2] if n + 1 < len(spans) else len(positions)
            self.file.read_into(block[:stop - start], start * self.dim * 4)
            out[at:end] = row_dots(block[:stop - start], query)[positions[at:end] - start]
        return out


class Payloads:
    """Each held row's (text, display, macro_label, context): each column's UTF-8 bytes in its own
    ``RowFile``, where each value starts (int64) and whether it is null held (33 bytes a row).
    Written batch by batch from the arrow buffers as they are: no Python object per row, and
    never the whole column in memory. Rows are numbered in the order they were added."""

    def __init__(self, rows: int, columns: int) -> None:
        self.files = [RowFile() for _ in range(columns)]
        self.starts = np.zeros((columns, rows + 1), dtype=np.int64)
        self.valid = np.ones((columns, rows), dtype=bool)
        self._ends = [0] * columns

    def add(self, at: int, columns: Sequence[pa.Array]) -> None:
        """The values of rows ``at``, ``at + 1``, ... (rows must be added in order)."""
        for c, column in enumerate(columns):
            column = column.cast(pa.large_string())
            n = len(column)
            _, offsets, data = column.buffers()
            where = np.frombuffer(offsets, dtype=np.int64)[column.offset:column.offset + n + 1] \
                if n else np.zeros(1, dtype=np.int64)
            first, last = int(where[0]), int(where[-1])
            if data is not None and last > first:
                self.files[c].write_at(np.frombuffer(data, dtype=np.uint8)[first:last], self._ends[c])
            self.starts[c, at:at + n + 1] = where - first + self._ends[c]
            self._ends[c] += last - first
            if column.null_count:
                self.valid[c, at:at + n] = column.is_valid().to_numpy(zero_copy_only=False)

    def take(self, rows: Sequence[int]) -> list[tuple]:
        found = []
        for p in rows:
            row: list[str | None] = []
            for c, file in enumerate(self.files):
                if not self.valid[c, p]:
                    row.append(None)
                    continue
                start, stop = int(self.starts[c, p]), int(self.starts[c, p + 1])
                raw = np.empty(stop - start, dtype=np.uint8)
                file.read_into(raw, start)
                row.append(raw.tobytes().decode())
            found.append(tuple(row))
        return found

    @property
    def nbytes(self) -> int:
        return self.starts.nbytes + self.valid.nbytes


def _runs(positions: np.ndarray, gap: int = 1) -> list[tuple[int, int, int]]:
    """(first row, row after the last, index into ``positions``) of each run of increasing positions
    at most ``gap`` apart (1: consecutive)."""
    positions = np.asarray(positions, dtype=np.int64)
    if not len(positions):
        return []
    step = np.diff(positions)
    breaks = np.flatnonzero((step < 1) | (step > gap)) + 1
    starts = np.r_[0, breaks]
    ends = np.r_[breaks, len(positions)]
    return [(int(positions[s]), int(positions[e - 1]) + 1, int(s)) for s, e in zip(starts, ends, strict=True)]
