"""The tools that change the memory (``ToolSpec(..., write=True)``), apart from the read catalogue ``TOOL_SPECS``.

The MCP server serves them only when started with ``--allow-writes``, and lists and runs them only
for a caller that may write (``memtools.mcp.permission``). Front ends that only read (the LangChain
tools, the ORA loop, ``memtools tool``) never see them. Each runs through ``ToolSpec.invoke`` like a
read tool; it calls ``memtools.tools.caller.require_write()`` first and records the change under
that caller (``memtools.changes``).
"""

from __future__ import annotations

from memtools.tools.specs import ToolSpec

WRITE_TOOL_SPECS: dict[str, ToolSpec] = {}
"""Filled by ``memtools.tools.write_tools`` (imported at the end of this module)."""


def register(*specs: ToolSpec) -> None:
    """Add write tools to the catalogue (each must say ``write=True``)."""
    for spec in specs:
        if not spec.write:
            raise ValueError(f"{spec.name} is not marked write=True")
        WRITE_TOOL_SPECS[spec.name] = spec


__all__ = ["WRITE_TOOL_SPECS", "register"]
