"""Persistence: a memory folder holding a library of videos in a graph engine (structure) + lance (search).

``Memory`` and the contract types of ``memtools.store.base`` are what tools and front ends use;
the engine modules (``graph``, ``vectors``) stay behind them. Engine classes are still exported
here (importing ``memtools.store`` never loads a graph driver: ``memtools.store.engines`` imports
``kuzu`` or ``ladybug`` when a memory opens its graph)."""

from memtools.store.base import (
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
from memtools.store.graph import KuzuGraph
from memtools.store.manifest import Manifest, VideoEntry
from memtools.store.memory import Memory
from memtools.store.payload import payload
from memtools.store.vectors import LanceIndex

__all__ = ["EdgeRow", "GraphEngine", "GraphReads", "GraphStore", "Hit", "KuzuGraph", "LanceIndex", "Manifest",
           "Memory", "SearchFilter", "SearchMode", "SearchQuery", "VectorIndex", "VideoEntry", "VideoWrites",
           "payload"]

