"""``ManyServer``: one MCP server in front of the memories of ``memtools.mcp.many.registry``.

- tools: the memtools tools, each with a required ``memory`` argument, plus ``list_memories``; a call
  goes to that memory's own server without the ``memory`` argument, as the request's caller with the
  write permission it has there (``memtools.mcp.many.access``), and the ``memtools://`` links of its
  result name the memory;
- resources: ``memtools://memories`` (the caller's memories) and each memory's resources under
  ``memtools://NAME/...``; templates ``memtools://{memory}/videos/...``;
- completions: ``memory`` completes to the caller's memories, every other argument from the memory
  given in the context (nothing without one);
- the prompt ``answer_video_question`` takes the memory too.

A memory the caller may not read is refused exactly like one that does not exist: the same error, kind
and wording, with the name asked in it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any
from urllib.parse import unquote

from mcp.types import CallToolResult, Completion, Resource, ResourceTemplate, TextContent, ToolAnnotations
from mcp.types import Tool as MCPTool
from pydantic import ConfigDict, Field, ValidationError, create_model

from memtools.mcp import prompts, uris
from memtools.mcp.adapter import ERROR_KIND_META, sendable, sendable_text
from memtools.mcp.completions import MAX_VALUES, complete
from memtools.mcp.many.access import caller_for, granted, may_read, may_write
from memtools.mcp.many.registry import Memories, Served
from memtools.mcp.sdk import Server, invalid_params
from memtools.tools import ToolOutcome
from memtools.tools.caller import acting_as
from memtools.tools.invoke import describe_errors
from memtools.tools.provider import held
from memtools.tools.text import clip

SCHEME = "memtools://"
MEMORIES_URI = "memtools://memories"
LIST_MEMORIES = "list_memories"
MEMORY_ARGUMENT = {"type": "string", "description": "The memory to use: one of the names list_memories gives."}
UNKNOWN_MEMORY = "unknown memory {name}: call list_memories for the memories you may use"
NO_MEMORY = "memory: give the memory to use (a name from list_memories), e.g. memory='home'"
MANY_INSTRUCTIONS = """

This server holds several memories. Call list_memories first; every other tool takes memory=NAME (one of those
names), and resources are memtools://NAME/videos/...
"""


def shown_name(name: object) -> str:
    """A memory name as an error message quotes it (escaped, cut short)."""
    return repr(clip(sendable_text(name), 80)) if isinstance(name, str) else json.dumps(name, default=str)


def in_memory(uri: str, name: str) -> str:
    """``memtools://videos/...`` of memory ``name`` as the many-memory server names it."""
    return SCHEME + name + "/" + uri[len(SCHEME):] if uri.startswith(SCHEME) else uri


def _named(value: Any, name: str) -> Any:
    """``value`` (a result as JSON) with every ``memtools://`` link naming the memory."""
    if isinstance(value, str):
        return value.replace(SCHEME + "videos", SCHEME + name + "/videos")
    if isinstance(value, dict):
        return {k: _named(v, name) for k, v in value.items()}
    if isinstance(value, list):
        return [_named(v, name) for v in value]
    return value


def _error(tool: str, kind: Any, message: str) -> CallToolResult:
    outcome = ToolOutcome.failure(tool, kind, message)
    return CallToolResult(content=[TextContent(type="text", text=outcome.text)], isError=True,
                          _meta={ERROR_KIND_META: kind})


def answer_video_question(
    question: Annotated[str, Field(description="The question to answer, with its answer options if it has any.")],
    memory: Annotated[str, Field(description="The memory to read (a name from list_memories).")],
    video_id: Annotated[str | None, Field(description="The video it is about (an id from list_videos); omit it "
                                          "to let the model find the video.")] = None,
) -> str:
    """Answer a question about a video of one memory by exploring it step by step (the MEMDREAMER ORA strategy)."""
    return (prompts.answer_video_question(question, video_id)
            + f"\nEvery tool call takes memory={memory!r}: the memory this question is about.")


PROMPT_ARGUMENTS = create_model(
    "answer_video_question_arguments", __config__=ConfigDict(extra="forbid", strict=True),
    question=(str, ...), memory=(str, ...), video_id=(str | None, None))


class ManyServer(Server):
    """The SDK's server routing every request to the memory it names (see the module docstring)."""

    def __init__(self, memories: Memories, *, allow_writes: bool, tool_prefix: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.memories = memories
        self.allow_writes = allow_writes
        self.tool_prefix = tool_prefix
        self.jobs: Any = None  # each memory's server has its own

    def write_tool_names(self) -> frozenset[str]:
        """None for the HTTP guard to refuse up front: whether a token may write depends on the memory named in the
        call, which this server checks (``memtools.mcp.many.access``)."""
        return frozenset()

    def visible(self) -> dict[str, Served]:
        """The memories the request's caller may read, by name."""
        scopes = granted()
        return {name: one for name, one in self.memories.all().items() if may_read(scopes, name)}

    # --- tools ---------------------------------------------------------------------------------

    def _list_memories_tool(self) -> MCPTool:
        return MCPTool(name=self.tool_prefix + LIST_MEMORIES, title="List memories",
                       description="The memories this server lets you use, by name, and whether you may change "
                                   "each. Every other tool takes one of these names as its memory argument.",
                       inputSchema={"type": "object", "properties": {}, "additionalProperties": False},
                       annotations=ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True,
                                                   openWorldHint=False))

    async def list_tools(self) -> list[MCPTool]:
        """``list_memories`` and every tool some memory of the caller's offers it, each with a ``memory`` argument."""
        listed: dict[str, MCPTool] = {}
        for name, one in self.visible().items():
            with acting_as(caller_for(name, self.allow_writes)):
                for tool in await one.server.list_tools():
                    listed.setdefault(tool.name, tool)
        out = [self._list_memories_tool()]
        for tool in listed.values():
            data = tool.model_dump(by_alias=True, exclude_none=True)
            if isinstance(data.get("_meta"), dict):  # the timeline app is one memory's server's (it names no memory)
                data["_meta"] = {k: v for k, v in data["_meta"].items() if k != "ui"} or None
            schema = dict(data["inputSchema"])
            schema["properties"] = {"memory": MEMORY_ARGUMENT, **schema.get("properties", {})}
            schema["required"] = ["memory", *[r for r in schema.get("required", []) if r != "memory"]]
            out.append(MCPTool.model_validate({**data, "inputSchema": schema}))
        return out

    def _memories_result(self) -> CallToolResult:
        scopes = granted()
        rows = [{"name": name, "may_write": self.allow_writes and may_write(scopes, name)}
                for name in sorted(self.visible())]
        lines = [f"- {r['name']}" + (" (you may change it)" if r["may_write"] else "") for r in rows]
        text = ("Memories you may use (pass one as memory=NAME):\n" + "\n".join(lines)) if rows else \
            "No memory is open to you on this server."
        return CallToolResult(content=[TextContent(type="text", text=text)], structuredContent={"memories": rows})

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """Route the call to the memory its ``memory`` argument names (refused like an unknown one if hidden)."""
        tool = name[len(self.tool_prefix):] if name.startswith(self.tool_prefix) else name
        if tool == LIST_MEMORIES:
            if arguments:
                return _error(LIST_MEMORIES, "bad-arguments", f"{LIST_MEMORIES} takes no arguments")
            return self._memories_result()
        if not isinstance(arguments, dict) or not isinstance(arguments.get("memory"), str):
            return sendable(_error(sendable_text(tool), "bad-arguments", NO_MEMORY))
        memory = arguments["memory"]
        one = self.visible().get(memory)
        if one is None:
            return sendable(_error(sendable_text(tool), "not-found", UNKNOWN_MEMORY.format(name=shown_name(memory))))
        rest = {k: v for k, v in arguments.items() if k != "memory"}
        with acting_as(caller_for(memory, self.allow_writes)):
            result = await one.server.call_tool(name, rest, context)
        if isinstance(result, CallToolResult):
            return CallToolResult.model_validate(_named(result.model_dump(by_alias=True, exclude_none=True), memory))
        return result

    # --- resources ------------------------------------------------------------------------------

    async def list_resources(self) -> list[Resource]:
        out = [Resource(uri=MEMORIES_URI, name="memories", title="Memories", mimeType="application/json",
                        description="The memories this server lets you use, by name.")]
        for name, one in self.visible().items():
            with acting_as(caller_for(name, self.allow_writes)):
                listed = await one.server.list_resources()
            for resource in listed:
                data = resource.model_dump(by_alias=True, exclude_none=True, mode="json")
                if str(data["uri"]).startswith(SCHEME):
                    out.append(Resource.model_validate({**data, "uri": in_memory(str(data["uri"]), name),
                                                        "name": f"{name}: {data['name']}"}))
        return out

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        """Each memory's templates with the memory first (``memtools://{memory}/videos/{video_id}/summary``); they
        are the same for every memory and name none."""
        served = list(self.memories.all().values())
        if not served:
            return []
        out = [ResourceTemplate(uriTemplate=in_memory(uris.VIDEOS, "{memory}"), name="videos",
                                title="Videos in a memory", mimeType="application/json",
                                description="Every video in the memory: id, title, duration, build status and node "
                                            "counts.")]
        for template in await served[0].server.list_resource_templates():
            data = template.model_dump(by_alias=True, exclude_none=True, mode="json")
            if data["uriTemplate"].startswith(SCHEME):
                out.append(ResourceTemplate.model_validate({**data, "uriTemplate": in_memory(data["uriTemplate"],
                                                                                             "{memory}")}))
        return out

    async def read_resource(self, uri: Any, context: Any = None) -> Any:
        text = str(uri)
        if text == MEMORIES_URI:
            return await super().read_resource(uri, context)
        name, _, rest = text[len(SCHEME):].partition("/") if text.startswith(SCHEME) else ("", "", "")
        one = self.visible().get(unquote(name)) if rest else None
        if one is None:
            raise invalid_params(f"Unknown resource: {sendable_text(text)}", {"uri": sendable_text(text)})
        with acting_as(caller_for(one.name, self.allow_writes)):
            return await one.server.read_resource(SCHEME + rest, context)

    def memories_json(self) -> str:
        return json.dumps({"memories": sorted(self.visible())}, indent=1)

    # --- completions and the prompt ---------------------------------------------------------------

    def complete(self, argument: str, typed: str, known: dict[str, str]) -> Completion:
        if argument == "memory":
            prefix = typed.lower()
            names = sorted(n for n in self.visible() if n.lower().startswith(prefix))
            return Completion(values=names[:MAX_VALUES], total=len(names), hasMore=len(names) > MAX_VALUES)
        one = self.visible().get(known.get("memory", ""))
        if one is None:
            return Completion(values=[], total=0, hasMore=False)
        with held(one.server.memtools) as tools:
            return complete(tools, argument, typed, known)

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None, context: Any = None) -> Any:
        if name in prompts.PROMPTS:
            try:
                checked = PROMPT_ARGUMENTS.model_validate(arguments or {})
            except ValidationError as exc:
                raise invalid_params(f"prompt {name}: " + describe_errors(name, PROMPT_ARGUMENTS, exc)) from None
            if checked.memory not in self.visible():  # type: ignore[attr-defined]  # a field of the built model
                raise invalid_params(UNKNOWN_MEMORY.format(name=shown_name(checked.memory)))  # type: ignore
        else:
            problem = prompts.prompt_problem(name, arguments)
            if problem:
                raise invalid_params(problem)
        return await super().get_prompt(name, arguments, context)


def register(server: ManyServer, run_sync: Callable[..., Any]) -> None:
    """The SDK-registered parts of ``server``: the memories resource, the prompt and the completion handler."""

    @server.resource(MEMORIES_URI, name="memories", title="Memories", mime_type="application/json",
                     description="The memories this server lets you use, by name.")
    async def memories() -> str:
        return await run_sync(server.memories_json)

    server.prompt(name="answer_video_question", title=prompts.PROMPTS["answer_video_question"][1])(
        answer_video_question)

    @server.completion()
    async def handle(ref: Any, argument: Any, context: Any) -> Completion:  # noqa: ARG001 - one source per name
        known = dict(getattr(context, "arguments", None) or {})
        return await run_sync(lambda: server.complete(argument.name, argument.value or "", known))


__all__ = ["LIST_MEMORIES", "MEMORIES_URI", "ManyServer", "UNKNOWN_MEMORY", "register"]
