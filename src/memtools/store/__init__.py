"""Persistence: a memory folder holding a library of videos in kuzu (structure) + lance (search)."""

from memtools.store.graph import EdgeRow, KuzuGraph
from memtools.store.manifest import Manifest, VideoEntry
from memtools.store.memory import Memory
from memtools.store.payload import payload
from memtools.store.vectors import Hit, LanceIndex, SearchMode

__all__ = ["EdgeRow", "Hit", "KuzuGraph", "LanceIndex", "Manifest", "Memory", "SearchMode", "VideoEntry", "payload"]
