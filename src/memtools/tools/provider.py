"""What front ends call to get the ``MemoryTools`` of one request: a tools provider.

A provider is a callable returning the ``MemoryTools`` to use (the MCP server's ``LazyTools``).
One that may change what it returns while requests run (a read replica moving to a new version,
``memtools.mcp.replica_serving``) also has ``hold()``, a context manager that keeps the returned tools
open until the request ends. ``held(provider)`` is the one way to use either.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memtools.tools.core import MemoryTools

ToolsProvider = Callable[[], "MemoryTools"]


@contextlib.contextmanager
def held(tools: ToolsProvider) -> Iterator[MemoryTools]:
    """The provider's tools for one request, kept open (where the provider can switch) until it ends."""
    hold = getattr(tools, "hold", None)
    if hold is None:
        yield tools()
        return
    with hold() as current:
        yield current
