"""Persistence: a memory folder holding a library of videos in a graph engine (structure) + lance (search).

``Memory`` and the contract types of ``memtools.store.base`` are what tools and front ends use;
the engine modules (``graph``, ``vectors``) stay behind them. Engine classes are still exported
here (importing ``memtools.store`` never loads a graph driver: ``memtools.store.engines`` imports
``kuzu`` or ``ladybug`` when a memory opens its graph)."""

import os

# lance's Rust logger reads its level once, when ``lancedb`` is first imported (a front end may import
# it early, on a thread): warnings such as a lost full-text index's, with Rust source paths, must not
# reach a user's terminal. ``memtools check`` names that damage in plain words instead.
os.environ.setdefault("LANCEDB_LOG", "error")

from memtools.store.base import (  # noqa: E402 - after the log level, before lancedb can be imported
    EdgeRow,
    GraphEngine,
    GraphReads,
    GraphStore,
    Hit,
    SearchFilter,
    SearchMode,
    SearchQuery,
    VectorIndex,
    VideoWrites,
)
from memtools.store.catalog.manifest import Manifest, VideoEntry
from memtools.store.graph.cypher import KuzuGraph
from memtools.store.memory import Memory
from memtools.store.tables.payload import payload
from memtools.store.tables.vectors import LanceIndex

__all__ = ["EdgeRow", "GraphEngine", "GraphReads", "GraphStore", "Hit", "KuzuGraph", "LanceIndex", "Manifest",
           "Memory", "SearchFilter", "SearchMode", "SearchQuery", "VectorIndex", "VideoEntry", "VideoWrites",
           "payload"]

