"""The memtools tools as LangChain ``StructuredTool`` s, for your own LangGraph graphs.

    from langgraph.prebuilt import ToolNode
    from memtools.langchain import as_langchain_tools

    tools = as_langchain_tools(Memory.open("my-memory"))
    model = chat_model.bind_tools(tools)
    tool_node = ToolNode(tools)

Names, descriptions and argument schemas come from ``TOOL_SPECS``. Each tool returns the
rendered text to the model and the typed result as the ``ToolMessage.artifact``;
``inspect_frames`` returns text plus JPEG image blocks. A ``ToolError`` (unknown id, bad
window, ...) becomes an error ``ToolMessage`` the model reads and acts on; developer errors
(a broken store) propagate.
"""

from __future__ import annotations

import base64
from typing import Any

from langchain_core.tools import StructuredTool, ToolException
from pydantic import ValidationError

from memtools.errors import ToolError
from memtools.store import Memory
from memtools.tools import TOOL_SPECS, Frames, MemoryTools, ToolSpec

ERROR_PREFIX = "Tool error: "


def _error_text(exc: ToolException) -> str:
    return ERROR_PREFIX + (str(exc.args[0]) if exc.args else "the tool failed")


def _validation_text(exc: ValidationError) -> str:
    problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors()[:4])
    return f"{ERROR_PREFIX}bad arguments: {problems}"


def _content(result: Any) -> str | list[dict[str, Any]]:
    text = result.render()
    if isinstance(result, Frames) and result.images:
        return [{"type": "text", "text": text},
                *({"type": "image", "base64": base64.b64encode(b).decode("ascii"), "mime_type": "image/jpeg"}
                  for b in result.images)]
    return text


def _make(spec: ToolSpec, tools: MemoryTools) -> StructuredTool:
    def run(**kwargs: Any) -> tuple[str | list[dict[str, Any]], dict[str, Any]]:
        try:
            result = spec.call(tools, kwargs)
        except ToolError as exc:
            raise ToolException(str(exc)) from exc
        return _content(result), result.model_dump(mode="json")

    return StructuredTool.from_function(
        func=run, name=spec.name, description=spec.description, args_schema=spec.args,
        response_format="content_and_artifact", handle_tool_error=_error_text, handle_validation_error=_validation_text,
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
