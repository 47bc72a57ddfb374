"""The memtools tools as LangChain ``StructuredTool`` s, for your own LangGraph graphs.

    from langgraph.prebuilt import ToolNode
    from memtools.langchain import as_langchain_tools

    tools = as_langchain_tools(Memory.open("my-memory"))
    model = chat_model.bind_tools(tools)
    tool_node = ToolNode(tools)

Names, descriptions and argument schemas come from ``TOOL_SPECS`` (the JSON schema is the
argument model's, closed to other names). Arguments are checked by ``ToolSpec.invoke``, the
same strict check as the MCP server and the ORA loop: an unknown name or a wrong JSON type
(``"5"`` for an integer) is an error, never a silent conversion. Each tool returns the rendered
text to the model and the typed result as the ``ToolMessage.artifact``; ``inspect_frames``
returns text plus JPEG image blocks. A model-facing error (unknown id, bad window, busy
memory, bad arguments) becomes an error ``ToolMessage`` with the same words every front end
uses; developer errors (a broken store) propagate.
"""

from __future__ import annotations

import base64
from typing import Any

from langchain_core.tools import StructuredTool, ToolException

from memtools.store import Memory
from memtools.tools import TOOL_SPECS, MemoryTools, ToolOutcome, ToolSpec


def _error_text(exc: ToolException) -> str:
    return str(exc.args[0]) if exc.args else "the tool failed"


def _content(outcome: ToolOutcome) -> str | list[dict[str, Any]]:
    if not outcome.images:
        return outcome.text
    return [{"type": "text", "text": outcome.text},
            *({"type": "image", "base64": base64.b64encode(b).decode("ascii"), "mime_type": "image/jpeg"}
              for b in outcome.images)]


def _schema(spec: ToolSpec) -> dict[str, Any]:
    schema = spec.args.model_json_schema()
    schema["additionalProperties"] = False
    return schema


def _make(spec: ToolSpec, tools: MemoryTools) -> StructuredTool:
    def run(**kwargs: Any) -> tuple[str | list[dict[str, Any]], dict[str, Any]]:
        outcome = spec.invoke(tools, kwargs)
        if not outcome.ok:
            raise ToolException(outcome.text)
        return _content(outcome), outcome.data or {}

    # A JSON-schema args_schema: LangChain passes the model's arguments through unconverted, so
    # ToolSpec.invoke sees (and strictly checks) exactly what the model sent.
    return StructuredTool.from_function(
        func=run, name=spec.name, description=spec.description, args_schema=_schema(spec),
        response_format="content_and_artifact", handle_tool_error=_error_text,
        metadata={"memtools_group": spec.group},
    )
def as_langchain_tools(memory_or_tools: Memory | MemoryTools, names: list[str] | None = None) -> list[StructuredTool]:
    """One ``StructuredTool`` per memtools tool (or per name in ``names``), in catalogue order."""
    tools = memory_or_tools if isinstance(memory_or_tools, MemoryTools) else MemoryTools(memory_or_tools)
    unknown = [n for n in names or [] if n not in TOOL_SPECS]
    if unknown:
        raise ValueError(f"unknown tool names {unknown}; choose from {', '.join(TOOL_SPECS)}")
    return [_make(spec, tools) for name, spec in TOOL_SPECS.items() if names is None or name in names]


__all__ = ["as_langchain_tools"]
