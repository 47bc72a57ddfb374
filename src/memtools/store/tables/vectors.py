"""The vector engine seam: LanceDB tables for what is searched by similarity.

One ``nodes`` table (id, video_id, kind, macro_id, t_start, t_end, text, vector) with a
full-text index on ``text``, a bitmap index on ``kind``, btree indexes on ``video_id`` and the
times, and an ANN index only once the table passes ``lance_fold.ANN_MIN_ROWS`` (below that, exact
search is faster and exact). A ``keyframes`` table lists stored frames.

Every write is followed by a fold (``lance_fold``: compaction, the indexes, old versions pruned)
so a memory never piles up versions.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from memtools.errors import StoreError
from memtools.store.base import Hit, HitColumns, SearchFilter, SearchMode, SearchQuery, VideoProfiles
from memtools.store.faults import fault_point
from memtools.store.tables.lance_filter import filter_where, quote, table_at, where_clause
from memtools.store.tables.lance_fold import build_indexes, vector_index_outgrown
from memtools.store.tables.location import is_remote, storage_options
from memtools.store.tables.resident import ResidentRows, budget_bytes
from memtools.store.tables.resident_search import ANN_REFINE, ResidentSearch

__all__ = ["Hit", "LanceIndex", "SearchMode", "VideoProfiles", "filter_where", "where_clause"]

log = logging.getLogger(__name__)



def nodes_schema(dim: int) -> pa.Schema:
    return pa.schema([
        ("id", pa.string()), ("video_id", pa.string()), ("kind", pa.string()), ("macro_id", pa.string()),
        ("t_start", pa.float64()), ("t_end", pa.float64()), ("text", pa.string()),
        ("display", pa.string()), ("macro_label", pa.string()), ("context", pa.string()),
        ("vector", pa.list_(pa.float32(), dim)),
    ])


KEYFRAMES_SCHEMA = pa.schema([("id", pa.string()), ("video_id", pa.string()), ("t", pa.float64()),
                              ("path", pa.string())])


class LanceIndex(ResidentSearch):
    """The lance tables of one memory folder."""

    def __init__(self, path: Path | str, dim: int, resident_bytes: int | None = None) -> None:
        """``resident_bytes``: how much memory the nodes table's rows may take when held for vector
        search (``memtools.store.tables.resident``; None: ``MEMTOOLS_RESIDENT_MB``, 0: never held)."""
        self.remote = is_remote(path)  # object storage (memtools.store.tables.location): a URI, not a folder
        self.resident_bytes = budget_bytes() if resident_bytes is None else resident_bytes
        self.path = path if self.remote else Path(path)
        self.dim = dim
        self._connection: Any = None  # a lancedb connection, made on first use
        self._nodes = None
        self._ann: bool | None = None  # whether the nodes table has a vector index (cached)
        self._versions: dict[int, tuple[Any, int]] = {}  # id(handle) -> (handle, version): lance takes ~0.2 ms
        self._pinned: int | None = None  # read ``nodes`` as of this version (see pin)
        self._pinned_table = None
        self._profiles: tuple[int, VideoProfiles] | None = None  # (table version, profiles)
        self._resident: tuple[int, ResidentRows | None] | None = None  # (table version, rows or None: too big)
        self._resident_lock = threading.Lock()
        self._holding: int | None = None
        self._vector_searches = 0
        self._last_vector: Any = None
        self._row_counts: dict[int, int] = {}

    @property
    def _db(self):
        """The lance connection, made on first use: ``import lancedb`` alone takes ~1 s, which
        a memory opened only for navigation (kuzu) should not pay."""
        if self._connection is None:
            os.environ.setdefault("LANCEDB_LOG", "error")  # lance warns on every hybrid query
            from memtools.store.tables.lance_import import import_lancedb

            lancedb = import_lancedb()
            try:
                self._connection = lancedb.connect(str(self.path), storage_options=storage_options(self.path) or None)
            except Exception as exc:  # lance raises plain ValueError/OSError/RuntimeError
                raise StoreError(f"cannot open vector store at {self.path}: {exc}") from exc
        return self._connection

    # --- tables -------------------------------------------------------------------------

    def _table(self, name: str, schema: pa.Schema, create: bool):
        try:
            if name in self._db.list_tables().tables:
                return self._db.open_table(name)
            if create:
                return self._db.create_table(name, schema=schema)
        except Exception as exc:
            raise StoreError(f"vector store table {name!r} failed to open: {exc}") from exc
        return None

    def nodes(self, create: bool = False):
        if self._nodes is None:
            self._nodes = self._table("nodes", nodes_schema(self.dim), create)
        return self._nodes

    def close_handles(self) -> None:
        """Let go of the connection and every table handle (what lance cached through them goes with
        them); the next read or write opens them again. A bulk import does it after each fold."""
        self._connection = self._nodes = self._pinned_table = self._ann = None
        self._versions, self._row_counts = {}, {}

    def refresh(self) -> None:
        """See writes made by other processes since this handle was opened."""
        self._ann = None
        self._versions = {}
        if self._nodes is not None:
            try:
                self._nodes.checkout_latest()
            except Exception:
                self._nodes = None
        # else: nothing is open yet; the next search opens the latest version anyway

    # --- writes -------------------------------------------------------------------------

    def version(self) -> int | None:
        table = self.nodes()
        return None if table is None else table.version

    def replace_videos(self, video_ids: Sequence[str], rows: list[dict[str, Any]]) -> None:
        table = self.nodes(create=True)
        self._versions = {}
        try:
            if video_ids and table.count_rows() > 0:
                table.delete("video_id IN (" + ", ".join(quote(v) for v in video_ids) + ")")
                fault_point("nodes-deleted")
            if rows:
                table.add(pa.Table.from_pylist(rows, schema=nodes_schema(self.dim)))
        except Exception as exc:
            raise StoreError(f"vector store write failed: {exc}") from exc

    def delete_videos(self, video_ids: Sequence[str]) -> None:
        self.replace_videos(video_ids, [])

    def restore(self, version: int | None) -> None:
        """Undo writes since ``version`` (None: the table did not exist, so drop it)."""
        self._versions = {}
        try:
            if version is None:
                if "nodes" in self._db.list_tables().tables:
                    self._db.drop_table("nodes")
                self._nodes = None
            else:
                table = self.nodes()
                table.checkout(version)
                table.restore()
        except Exception as exc:
            raise StoreError(f"could not roll the vector store back to version {version}: {exc}") from exc

    def finish_write(self, *, share_written: float | None = None, release: bool = False) -> None:
        """Build missing indexes, fold new rows into them, and prune old versions
        (``memtools.store.tables.lance_fold``); ``share_written``: the share of a bulk import written
        so far, so that a vector index built now is sized for the rows the import ends with;
        ``release``: a bulk import's fold (``lance_fold.fold``)."""
        from lancedb.index import FTS, Bitmap, BTree

        table = self.nodes()
        self._ann = None
        self._versions = {}
        rows = 0 if table is None else table.count_rows()
        if rows == 0:
            return
        expected_rows = int(rows / share_written) if share_written and 0 < share_written < 1 else None
        build_indexes(table, [("text", FTS(with_position=False, stem=True, remove_stop_words=True)),
                              ("video_id", BTree()), ("kind", Bitmap()), ("t_start", BTree()), ("t_end", BTree())],
                      ann_due=lambda have: ("vector",) not in have or vector_index_outgrown(table),
                      what="vector store", expected_rows=expected_rows, release=release)

    @staticmethod
    def _vector_segments(table) -> int:
        for index in table.list_indices():
            if tuple(index.columns) == ("vector",):
                return int(getattr(index, "num_segments", 1) or 1)
        return 0

    # --- reads --------------------------------------------------------------------------

    @property
    def _has_ann(self) -> bool:
        if self._ann is None:
            table = self.nodes()
            self._ann = table is not None and self._vector_segments(table) > 0
        return self._ann

    def pin(self, version: int | None) -> None:
        """Read ``nodes`` as of this table version (None: the latest). A reader beside a writer
        (an engine with ``readers_beside_writer``) pins the version its manifest recorded, so a
        search never sees the rows of a write whose graph step has not committed yet."""
        if version != self._pinned:
            self._pinned, self._pinned_table = version, None

    def _version_of(self, table) -> int:
        """``table.version``, remembered until this handle writes or refreshes (only those move it)."""
        known = self._versions.get(id(table))
        if known is not None and known[0] is table:
            return known[1]
        version = table.version
        self._versions[id(table)] = (table, version)
        return version

    def _reading_table(self):
        table = self.nodes()
        if table is None or self._pinned is None or self._version_of(table) == self._pinned:
            return table
        if self._pinned_table is None:
            self._pinned_table = table_at(self._db, "nodes", self._pinned)
        return self._pinned_table

    def video_profiles(self) -> VideoProfiles:
        """Every video's root row (kind ``video``), cached until the table changes."""
        table = self._reading_table()
        if table is None:
            return VideoProfiles([], np.zeros(0), np.zeros((0, self.dim), np.float32))
        version = self._version_of(table)
        if self._profiles is None or self._profiles[0] != version:
            try:
                rows = (table.search().where("kind = 'video'").select(["video_id", "t_end", "text", "vector"])
                        .limit(None).to_arrow())
            except Exception as exc:
                raise StoreError(f"reading the video profiles failed: {exc}") from exc
            vectors = np.asarray(rows.column("vector").to_pylist(), dtype=np.float32).reshape(-1, self.dim)
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            profiles = VideoProfiles(rows.column("video_id").to_pylist(), np.asarray(rows.column("t_end").to_pylist()),
                                     vectors / np.where(norms == 0, 1.0, norms),
                                     [t or "" for t in rows.column("text").to_pylist()])
            self._profiles = (version, profiles)
        return self._profiles[1]

    def warm_up(self) -> None:
        """Open the nodes table (checked against the manifest by a guarded index) and import what a hybrid
        search imports on its first call, so a fresh server's first search is not the slow one."""
        self.count()
        from lancedb.rerankers import RRFReranker  # noqa: F401 - imported for its side effect: the module is loaded

        self.video_profiles()
        table = self._reading_table()
        if table is not None and self._small(table, self._version_of(table)):
            self.hold_rows()  # small: read now. A large table is read from the second search on, so the
            # reading (~3 s at 1,000 h) never competes with a server's first search

    def count(self) -> int:
        table = self._reading_table()
        return 0 if table is None else table.count_rows()

    def search(self, query: SearchQuery) -> list[Hit]:
        """The best ``query.limit`` rows for a typed query (its filter becomes a lance prefilter)."""
        if query.lite:
            return self.search_columns(query).hits()
        if self._resident_for(query) is not None:
            return self.complete(self.search_columns(query).hits())
        col, scores = self._query(query, RANKING_COLUMNS + PAYLOAD_COLUMNS[1:])
        return [Hit(i, v, k, m or "", s, e, t, score, d or t, label or "", _context(c))
                for i, v, k, m, s, e, t, score, d, label, c in zip(
                    col["id"], col["video_id"], col["kind"], col["macro_id"], col["t_start"], col["t_end"],
                    col["text"], scores, col["display"], col["macro_label"], col["context"], strict=True)]

    def search_columns(self, query: SearchQuery) -> HitColumns:
        """The rows of ``query`` with only the columns ranking needs, and their lance row ids."""
        resident = self._resident_for(query)
        if resident is not None:
            return self._resident_search(resident, query)
        col, scores = self._query(query, RANKING_COLUMNS, row_ids=True)
        return HitColumns(col["id"], col["video_id"], col["kind"], [m or "" for m in col["macro_id"]],
                          col["t_start"], col["t_end"], scores, col.get("_rowid") or [None] * len(scores))

    def complete(self, hits: Sequence[Hit]) -> list[Hit]:
        """``hits`` (from a ``lite`` search) with their payload read: the rows are taken by the lance row
        ids the search returned, or found by id (and video) where a row id is missing or stale."""
        table = self._reading_table()
        if table is None or not hits:
            return list(hits)
        refs = [h.ref for h in hits if h.ref is not None]
        held = self._resident
        try:
            if held is not None and held[1] is not None and held[0] == self._version_of(table):
                rows = held[1].payloads(refs)  # the rows held for search, at this version
            else:
                rows = self._payloads(table, refs, None)
            missing = [h for h in hits if h.id not in rows]
            if missing:  # no row id, or the table moved on since the search: look the rows up by id
                videos = tuple(dict.fromkeys(h.video_id for h in missing))
                rows.update(self._payloads(table, None, f"{filter_where(SearchFilter(video_ids=videos))} AND id IN ("
                                           + ", ".join(quote(h.id) for h in missing) + ")"))
        except Exception as exc:
            raise StoreError(f"reading the found rows failed: {exc}") from exc
        return [_with_payload(h, rows.get(h.id)) for h in hits]

    @staticmethod
    def _payloads(table, row_ids: list[int] | None, where: str | None) -> dict[str, tuple]:
        """id -> (text, display, macro_label, context) of the rows with these row ids (or matching ``where``)."""
        if row_ids is not None:
            if not row_ids:
                return {}
            try:
                found = table.take_row_ids(row_ids).select(list(PAYLOAD_COLUMNS)).to_arrow()
            except Exception:  # a row id of an older version (the table was compacted): found by id instead
                return {}
        else:
            found = table.search().where(where).select(list(PAYLOAD_COLUMNS)).limit(None).to_arrow()
        col = [found.column(name).to_pylist() for name in PAYLOAD_COLUMNS]
        return {i: (t, d, label, c) for i, t, d, label, c in zip(*col, strict=True)}

    def _query(self, q: SearchQuery, columns: Sequence[str],
               row_ids: bool = False) -> tuple[dict[str, list], list[float]]:
        """Run a search; its columns (name -> values) and its similarities (higher is better)."""
        mode, vector, text, where = q.mode, q.vector, q.text, filter_where(q.filter)
        table = self._reading_table()
        if table is None or q.limit <= 0:
            return {name: [] for name in columns}, []
        if vector is None and mode != "fulltext":
            raise StoreError(f"a {mode} search needs a query vector")
        values = None if vector is None else vector.tolist()
        try:
            if mode == "vector":
                query = table.search(values, vector_column_name="vector").distance_type("cosine")
                score_key = "_distance"
            elif mode == "fulltext":
                query = table.search(text, query_type="fts")
                score_key = "_score"
            else:
                from lancedb.rerankers import RRFReranker

                query = (table.search(query_type="hybrid").vector(values).text(text)
                         .distance_type("cosine").rerank(RRFReranker()))
                score_key = "_relevance_score"
            if mode != "fulltext" and self._has_ann:
                # Rows of named videos (a few thousand, found by the video_id bitmap) are scanned
                # exactly: faster than the ANN index at 1,000 h, and all of them come back (with a
                # large limit the prefiltered ANN search returned ~80% of them).
                exact = where is not None and "video_id" in where
                query = query.bypass_vector_index() if exact else query.refine_factor(ANN_REFINE)
            if where:
                query = query.where(where, prefilter=True)
            if row_ids:
                query = query.with_row_id(True)
            found = query.select([*columns, score_key] if mode != "hybrid" else list(columns)).limit(q.limit).to_arrow()
        except Exception as exc:
            raise StoreError(f"vector search failed: {exc}") from exc
        # Column by column: a search inside 8 opened videos returns ~7k rows at 1,000 h, and
        # per-row dicts (to_list) and JSON for empty contexts were most of its time.
        col = {name: found.column(name).to_pylist() for name in found.column_names}
        raws = col.get(score_key) or [0.0] * found.num_rows
        return col, [1.0 - r for r in raws] if score_key == "_distance" else [float(r) for r in raws]


RANKING_COLUMNS = ("id", "video_id", "kind", "macro_id", "t_start", "t_end")  # what a lite search reads
PAYLOAD_COLUMNS = ("id", "text", "display", "macro_label", "context")          # what complete() adds


def _with_payload(hit: Hit, payload: tuple | None) -> Hit:
    """``hit`` with its text, display, macro label and context (the JSON list of context lines)."""
    if payload is None:
        return hit
    text, display, label, context = payload
    return replace(hit, text=text, display=display or text, macro_label=label or "", context=_context(context))


def _context(raw: str | None) -> tuple[str, ...]:
    return tuple(json.loads(raw)) if raw and raw != "[]" else ()
