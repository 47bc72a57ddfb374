"""The lance ``keyframes`` table: one row per stored keyframe with its image vector.

Columns (DESIGN.md §2): id, video_id, t, path (relative to the memory folder), macro_id and
``vector`` from the memory's image embedder. It exists only in memories built with an image
embedder (the manifest's ``image_embedder``), beside ``nodes`` and ``entities``, and is
written in the same step as the rest of a video (``Memory._write_batch``).

Search is exact below ``ANN_MIN_ROWS`` and uses an IVF-PQ index with exact re-ranking above,
as the ``nodes`` table does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from memtools.errors import StoreError
from memtools.store.base import SearchFilter
from memtools.store.tables.entity_index import EntityIndex
from memtools.store.tables.lance_filter import quote
from memtools.store.tables.lance_fold import build_indexes
from memtools.store.tables.vectors import ANN_REFINE, LanceIndex

TABLE = "keyframes"
_COLUMNS = ["id", "video_id", "t", "path", "macro_id"]


def keyframes_schema(dim: int) -> pa.Schema:
    return pa.schema([("id", pa.string()), ("video_id", pa.string()), ("t", pa.float64()), ("path", pa.string()),
                      ("macro_id", pa.string()), ("vector", pa.list_(pa.float32(), dim))])


@dataclass(frozen=True)
class FrameRow:
    id: str
    video_id: str
    t: float
    path: str
    macro_id: str
    score: float = 0.0


def frame_where(video_id: str | None = None, start: float | None = None, end: float | None = None) -> str | None:
    parts = [f"video_id = {quote(video_id)}"] if video_id is not None else []
    if start is not None:
        parts.append(f"t >= {float(start)!r}")
    if end is not None:
        parts.append(f"t <= {float(end)!r}")
    return " AND ".join(parts) or None


class KeyframeIndex(EntityIndex):
    """Reads and writes of the ``keyframes`` table (vectors of width ``dim``), over a ``LanceIndex``'s connection."""

    name = TABLE

    def __init__(self, lance: LanceIndex, dim: int) -> None:
        super().__init__(lance)
        self.dim = dim
        self._ann: bool | None = None  # whether the table has a vector index (cached until it changes)

    def refresh(self) -> None:
        self._ann = None
        super().refresh()

    def schema(self) -> pa.Schema:
        return keyframes_schema(self.dim)

    def finish_write(self) -> None:
        from lancedb.index import BTree

        table = self.table()
        self._ann = None
        if table is None or table.count_rows() == 0:
            return
        build_indexes(table, [("video_id", BTree()), ("t", BTree()), ("id", BTree())],  # one value a video: a BTree
                      ann_due=lambda have: ("vector",) not in have, what="keyframes table")

    # --- reads --------------------------------------------------------------------------

    def count(self, video_id: str | None = None) -> int:
        table = self.reading_table()
        if table is None:
            return 0
        where = frame_where(video_id)
        return table.count_rows(where) if where else table.count_rows()

    def frame(self, frame_id: str) -> tuple[FrameRow, np.ndarray] | None:
        """One keyframe row and its vector, by id."""
        table = self.reading_table()
        if table is None:
            return None
        try:
            rows = table.search().where(f"id = {quote(frame_id)}").select([*_COLUMNS, "vector"]).limit(1).to_list()
        except Exception as exc:
            raise StoreError(f"keyframe lookup failed: {exc}") from exc
        if not rows:
            return None
        return _row(rows[0]), np.asarray(rows[0]["vector"], dtype=np.float32)

    def ids(self, video_id: str) -> set[str]:
        table = self.reading_table()
        if table is None:
            return set()
        try:
            rows = table.search().where(f"video_id = {quote(video_id)}").select(["id"]).limit(None).to_arrow()
        except Exception as exc:
            raise StoreError(f"keyframe lookup failed: {exc}") from exc
        return set(rows.column("id").to_pylist())

    def search(self, vector: np.ndarray, limit: int,  # type: ignore[override]
               where: SearchFilter | None = None) -> list[FrameRow]:
        """The frames most like ``vector``; ``where``'s video ids and window (on a frame's ``t``) restrict them."""
        table = self.reading_table()
        if table is None or limit <= 0:
            return []
        try:
            query = table.search(np.asarray(vector, np.float32).tolist(), vector_column_name="vector")
            query = query.distance_type("cosine")
            if self._ann is None:
                self._ann = any(tuple(ix.columns) == ("vector",) for ix in table.list_indices())
            if self._ann:
                query = query.refine_factor(ANN_REFINE)
            clause = _frame_filter(where) if where is not None else None
            if clause:
                query = query.where(clause, prefilter=True)
            rows = query.select([*_COLUMNS, "_distance"]).limit(limit).to_list()
        except Exception as exc:
            raise StoreError(f"keyframe search failed: {exc}") from exc
        return [_row(r, 1.0 - float(r["_distance"])) for r in rows]


def _frame_filter(f: SearchFilter) -> str | None:
    if f.kinds or f.as_of is not None:
        raise StoreError("a keyframe search filters by video ids and a time window only")
    ids = " OR ".join(f"video_id = {quote(v)}" for v in f.video_ids) if f.video_ids is not None else None
    parts = [f"({ids or 'false'})"] if f.video_ids is not None else []
    rest = frame_where(None, f.start, f.end)
    return " AND ".join([*parts, *([rest] if rest else [])]) or None


def _row(row: dict[str, Any], score: float = 0.0) -> FrameRow:
    return FrameRow(row["id"], row["video_id"], float(row["t"]), row["path"], row["macro_id"] or "", score)
