"""The memtools tools as an MCP server (official ``mcp`` SDK: 2.x ``MCPServer`` or 1.x ``FastMCP``, see ``sdk``).

A thin adapter over ``memtools.tools``: every tool is generated from ``TOOL_SPECS``
(typed, bounded parameters; read-only annotations; rendered text plus structured output),
with resources for the video list, summaries and frames, and a prompt carrying the
MEMDREAMER answering strategy::

    from memtools.mcp import build_server
    build_server("my-memory").run()                        # stdio
    build_server("my-memory").run_http("127.0.0.1", 8765)  # streamable HTTP at /mcp, pages at /, guarded

From a shell: ``memtools serve --memory DIR [--transport http --host H --port P]`` or ``memtools-mcp``
with the same options. Many server processes may share one memory while another process
writes to it: a call that meets the writer gets "memory is being updated, try again in a
few seconds", and new data shows up without a restart.

Arguments are strict (unknown names and wrong JSON types are errors, the input schemas say
``additionalProperties: false``); an error result is one line for the model, with its kind
(``bad-arguments``, ``not-found``, ``busy``, ``unavailable``) in ``_meta["memtools/errorKind"]``.
"""

from memtools.store.tables.lance_import import defer_package_init

# The SDK's package ``__init__`` imports its client as well as its server (~0.4 s of a server's start
# on a busy 2-core machine); a server needs ``mcp.types`` and ``mcp.server``. A name of the package
# itself (``from mcp import ClientSession``) still loads it whole, on first use.
defer_package_init("mcp")

from memtools.mcp.adapter import FrameOut, FramesOut  # noqa: E402 - after the SDK's package is registered
from memtools.mcp.limits import IMAGE_BYTES_LIMIT, MAX_RESULT_CHARS, STRUCTURED_LIMIT, TEXT_LIMIT  # noqa: E402
from memtools.mcp.prompts import INSTRUCTIONS  # noqa: E402
from memtools.mcp.run import main, serve  # noqa: E402
from memtools.mcp.server import build_server  # noqa: E402

__all__ = [
    "IMAGE_BYTES_LIMIT", "INSTRUCTIONS", "MAX_RESULT_CHARS", "STRUCTURED_LIMIT", "TEXT_LIMIT", "FrameOut",
    "FramesOut", "build_server", "main", "serve",
]
