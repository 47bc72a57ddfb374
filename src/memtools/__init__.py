"""memtools: long-term hierarchical graph memory of videos for LLM agents.

    from memtools import Memory, MemoryTools
    with Memory.open("my-memory") as memory:
        print(MemoryTools(memory).get_summary().render())

Front ends live in submodules so importing memtools stays light: ``memtools.agent`` (the ORA
loop in LangGraph), ``memtools.langchain`` (LangChain tools), ``memtools.mcp`` (the MCP
server), ``memtools.builder`` (video -> memory), ``memtools.importers`` (captions, MEMDREAMER) and
``memtools.archive`` (export a memory as one portable archive, import it again).
"""

from memtools.errors import MemtoolsError, ToolError
from memtools.schema import SCHEMA_VERSION, VideoGraph
from memtools.store import Memory
from memtools.tools import TOOL_SPECS, MemoryTools, SearchConfig
from memtools.version import __version__

__all__ = [
    "SCHEMA_VERSION",
    "TOOL_SPECS",
    "Memory",
    "MemoryTools",
    "MemtoolsError",
    "SearchConfig",
    "ToolError",
    "VideoGraph",
    "__version__",
]
