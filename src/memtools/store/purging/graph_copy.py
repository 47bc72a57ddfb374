"""Rewriting the graph engine's file so that deleted rows leave no bytes behind (a purge, ``memtools.changes.purge``).

kuzu 0.11.3 and ladybug free a deleted row's pages for reuse, but the bytes stay in ``graph.kuzu`` /
``graph.lbug`` until something overwrites them (measured: every caption of a forgotten video is still in the
file after its ``DETACH DELETE`` and the checkpoint). The engines' ``EXPORT DATABASE`` cannot help: ladybug
0.22 refuses a REL TABLE GROUP ("rel table Rel connects multiple node pairs"). So the file is rewritten here,
through the engine's own API, table by table: the schema the old file holds (node tables with their primary
keys, each rel table with every FROM/TO pair), then every node table and every rel pair copied as Arrow
(``COPY ... FROM``), into a fresh file beside the old one (``<graph>.purge-copy``). The copy is verified (the
rows of every node table and of every rel pair, counted in both) and checkpointed, then renamed over the old
file: one ``os.replace``, so a kill leaves the old graph or the new one, never half. A copy a kill left
beside it is removed before the next one starts (``remove_copy``).

It runs with the writers' lock held (``Memory._writing``: the intent file makes kuzu's readers step aside)
after the write that deleted the rows has committed; the old file is closed cleanly (no write-ahead log left)
before it is replaced.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtools.errors import StoreError
from memtools.store.durable import sync_folder
from memtools.store.faults import fault_point

if TYPE_CHECKING:
    from memtools.store.base import GraphEngine, GraphStore

COPY_SUFFIX = ".purge-copy"
ENGINE_SIDE_FILES = (".wal", ".shadow", ".wal.checkpoint")
ARROW_CHUNK = 50_000


def copy_path(graph_file: Path) -> Path:
    return graph_file.with_name(graph_file.name + COPY_SUFFIX)


def remove_copy(graph_file: Path) -> list[str]:
    """Remove a copy (and its engine side files) a rewrite left beside ``graph_file``; returns the names removed."""
    copy = copy_path(graph_file)
    removed = []
    for path in (copy, *(copy.with_name(copy.name + s) for s in ENGINE_SIDE_FILES)):
        if path.exists():
            path.unlink()
            removed.append(path.name)
    return removed


def _run(graph: GraphStore, query: str) -> list[list[Any]]:
    run = getattr(graph, "_run", None)
    if run is None:
        raise StoreError(f"the graph store {type(graph).__name__} cannot be rewritten")
    return run(query)


def _arrow(graph: GraphStore, query: str):
    conn = getattr(graph, "_conn", None)
    if conn is None:
        raise StoreError("graph store is closed")
    try:
        return conn.execute(query).get_as_arrow(ARROW_CHUNK)
    except RuntimeError as exc:
        raise StoreError(f"reading the graph for its rewrite failed: {exc}") from exc


def _schema(graph: GraphStore) -> tuple[dict[str, tuple[list[tuple[str, str]], str]], dict[str, Any]]:
    """Node tables (name -> (columns, primary key)) and rel tables (name -> (properties, [(from, to), ...]))."""
    nodes: dict[str, tuple[list[tuple[str, str]], str]] = {}
    rels: dict[str, Any] = {}
    for row in _run(graph, "CALL show_tables() RETURN name, type"):
        name, kind = str(row[0]), str(row[1]).upper()
        info = _run(graph, f"CALL table_info('{name}') RETURN *")
        if kind == "NODE":
            columns = [(str(r[1]), str(r[2])) for r in info]
            key = next((str(r[1]) for r in info if r[4] is True), columns[0][0])
            nodes[name] = (columns, key)
        elif kind == "REL":
            props = [(str(r[1]), str(r[2])) for r in info]
            pairs = [(str(r[0]), str(r[1])) for r in _run(graph, f"CALL show_connection('{name}') RETURN *")]
            rels[name] = (props, pairs)
        else:
            raise StoreError(f"the graph holds a {kind} table {name!r} that a purge cannot copy; nothing was changed")
    return nodes, rels


def _create(graph: GraphStore, nodes: dict, rels: dict) -> None:
    for name, (columns, key) in nodes.items():
        cols = ", ".join(f"{c} {t}" for c, t in columns)
        _run(graph, f"CREATE NODE TABLE {name}({cols}, PRIMARY KEY({key}))")
    for name, (props, pairs) in rels.items():
        ends = ", ".join(f"FROM {a} TO {b}" for a, b in pairs)
        extra = "".join(f", {c} {t}" for c, t in props)
        _run(graph, f"CREATE REL TABLE {name}({ends}{extra})")


def _counts(graph: GraphStore, nodes: dict, rels: dict) -> dict[str, int]:
    out = {name: int(_run(graph, f"MATCH (n:{name}) RETURN count(n)")[0][0]) for name in nodes}
    for name, (_, pairs) in rels.items():
        for a, b in pairs:
            out[f"{name}:{a}->{b}"] = int(_run(graph, f"MATCH (:{a})-[r:{name}]->(:{b}) RETURN count(r)")[0][0])
    return out


def _copy_rows(old: GraphStore, new: GraphStore, nodes: dict, rels: dict) -> None:
    copy = getattr(new, "_run", None)
    assert copy is not None
    for name, (columns, _) in nodes.items():
        rows = _arrow(old, f"MATCH (n:{name}) RETURN " + ", ".join(f"n.{c} AS {c}" for c, _ in columns))
        if rows.num_rows:
            copy(f"COPY {name} FROM $rows", {"rows": rows})
    for name, (props, pairs) in rels.items():
        for a, b in pairs:
            key_a, key_b = nodes[a][1], nodes[b][1]
            extra = "".join(f", r.{c} AS {c}" for c, _ in props)
            ends = f"a.{key_a} AS `from`, b.{key_b} AS `to`"
            rows = _arrow(old, f"MATCH (a:{a})-[r:{name}]->(b:{b}) RETURN {ends}{extra}")
            if rows.num_rows:
                copy(f"COPY {name} FROM $rows (from='{a}', to='{b}')", {"rows": rows})


def rewrite(engine: GraphEngine, graph_file: Path, old: GraphStore) -> dict[str, int]:
    """Copy what ``old`` (the open read-write graph at ``graph_file``) holds into a fresh file, verify it, close
    ``old`` and put the copy in its place. Returns the rows of each table copied. The caller holds the writers'
    lock; on any failure the old file stays and the copy is removed."""
    remove_copy(graph_file)
    nodes, rels = _schema(old)
    before = _counts(old, nodes, rels)
    target = copy_path(graph_file)
    try:
        new = engine.open(target, read_only=False, buffer_pool_mb=512)
        try:
            _create(new, nodes, rels)
            _copy_rows(old, new, nodes, rels)
            after = _counts(new, nodes, rels)
            if after != before:
                wrong = sorted(k for k in before if before[k] != after.get(k))
                raise StoreError(f"the rewritten graph does not hold what the old one does ({', '.join(wrong)}); "
                                 "the old graph was kept")
            _run(new, "CHECKPOINT")
        finally:
            new.close()
        fault_point("purge-graph-copied")
        old.close()
        left = [s for s in ENGINE_SIDE_FILES if graph_file.with_name(graph_file.name + s).exists()]
        if left or any(target.with_name(target.name + s).exists() for s in ENGINE_SIDE_FILES):
            raise StoreError(f"the graph engine left its log beside {graph_file.name} ({', '.join(left)}); "
                             "run memtools recover, then the purge again")
        os.replace(target, graph_file)
        sync_folder(graph_file.parent)
    except BaseException:
        remove_copy(graph_file)
        raise
    fault_point("purge-graph-swapped")
    return {k: v for k, v in before.items() if v}




def rewrite_memory(memory: Any) -> dict[str, int]:
    """Rewrite ``memory``'s graph file (``rewrite``) under its writers' lock, after a killed write was finished."""
    with memory._writing() as graph:
        return rewrite(memory.graph_engine, memory.graph_file, graph)


__all__ = ["COPY_SUFFIX", "copy_path", "remove_copy", "rewrite", "rewrite_memory"]
