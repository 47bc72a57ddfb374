"""The tool core: navigation, search, traversal and inspect over a memory; results render to text."""

from memtools.errors import ToolError
from memtools.tools.core import MemoryTools
from memtools.tools.frame_results import FrameItem, Frames
from memtools.tools.invoke import ToolOutcome
from memtools.tools.results import (
    EdgeItem,
    MacroEvents,
    MacroItem,
    NodeItem,
    Relations,
    SearchHit,
    SearchResult,
    Subgraph,
    Summary,
    SuperEvents,
    TimeResult,
    VideoList,
)
from memtools.tools.search import SearchConfig
from memtools.tools.specs import TOOL_SPECS, ToolSpec

__all__ = [
    "EdgeItem", "FrameItem", "Frames", "MacroEvents", "MacroItem", "MemoryTools", "NodeItem", "Relations",
    "SearchConfig", "SearchHit", "SearchResult", "Subgraph", "SuperEvents", "Summary", "TOOL_SPECS",
    "TimeResult", "ToolError", "ToolOutcome", "ToolSpec", "VideoList",
]
