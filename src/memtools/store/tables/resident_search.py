"""``LanceIndex``'s vector search over the rows it holds in memory (``memtools.store.tables.resident``):
which queries they answer, reading them once per table version, and stage 1's ANN candidates
re-scored exactly. A mixin of ``LanceIndex`` (``memtools.store.tables.vectors``)."""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from memtools import background
from memtools.errors import StoreError
from memtools.store.base import HitColumns, SearchQuery
from memtools.store.tables.lance_filter import filter_where, table_at
from memtools.store.tables.resident import ResidentRows, held_bytes
from memtools.store.tables.resident_quant import HeldFilesError

log = logging.getLogger(__name__)

ANN_REFINE = 5  # the ANN index proposes 5x the candidates asked for, re-scored exactly (lance's refine_factor)


HOLD_AT_ONCE_BYTES = 64 << 20  # a table this small (~25k rows) is read at its first search, in ~0.1 s
HOLD_FROM = 2  # a larger one from a process's second search on, in the background: a one-shot
               # command never reads it (1,000 h: ~3 s)


class ResidentSearch:
    """Vector queries answered from the resident rows; ``LanceIndex`` provides the tables.

    The rows of a table version are read by ``hold_rows``; otherwise a small table's at its first
    vector search (or by ``warm_up``, as a server starts), and a large table's on a background
    thread from a process's second search on. Until they are in memory, and for a table over
    the budget, lance answers."""

    dim: int
    resident_bytes: int
    _resident: tuple[int, ResidentRows | None] | None
    _resident_lock: threading.Lock  # guards _resident and _holding
    _holding: int | None            # the version a background thread is reading
    _vector_searches: int
    _last_vector: Any
    _row_counts: dict[int, int]  # table version -> rows

    if TYPE_CHECKING:  # provided by LanceIndex
        @property
        def _db(self) -> Any: ...

        def _reading_table(self) -> Any: ...

        def _version_of(self, table: Any) -> int: ...

        @property
        def _has_ann(self) -> bool: ...

    def _resident_for(self, query: SearchQuery) -> ResidentRows | None:
        """The resident rows a vector query is answered from, or None (lance answers it)."""
        if query.mode != "vector" or query.vector is None or query.limit <= 0:
            return None
        table = self._reading_table()
        if table is None:
            return None
        version = self._version_of(table)
        held = self._resident
        if held is not None and held[0] == version:
            return held[1]
        if self._small(table, version):
            return self._hold(version)
        size = held_bytes(self._rows_at(table, version), self.dim)
        if query.vector is not self._last_vector:  # a search's stages share its vector: count searches
            self._last_vector = query.vector
            self._vector_searches += 1
        if self._vector_searches >= HOLD_FROM and size <= self.resident_bytes:
            self._hold_in_background(version)
        return None

    def _small(self, table: Any, version: int) -> bool:
        """Whether the table's rows are few enough to read at once (at the first search, or a warm-up)."""
        return held_bytes(self._rows_at(table, version), self.dim) <= min(HOLD_AT_ONCE_BYTES, self.resident_bytes)

    def _rows_at(self, table: Any, version: int) -> int:
        """The table's row count at ``version``, asked once (a search over the budget must not pay
        a count, a network call for tables on object storage, every time)."""
        known = self._row_counts
        if version not in known:
            known.clear()
            known[version] = table.count_rows()
        return known[version]

    def hold_rows(self) -> ResidentRows | None:
        """Read the rows of the current table version into memory now (None: no table, or over the budget)."""
        table = self._reading_table()
        return None if table is None else self._hold(self._version_of(table))

    def _hold_in_background(self, version: int) -> None:
        with self._resident_lock:
            if self._holding == version:
                return
            self._holding = version
        # Exit stops the reader at its next batch and waits for it (``memtools.background``): lance
        # crashes the process if a read is still going on as Python shuts down.
        if background.start(self._hold_quietly, version, name="memtools-hold-rows") is None:
            with self._resident_lock:
                self._holding = None

    def _hold_quietly(self, version: int) -> None:
        try:
            self._hold(version)
        except StoreError as exc:  # lance keeps answering; the next search after a write tries again
            if not background.EXITING.is_set():
                log.warning("%s; searches read the table instead", exc)
        finally:
            with self._resident_lock:
                if self._holding == version:
                    self._holding = None

    def _hold(self, version: int) -> ResidentRows | None:
        held = self._resident
        if held is not None and held[0] == version:
            return held[1]
        rows: ResidentRows | None = None
        try:
            table = table_at(self._db, "nodes", version)  # its own handle: a refresh cannot move it mid-read
            if held_bytes(table.count_rows(), self.dim) <= self.resident_bytes:
                rows = ResidentRows.read(table, version, self.dim, stop=background.EXITING)
        except HeldFilesError as exc:  # this version is searched by lance; the next write tries again
            log.warning("%s; searches read the table instead", exc)
        except StoreError:
            raise
        except Exception as exc:  # lance raises plain ValueError/OSError/RuntimeError
            raise StoreError(f"reading the vector table into memory failed: {exc}") from exc
        with self._resident_lock:
            current = self._resident
            if current is None or current[0] <= version:  # never replace newer rows with older ones
                self._resident = (version, rows)
        return rows

    def _resident_search(self, resident: ResidentRows, query: SearchQuery) -> HitColumns:
        f = query.filter
        if f.video_ids is not None or not self._has_ann:
            rows = resident.select(f)  # named videos (or a small table): every row, scored exactly
        else:
            rows = resident.positions(self._ann_row_ids(query, query.limit * ANN_REFINE))
        assert query.vector is not None  # _resident_for answers vector queries only
        found, scores = resident.best(rows, query.vector, query.limit)
        return resident.columns(found, scores)

    def _ann_row_ids(self, query: SearchQuery, limit: int) -> list[int]:
        """Row ids of the ``limit`` best rows by the ANN index alone (no columns read)."""
        table = self._reading_table()
        where = filter_where(query.filter)
        try:
            search = (table.search(np.asarray(query.vector, dtype=np.float32), vector_column_name="vector")
                      .distance_type("cosine").with_row_id(True))
            if where:
                search = search.where(where, prefilter=True)
            found = search.select(["_distance"]).limit(limit).to_arrow()
        except Exception as exc:
            raise StoreError(f"vector search failed: {exc}") from exc
        return found.column("_rowid").to_pylist()
