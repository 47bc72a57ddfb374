"""Copying a memory's graph between engines (``memtools migrate``).

The graph is the only engine-specific part of a memory: the lance tables, frames and work
folders are the same whatever the graph engine. ``export_graph`` reads every video back whole
(``GraphReads.video_graph``) into a JSON-lines file; ``import_graph`` writes that file into an
empty graph of another engine and records the engine in the manifest. kuzu and ladybug cannot
be imported in one process, so the two halves run in separate processes
(``memtools.cli.migrate`` runs them).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from memtools.errors import ConfigError, StoreError
from memtools.schema import VideoGraph
from memtools.store.catalog.manifest import read_manifest, write_manifest
from memtools.store.engines import graph_engine

IMPORT_BATCH = 50  # videos per graph transaction (one video can hold thousands of nodes)


def export_graph(folder: Path, out: Path, progress: Callable[[int], None] | None = None) -> int:
    """Every video of the memory's graph, one ``VideoGraph`` JSON per line; returns how many."""
    from memtools.store import Memory

    n = 0
    with Memory.open(folder) as memory, memory.reading() as graph, open(out, "w", encoding="utf-8") as handle:
        listed = set(memory.manifest.videos)
        for video_id in graph.video_ids():
            if video_id not in listed:
                continue  # not the manifest's: left to `memtools repair`, never copied
            video = graph.video_graph(video_id)
            if video is None:
                raise StoreError(f"the graph lists video {video_id!r} but cannot read it back; run memtools check")
            handle.write(video.model_dump_json() + "\n")
            n += 1
            if progress:
                progress(n)
    return n


def _read_graphs(path: Path) -> Iterator[VideoGraph]:
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield VideoGraph.model_validate_json(line)


def import_graph(folder: Path, graphs_file: Path, engine_name: str,
                 progress: Callable[[int], None] | None = None) -> int:
    """Write the exported videos into a new graph of ``engine_name`` in ``folder`` (whose manifest,
    tables and frames are already there) and switch the manifest to that engine; returns how many."""
    engine = graph_engine(engine_name)
    path = Path(folder) / engine.file_name
    if path.exists():
        raise ConfigError(f"{path} already exists; migrate into a new folder (--to), or remove it first")
    manifest = read_manifest(folder)
    graph = engine.open(path, read_only=False, buffer_pool_mb=512)
    n = 0
    try:
        graph.ensure_schema()
        batch: list[VideoGraph] = []
        for video in _read_graphs(graphs_file):
            batch.append(video)
            if len(batch) >= IMPORT_BATCH:
                n += _insert(graph, batch)
                batch = []
                if progress:
                    progress(n)
        if batch:
            n += _insert(graph, batch)
            if progress:
                progress(n)
    except BaseException:
        graph.close()
        _remove_graph(path)
        raise
    graph.close()
    manifest.graph_engine = engine.name
    write_manifest(folder, manifest)
    return n


def _insert(graph, batch: list[VideoGraph]) -> int:
    graph.begin()
    try:
        graph.insert(batch)
    except BaseException:
        with contextlib.suppress(StoreError):
            graph.rollback()
        raise
    graph.commit()
    graph.store_navigation([], batch)  # navigation.sqlite, once the graph's COMMIT has returned
    return len(batch)


def _remove_graph(path: Path) -> None:
    for leftover in (path, path.with_name(path.name + ".wal"), path.with_name(path.name + ".shadow")):
        leftover.unlink(missing_ok=True)
