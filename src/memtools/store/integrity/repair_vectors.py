"""``memtools repair`` for the ``nodes`` and ``entities`` tables: their rows derived again from the graph.

A whole table (missing, unreadable, the wrong width, rows without vectors, duplicates) is rebuilt
aside, checked and swapped in (``table_swap``): the old one stays untouched until its replacement
is known good. The rows of a few videos are replaced in place, where the lance versions recorded
by ``repair`` can undo them. Indexes are left to ``repair``'s last step.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtools.store.integrity.table_swap import AsideTable, RebuildFailed
from memtools.store.problems import Problem
from memtools.store.tables.entities import entity_rows
from memtools.store.tables.entity_index import entities_schema
from memtools.store.tables.payload import index_rows
from memtools.store.tables.vectors import nodes_schema

if TYPE_CHECKING:
    from memtools.store.base import GraphStore
    from memtools.store.catalog.parts import MemoryParts

VIDEOS_PER_WRITE = 50


def rebuild_vectors(memory: MemoryParts, kuzu: GraphStore, ready: list[str], damage: list[Problem], done: list[str],
                    say: Callable[[str], None], swaps: list[AsideTable]) -> None:
    """Derive the damaged rows again: whole tables aside, a few videos in place."""
    whole = {("nodes" if p.part == "vectors" else p.part) for p in damage if p.video_id == ""}
    if "nodes" in whole:
        whole.add("entities")  # derived from the same rows: rebuilt with them (a lost vectors/ lost both)
    if whole:
        _rebuild_whole(memory, kuzu, ready, sorted(whole), done, say, swaps)
    if "nodes" in whole:
        return  # every video's rows are new
    index = memory.vectors_unchecked
    todo = sorted({p.video_id for p in damage if p.video_id in ready})
    stale = sorted({p.video_id for p in damage if p.video_id and p.video_id not in ready})
    if stale:
        index.replace_videos(stale, [])
        memory.entities.replace_videos(stale, [])
        done.append(f"removed the vector rows of {len(stale)} video(s) the memory does not hold")
    written = 0
    for start in range(0, len(todo), VIDEOS_PER_WRITE):
        chunk = todo[start:start + VIDEOS_PER_WRITE]
        rows, profiles = _rows(memory, kuzu, chunk, {})
        index.replace_videos(chunk, rows)
        if "entities" not in whole:
            memory.entities.replace_videos(chunk, profiles)  # derived from the same graph, so rebuilt with it
        written += len(rows)
        say(f"vectors: {start + len(chunk)}/{len(todo)} video(s)")
    if todo:
        done.append(f"rebuilt {written} vector row(s) of {len(todo)} video(s) from the graph")


def _rows(memory: MemoryParts, kuzu: GraphStore, videos: list[str], cache: dict[str, object],
          entities_only: bool = False) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ``nodes`` rows and the ``entities`` rows of these videos, with vectors."""
    graphs = [g for g in (kuzu.video_graph(v) for v in videos) if g is not None]
    rows = index_rows(graphs)
    if entities_only:
        rows = [r for r in rows if r["kind"] == "entity"]
    memory._embed_rows(rows, cache)
    profiles = entity_rows(graphs, {r["id"]: r["vector"] for r in rows if r["kind"] == "entity"})
    memory._embed_rows(profiles, cache)
    return rows, profiles


def _rebuild_whole(memory: MemoryParts, kuzu: GraphStore, ready: list[str], tables: list[str], done: list[str],
                   say: Callable[[str], None], swaps: list[AsideTable]) -> None:
    index = memory.vectors_unchecked
    dim = memory.embedder.dim
    schemas = {"nodes": nodes_schema(dim), "entities": entities_schema(dim)}
    folder = None if index.remote else Path(index.path)
    aside = {name: AsideTable(index._db, name, schemas[name], folder) for name in tables}
    ids: dict[str, list[str]] = {name: [] for name in tables}
    cache: dict[str, object] = {}
    try:
        for start in range(0, len(ready), VIDEOS_PER_WRITE):
            chunk = ready[start:start + VIDEOS_PER_WRITE]
            rows, profiles = _rows(memory, kuzu, chunk, cache, entities_only="nodes" not in tables)
            for name, batch in (("nodes", rows), ("entities", profiles)):
                if name in aside:
                    aside[name].add(batch)
                    ids[name] += [r["id"] for r in batch]
            say(f"{' and '.join(tables)}: {start + len(chunk)}/{len(ready)} video(s)")
        for name, table in aside.items():
            table.verify(ids[name], dim)
    except BaseException:
        for table in aside.values():
            table.discard()
        raise
    for name, table in aside.items():
        if name == "entities" and not ids[name] and not _has(index, name):
            table.discard()  # no video has entities and there was no table: none is made
            continue
        table.swap_in()
        swaps.append(table)
    index._nodes = None
    index.refresh()
    memory.entities._table = None
    for name in tables:
        what = "vector rows" if name == "nodes" else "entity profiles"
        done.append(f"rebuilt the {name} table aside from the graph ({len(ids[name])} {what} of {len(ready)} "
                    "video(s)), checked it and swapped it in")


def _has(index: Any, name: str) -> bool:
    return name in index._db.list_tables().tables


__all__ = ["RebuildFailed", "rebuild_vectors"]
