"""The graph engine seam: every Cypher statement memtools runs lives in this module.

Kuzu 0.11.3 was archived upstream; its maintained fork ``ladybug`` keeps the same Python API
and Cypher, so ``KuzuGraph`` takes the driver module (``kuzu`` or ``ladybug``) and serves both
(``memtools.store.engines`` names them). ``KuzuGraph`` implements ``memtools.store.base.GraphStore``.
Every query is parameterized; ids never get spliced into Cypher text.

Nodes come back as the pydantic models of ``memtools.schema``; edges as ``EdgeRow``.
"""

from __future__ import annotations

import importlib
import importlib.util  # noqa: F401  - kuzu's arrow scan needs importlib.util imported (0.11.3 bug)
import json
import logging
import math
import os
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa

from memtools.errors import StoreError
from memtools.schema import (
    KIND_OF,
    EdgeCategory,
    Keyframe,
    MacroEvent,
    Node,
    NodeKind,
    Speech,
    SuperEvent,
    VideoGraph,
    kind_of_id,
)
from memtools.store.base import EdgeRow, GraphStore
from memtools.store.faults import commit_starts
from memtools.store.graph import rows as graph_rows
from memtools.store.graph.audit import WholeVideoReads
from memtools.store.graph.errors import translate
from memtools.store.graph.navigation import NavigationRows
from memtools.store.graph.schema import (
    _BY_NAME,
    _DETAIL,
    TABLES,
    _decode,
    _details,
    _encode,
    _schema_ddl,
)

log = logging.getLogger(__name__)

# Up to this many ids of one kind, get_many looks each up by primary key (~0.5 ms each);
# beyond it one scan of the table is cheaper (~50 ms for 200k rows, benchmarks/tool_latency.py).
PK_LOOKUPS_MAX = 64

__all__ = ["EdgeRow", "KuzuGraph", "translate"]  # translate: memtools.store.graph.errors


def writer_pool_mb(path: Path, floor_mb: int) -> int:
    """The buffer pool of a read-write handle: ``floor_mb``, or more for a large database. Kuzu's
    checkpoint at COMMIT needs pages in proportion to the tables it touches, not only to the
    batch: with 512 MiB, writes into a 600 MB graph (~850 h of video) failed with "buffer pool is
    full". The pool is a ceiling, not an allocation; it stays under half the machine's memory."""
    try:
        size_mb = path.stat().st_size // 2**20
    except OSError:
        size_mb = 0
    try:
        half_ram_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**21
    except (OSError, ValueError, AttributeError):  # AttributeError: no os.sysconf on Windows
        half_ram_mb = 4096
    return max(floor_mb, min(2 * size_mb, half_ram_mb))


class KuzuGraph(WholeVideoReads, GraphStore):
    """Typed access to the kuzu (or ladybug) database of one memory folder.

    Open read-only for tools (many processes may) or read-write for builds (one process; with
    kuzu 0.11.3 never alongside readers, with ladybug readers may stay). Writes inside one
    process must be serialized by the caller (``Memory`` does it). ``driver``: the imported
    ``kuzu`` or ``ladybug`` module (default: ``kuzu``); one process may import only one of them.
    """

    def __init__(self, path: Path, *, read_only: bool, buffer_pool_mb: int = 256,
                 driver: ModuleType | None = None) -> None:
        if driver is None:
            driver = importlib.import_module("kuzu")
        self.path = Path(path)
        self.read_only = read_only
        self._db: Any = None  # the driver's Database (kuzu or ladybug)
        self._conn: Any = None
        try:
            self._db = driver.Database(
                str(self.path), read_only=read_only, buffer_pool_size=buffer_pool_mb * 1024 * 1024
            )
            self._conn = driver.Connection(self._db)
        except RuntimeError as exc:
            raise translate(exc, f"opening {self.path.name}", self.path.parent) from exc
        self._present: set[str] | None = None
        self._outline: tuple[str, graph_rows.Outline | None] | None = None
        self.navigation = NavigationRows(self.path.parent, write=not read_only)  # navigation.sqlite beside the file

    def _tables(self) -> list:
        """The node tables this database holds (a memory made before speech has no Speech table)."""
        if self._present is None:
            self._present = {row[0] for row in self._run("CALL show_tables() RETURN name")}
        return [t for t in TABLES.values() if t.name in self._present]

    def _has_speech(self) -> bool:
        return any(t.kind is NodeKind.SPEECH for t in self._tables())

    def _has_rows(self, table: str) -> bool:
        """Whether the database has this derived table (memories made before it do not)."""
        self._tables()
        return self._present is not None and table in self._present

    def close(self) -> None:
        conn, db = getattr(self, "_conn", None), getattr(self, "_db", None)
        self._conn = self._db = None
        if getattr(self, "navigation", None) is not None:
            self.navigation.close()
        if conn is not None:
            conn.close()
        if db is not None:
            db.close()

    # --- low level --------------------------------------------------------------------

    def _run(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        if self._conn is None:
            raise StoreError("graph store is closed")
        try:
            result = self._conn.execute(query, params or {})
            if isinstance(result, list):  # one result per statement; memtools runs one statement at a time
                raise StoreError(f"expected one statement, got {len(result)}: {query[:80]!r}")
            rows = result.get_all()
            result.close()
            return rows
        except RuntimeError as exc:
            raise translate(exc, "running a query", self.path.parent) from exc

    def ensure_schema(self) -> None:
        for statement in _schema_ddl():
            self._run(statement)
        self._present = None

    # --- writes -------------------------------------------------------------------------

    def begin(self) -> None:
        self._run("BEGIN TRANSACTION")

    def commit(self) -> None:
        commit_starts()
        self._run("COMMIT")

    def rollback(self) -> None:
        self._run("ROLLBACK")

    def delete_videos(self, video_ids: Sequence[str]) -> None:
        """Delete every node of these videos and their edges (inside the caller's transaction)."""
        if not video_ids:
            return
        for name in [*(t.name for t in self._tables()), *(d for d in graph_rows.DERIVED if self._has_rows(d))]:
            self._run(f"MATCH (n:{name}) WHERE n.video_id IN $vids DETACH DELETE n", {"vids": list(video_ids)})

    def insert(self, graphs: Sequence[VideoGraph]) -> None:
        """Bulk-insert whole videos with COPY from arrow (inside the caller's transaction)."""
        by_table: dict[str, list[dict[str, Any]]] = defaultdict(list)
        kinds: dict[str, str] = {}
        edges: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
        for graph in graphs:
            for node in graph.nodes():
                table = TABLES[KIND_OF[type(node)]]
                by_table[table.name].append(_encode(table, node))
                kinds[node.id] = table.name
            for edge in [*graph.hierarchy_edges(), *graph.edges]:
                pair = (kinds[edge.source], kinds[edge.target])
                edges[pair].append({
                    "from": edge.source, "to": edge.target, "category": edge.category.value,
                    "label": edge.label, "description": edge.description,
                })
        for name, rows in by_table.items():
            arrow = pa.Table.from_pylist(rows, schema=_BY_NAME[name].arrow_schema())
            self._run(f"COPY {name} FROM $rows", {"rows": arrow})
        rel_schema = pa.schema([(c, pa.string()) for c in ("from", "to", "category", "label", "description")])
        for (src, dst), rows in edges.items():
            arrow = pa.Table.from_pylist(rows, schema=rel_schema)
            self._run(f"COPY Rel FROM $rows (from='{src}', to='{dst}')", {"rows": arrow})

    def store_navigation(self, video_ids: Sequence[str], graphs: Sequence[VideoGraph]) -> None:
        """Replace the navigation rows of ``video_ids`` by those of ``graphs`` (``navigation.sqlite``, one
        SQLite transaction): after the graph's COMMIT has returned, never inside its transaction."""
        self._outline = None
        self.navigation.replace([*video_ids, *(g.video_id for g in graphs)], graph_rows.rows_for(graphs))

    def refresh_navigation(self, video_ids: Sequence[str]) -> None:
        """The navigation rows of these videos written again from the graph as it stands (a recovered write)."""
        if video_ids:
            self.store_navigation(video_ids, [g for g in map(self.video_graph, video_ids) if g is not None])

    def delete_derived(self, video_ids: Sequence[str]) -> None:
        """Delete these videos' rows from kuzu's own navigation tables, which memories written before
        ``navigation.sqlite`` have (inside the caller's transaction)."""
        self._outline = None
        for name in graph_rows.DERIVED:
            if self._has_rows(name):
                self._run(f"MATCH (n:{name}) WHERE n.video_id IN $vids DELETE n", {"vids": list(video_ids)})

    def derived_counts(self) -> dict[str, dict[str, int]]:
        """Per video, how many navigation rows each table holds (``memtools check`` compares them): those of
        ``navigation.sqlite``, else those kuzu's own tables keep for a video written before it. Raises
        ``sqlite3.Error`` when ``navigation.sqlite`` cannot be read."""
        counts: dict[str, dict[str, int]] = defaultdict(dict, self.navigation.counts())
        legacy: dict[str, dict[str, int]] = defaultdict(dict)
        for name in graph_rows.DERIVED:
            if self._has_rows(name):
                for vid, n in self._run(f"MATCH (n:{name}) RETURN n.video_id, count(n)"):
                    legacy[vid][name] = int(n)
        for vid, per_table in legacy.items():
            counts.setdefault(vid, per_table)
        return counts

    # --- reads --------------------------------------------------------------------------

    def get_many(self, node_ids: Iterable[str]) -> dict[str, Node]:
        by_kind: dict[NodeKind, list[str]] = defaultdict(list)
        for node_id in node_ids:
            kind = kind_of_id(node_id)
            if kind is not None:
                by_kind[kind].append(node_id)
        found: dict[str, Node] = {}
        for kind, ids in by_kind.items():
            if kind is NodeKind.SPEECH and not self._has_speech():
                continue
            table = TABLES[kind].name
            ids = list(dict.fromkeys(ids))
            if len(ids) > PK_LOOKUPS_MAX:
                rows = self._run(f"MATCH (n:{table}) WHERE n.id IN $ids RETURN n", {"ids": ids})
            else:  # kuzu plans `n.id IN $ids` as a full table scan; `{id: $id}` uses the primary key
                rows = [row for node_id in ids
                        for row in self._run(f"MATCH (n:{table} {{id: $id}}) RETURN n", {"id": node_id})]
            found.update((row[0]["id"], _decode(row[0])) for row in rows)
        return found

    def _outline_row(self, video_id: str) -> graph_rows.Outline | None:
        """The video's ``VideoOutline`` row (None for memories written before it); the last one is kept."""
        if self._outline is not None and self._outline[0] == video_id:
            return self._outline[1]
        found = self._navigation_row(graph_rows.OUTLINE, video_id)
        outline = graph_rows.Outline(*found) if found is not None else None
        if self.read_only:  # a writer's rows change under it
            self._outline = (video_id, outline)
        return outline

    def _navigation_row(self, table: str, key: str) -> tuple[str, ...] | None:
        """One navigation row's JSON columns: from ``navigation.sqlite``, else from kuzu's own table of that
        name (a video written before the file), else None."""
        found = self.navigation.row(table, key)
        if found is None and self._has_rows(table):
            wanted = ", ".join(f"n.{c}" for c in graph_rows.columns(table)[2:])
            rows = self._run(f"MATCH (n:{table} {{id: $id}}) RETURN {wanted}", {"id": key})
            found = tuple(rows[0]) if rows else None
        return found

    def _detail(self, macro_id: str) -> tuple[str, str] | None:
        """A macro event's ``MacroDetail`` row (children, edges), or None."""
        found = self._navigation_row(_DETAIL, macro_id)
        return (found[0], found[1]) if found is not None else None

    def _children(self, macro_id: str) -> dict[str, dict]:
        detail = self._detail(macro_id)
        return {row["id"]: row for row in json.loads(detail[0])} if detail is not None else {}

    def supers(self, video_id: str) -> list[SuperEvent]:
        outline = self._outline_row(video_id)
        if outline is not None:
            return outline.supers()
        rows = self._run("MATCH (n:SuperEvent) WHERE n.video_id = $vid RETURN n ORDER BY n.ordinal", {"vid": video_id})
        return [_decode(r[0]) for r in rows]  # type: ignore[misc]

    def macros_of_video(self, video_id: str) -> list[MacroEvent]:
        outline = self._outline_row(video_id)
        if outline is not None:
            return outline.macros()
        rows = self._run("MATCH (n:MacroEvent) WHERE n.video_id = $vid RETURN n ORDER BY n.ordinal", {"vid": video_id})
        return [_decode(r[0]) for r in rows]  # type: ignore[misc]

    def subgraph(self, macro_id: str) -> tuple[list[Node], list[tuple[str, str, str, str, str]]]:
        """A macro event's children (by id) and the edges among them (by source, target)."""
        detail = self._detail(macro_id)
        if detail is None:  # no row (yet): built from the video's graph, as the write builds it
            graph = self.video_graph(macro_id.split("/", 1)[0])
            rows = {row["id"]: row for row in _details(graph)} if graph is not None else {}
            if macro_id not in rows:
                return [], []
            detail = rows[macro_id]["children"], rows[macro_id]["edges"]
        children, edges = detail
        return [_decode(row) for row in json.loads(children)], [tuple(e) for e in json.loads(edges)]

    def edges(self, node_id: str, direction: str, categories: Sequence[str] | None = None,
              labels: Sequence[str] | None = None, limit: int = 200) -> list[EdgeRow]:
        """Edges at a node: ``direction`` is 'out', 'in' or 'both'."""
        kind = kind_of_id(node_id)
        if kind is None:
            return []
        found = self._navigation_row(graph_rows.EDGES, node_id)
        if found is not None:
            return [EdgeRow(*edge) for edge in graph_rows.read_edges(
                node_id, found[0], direction, categories, labels, limit, self._outline_row, self._children)]
        table = TABLES[kind].name
        params: dict[str, Any] = {"id": node_id}
        conditions = ["true"]
        if categories:
            conditions.append("r.category IN $cats")
            params["cats"] = list(categories)
        if labels:
            conditions.append("r.label IN $labels")
            params["labels"] = list(labels)
        where = " AND ".join(conditions)
        result: list[EdgeRow] = []
        # Sorted here, not by kuzu: ORDER BY over the unlabeled other end (any node table) made
        # kuzu materialise and sort whole node records, the slower half of get_relations.
        def ordered(rows: list[list[Any]]) -> list[list[Any]]:
            return sorted(rows, key=lambda row: (row[0], row[3]["id"]))[:limit]

        if direction in ("out", "both"):
            q = f"MATCH (n:{table} {{id: $id}})-[r:Rel]->(m) WHERE {where} RETURN r.category, r.label, r.description, m"
            for cat, label, desc, m in ordered(self._run(q, params)):
                result.append(EdgeRow(node_id, m["id"], EdgeCategory(cat), label, desc or "", _decode(m)))
        if direction in ("in", "both"):
            q = f"MATCH (m)-[r:Rel]->(n:{table} {{id: $id}}) WHERE {where} RETURN r.category, r.label, r.description, m"
            for cat, label, desc, m in ordered(self._run(q, params)):
                result.append(EdgeRow(m["id"], node_id, EdgeCategory(cat), label, desc or "", _decode(m)))
        return result

    def keyframes(self, video_id: str, start: float, end: float) -> list[Keyframe]:
        rows = self._run(
            "MATCH (k:Keyframe) WHERE k.video_id = $vid AND k.t >= $s AND k.t <= $e RETURN k ORDER BY k.t",
            {"vid": video_id, "s": float(start), "e": float(end)},
        )
        return [_decode(r[0]) for r in rows]  # type: ignore[misc]

    def speech(self, video_id: str, start: float, end: float, *, as_of: float | None = None,
               limit: int = 1000, speaker: str | None = None) -> list[Speech]:
        """Utterances of a video that overlap ``[start, end]`` (ending after ``start``) (and had ended
        by ``as_of``), in time order; only ``speaker``'s (any case) when given."""
        if not self._has_speech():
            return []
        # no NULL parameter: ladybug types an unbound NULL as BOOL ("Cannot compare DOUBLE and BOOL")
        params = {"vid": video_id, "s": float(start), "e": float(end),
                  "asof": math.inf if as_of is None else float(as_of), "limit": int(limit)}
        who = ""
        if speaker is not None:
            who, params["who"] = " AND lower(u.speaker) = $who", speaker.strip().lower()
        rows = self._run(
            "MATCH (u:Speech) WHERE u.video_id = $vid AND (u.t_end > $s OR u.t_start >= $s) AND u.t_start <= $e"
            f" AND u.t_end <= $asof{who} RETURN u ORDER BY u.t_start, u.id LIMIT $limit", params)
        return [_decode(r[0]) for r in rows]  # type: ignore[misc]

    def counts(self, video_id: str | None = None) -> dict[str, int]:
        counts: dict[str, int] = {}
        # the video condition only when there is one (no NULL parameters: see speech())
        params, node_cond, edge_cond = ({}, "", "") if video_id is None else (
            {"vid": video_id}, " WHERE n.video_id = $vid", " AND a.video_id = $vid")
        for table in self._tables():
            rows = self._run(f"MATCH (n:{table.name}){node_cond} RETURN count(n)", params)
            counts[table.kind.value] = int(rows[0][0])
        rows = self._run(f"MATCH (a)-[r:Rel]->(b) WHERE r.category <> 'hierarchy'{edge_cond} RETURN count(r)", params)
        counts["edges"] = int(rows[0][0])
        return counts

    def video_edges(self, video_ids: Sequence[str]) -> list[tuple[str, str, str]]:
        """(source, target, label) of every typed edge (not CONTAINS) of these videos, for graph walks."""
        return [(a, b, label) for a, b, label in self.typed_edges_of(video_ids, "a.id, b.id, r.label")]
