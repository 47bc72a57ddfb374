"""The engine factory: which graph engine and vector index a memory uses, from its manifest.

The manifest records ``graph_engine`` ("kuzu", the default, or "ladybug"). Both run the same
Cypher through ``KuzuGraph``; they differ in their driver module, their file and whether
readers may stay open beside a writer. ``kuzu`` and ``ladybug`` cannot be imported in one
process (both register the same native types), so the driver is imported only when a memory
that uses it opens its graph, and a process that has one refuses the other with a clear error.
"""

from __future__ import annotations

from pathlib import Path

from memtools.store.catalog.manifest import Manifest
from memtools.store.graph.engines import DEFAULT_GRAPH_ENGINE, GRAPH_ENGINES, CypherEngine, graph_engine
from memtools.store.tables.vectors import LanceIndex

__all__ = ["DEFAULT_GRAPH_ENGINE", "GRAPH_ENGINES", "CypherEngine", "graph_engine", "graph_file", "vector_index"]


def vector_index(folder: Path, manifest: Manifest) -> LanceIndex:
    """The lance tables of a memory folder (in ``vectors/`` or on object storage)."""
    from memtools.store.integrity import guarded_index
    from memtools.store.tables.location import tables_location

    return guarded_index.GuardedIndex(tables_location(folder, manifest.tables), manifest.embedder.dim, folder)


def graph_file(folder: Path, manifest: Manifest) -> Path:
    return Path(folder) / graph_engine(manifest.graph_engine).file_name
