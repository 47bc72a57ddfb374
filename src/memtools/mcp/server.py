"""``build_server``: one MCP server over one memory folder, generated from the tool catalogue."""

from __future__ import annotations

import logging
import os
import re
import threading
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Literal

import anyio.to_thread
from mcp.types import CallToolResult, Resource, TextContent
from mcp.types import Tool as MCPTool

from memtools.changes.tool_specs import WRITE_TOOL_SPECS
from memtools.errors import ConfigError
from memtools.mcp import caching, confirm, uris
from memtools.mcp.adapter import (
    ERROR_KIND_META,
    META,
    NOT_UNICODE,
    call,
    input_schema,
    returns_images,
    sendable,
    sendable_text,
    tool_annotations,
    tool_function,
    unsendable,
)
from memtools.mcp.app import register_app, tool_meta
from memtools.mcp.completions import register_completions
from memtools.mcp.permission import request_caller
from memtools.mcp.prompts import INSTRUCTIONS, WRITE_INSTRUCTIONS, prompt_problem, register_prompts
from memtools.mcp.resources import register_resources
from memtools.mcp.sdk import Server, invalid_params
from memtools.store import Memory
from memtools.tools import TOOL_SPECS, MemoryTools, ToolOutcome
from memtools.tools import messages as msg
from memtools.tools.caller import acting_as
from memtools.tools.provider import held

log = logging.getLogger(__name__)

TOOL_PREFIX = re.compile(r"[A-Za-z0-9_-]{1,32}")
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO, "warning": logging.WARNING,
          "error": logging.ERROR, "critical": logging.CRITICAL, "alert": logging.CRITICAL,
          "emergency": logging.CRITICAL}
"""MCP's (syslog) levels as ``logging`` levels, for ``logging/setLevel``."""
LISTED_SUMMARIES = 100
"""Videos whose summary is listed as a concrete resource (all are reachable through the template)."""


def _version() -> str:
    try:
        return version("memtools")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0"


class LazyTools:
    """The server's ``MemoryTools``, opened on first use and then shared by every worker thread.

    Opening reads only the manifest; ``Memory`` itself opens the graph read-only per call and
    lets it go after a second idle, so the server never holds a lock a writer would wait for.
    """

    def __init__(self, memory: Memory | MemoryTools | str | os.PathLike) -> None:
        self._tools: MemoryTools | None = None
        self._folder = Path()  # the folder to open on first use, when no open memory was given
        if isinstance(memory, MemoryTools):
            self._tools = memory
        elif isinstance(memory, Memory):
            self._tools = MemoryTools(memory)
        else:
            self._folder = Path(memory)
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        return self._tools.memory.path if self._tools is not None else self._folder

    def __call__(self) -> MemoryTools:
        with self._lock:
            if self._tools is None:
                self._tools = MemoryTools(Memory.open(self._folder))
                log.info("opened memory %s", self._tools.memory.path)
            return self._tools


class MemtoolsServer(Server):
    """The SDK's server (``memtools.mcp.sdk``) whose memtools tools take the client's raw arguments (checked strictly by
    ``ToolSpec.invoke`` against a closed input schema, never coerced by the SDK), and that also lists each
    video's summary as a concrete resource (clients show those in menus)."""

    def __init__(self, tools: LazyTools, tool_prefix: str = "", allow_writes: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        self.memtools = tools
        self.tool_prefix = tool_prefix
        self.allow_writes = allow_writes
        self.specs = {**TOOL_SPECS, **(WRITE_TOOL_SPECS if allow_writes else {})}
        self._listed_hidden: set[str] | None = None  # what the last tools/list left out
        self.jobs: Any = None  # the build tools (memtools.mcp.jobs.JobTools) when add_video is on
        self.job_tasks: Any = None  # add_video as an MCP task (memtools.mcp.tasks), on mcp 1.x
        self.structured_images = True
        self.freshness = caching.Freshness(tools)  # what a write made stale, told to clients (2026-07-28)
        self.audit: Any = None  # memtools.mcp.audit_reads.ReadsAudit with --audit-reads

    def spec_of(self, name: str) -> Any:
        """The ``ToolSpec`` a (prefixed) tool name stands for, or ``None``."""
        return self.specs.get(name[len(self.tool_prefix):]) if name.startswith(self.tool_prefix) else None

    def write_tool_names(self) -> frozenset[str]:
        """The (prefixed) names of the served tools that change the memory (none without ``--allow-writes``)."""
        names = {self.tool_prefix + s.name for s in self.specs.values() if s.write}
        if self.jobs is not None:
            from memtools.mcp.jobs import WRITE_TOOLS

            names |= {self.tool_prefix + n for n in WRITE_TOOLS}
        return frozenset(names)

    def unavailable(self) -> set[str]:
        """The memtools tools that cannot work on this memory now (search_frames without an image embedder).
        A memory that cannot be read hides nothing: its tools then say why they fail."""
        try:
            with held(self.memtools) as tools:
                tools.memory.refresh()
                return set() if tools.memory.manifest.image_embedder is not None else {"search_frames"}
        except Exception:
            return set()

    async def list_tools(self) -> list[MCPTool]:
        """The SDK's listing, with each memtools tool's strict input schema (``additionalProperties: false``), less
        the tools that cannot work on this memory and, for a caller that may only read, the tools that write."""
        listed = await super().list_tools()
        hidden = await anyio.to_thread.run_sync(self.unavailable)
        self._listed_hidden = hidden
        may_write = request_caller(self.allow_writes).may_write
        out = []
        for t in listed:
            spec = self.spec_of(t.name)
            if spec is None and self.jobs is not None and self.jobs.owns(t.name):
                if t.name in self.write_tool_names() and not may_write:
                    continue
                as_task = self.job_tasks is not None and t.name == self.job_tasks.add_video
                task = {"execution": {"taskSupport": "optional"}} if as_task else {}
                out.append(MCPTool.model_validate({**t.model_dump(by_alias=True, exclude_none=True),
                                                   "inputSchema": self.jobs.input_schema(t.name), **task}))
            elif spec is None:
                out.append(t)
            elif spec.name not in hidden and (may_write or not spec.write):
                out.append(MCPTool.model_validate({**t.model_dump(by_alias=True, exclude_none=True),
                                                   "inputSchema": confirm.published_schema(spec, input_schema(spec))}))
        return out

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """memtools tools get the client's raw arguments (checked strictly by ``ToolSpec.invoke``, not coerced).
        Text that UTF-8 cannot carry (a lone surrogate such as ``"\\ud800"``, which JSON can spell) is refused
        before any tool sees it, and never echoed raw: every answer can be serialised (over HTTP, never a 500)."""
        bad_name = unsendable(name)
        bad = ("the tool name", bad_name[1]) if bad_name is not None else unsendable(arguments)
        if bad is not None:
            outcome = ToolOutcome.failure(sendable_text(name), "bad-arguments",
                                          NOT_UNICODE.format(name=bad[0], value=bad[1]))
            result = CallToolResult(content=[TextContent(type="text", text=outcome.text)], isError=True,
                                    _meta={ERROR_KIND_META: "bad-arguments"})
        else:
            result = sendable(await self._call_tool(name, arguments, context))
        if self.audit is not None:  # --audit-reads: who read what (memtools.mcp.audit_reads)
            tool = name[len(self.tool_prefix):] if name.startswith(self.tool_prefix) else name
            await anyio.to_thread.run_sync(self.audit.record, request_caller(True).who, tool, arguments, result)
        return result

    async def _call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        spec = self.spec_of(name)
        if spec is None and self.jobs is not None and self.jobs.owns(name):
            caller = request_caller(self.allow_writes)
            if name in self.write_tool_names() and not caller.may_write:
                return CallToolResult(content=[TextContent(type="text", text=msg.WRITE_FORBIDDEN)], isError=True,
                                      _meta={ERROR_KIND_META: "forbidden"})
            with acting_as(caller):
                return await self.jobs.dispatch(name, arguments, self.request_context(context))
        if spec is None:
            return await super().call_tool(name, arguments, context)
        if spec.name in await anyio.to_thread.run_sync(self.unavailable):  # a client that listed it earlier
            outcome = ToolOutcome.failure(spec.name, "unavailable", msg.NO_FRAME_VECTORS)
            return CallToolResult(content=[TextContent(type="text", text=outcome.text)], isError=True,
                                  _meta={ERROR_KIND_META: "unavailable"})
        caller = request_caller(self.allow_writes)
        if spec.write and not caller.may_write:  # the HTTP guard answers 403 first; stdio without --allow-writes
            outcome = ToolOutcome.failure(spec.name, "forbidden", msg.WRITE_FORBIDDEN)
            return CallToolResult(content=[TextContent(type="text", text=outcome.text)], isError=True,
                                  _meta={ERROR_KIND_META: "forbidden"})
        if spec.confirm is not None:  # the user agrees first (memtools.mcp.confirm)
            gate = await confirm.gate(spec, self.memtools, arguments, self.request_context(context))
            if gate.arguments is None:
                return gate.result
            arguments = gate.arguments

        def run() -> CallToolResult:
            with acting_as(caller):  # the worker thread runs as the request's caller (change log, permission)
                return call(spec, self.memtools, arguments, structured_images=self.structured_images)

        result: CallToolResult = await anyio.to_thread.run_sync(run)
        await self.freshness.after_call(context, caching.written(spec, result))
        await self._tell_if_tools_changed(context)
        return result

    async def _tell_if_tools_changed(self, context: Any) -> None:
        """After a call: if a build made a tool available (or not) since the client listed them, say so once."""
        if self._listed_hidden is None:
            return
        hidden = await anyio.to_thread.run_sync(self.unavailable)
        if hidden != self._listed_hidden:
            self._listed_hidden = hidden
            await self.notify_tools_changed(context)

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None, context: Any = None) -> Any:
        """A missing, unknown or ill-typed argument, or an unknown prompt, is an invalid-params error saying which."""
        problem = prompt_problem(name, arguments)
        if problem:
            log.info("prompts/get refused: %s", problem)  # the client's mistake: no traceback, nothing at ERROR
            raise invalid_params(problem)
        return await super().get_prompt(name, arguments, context)

    def run_http(self, host: str = "127.0.0.1", port: int = 8765, options: Any = None) -> None:
        """Streamable HTTP at ``http://host:port/mcp`` with the pages at ``/``, guarded (``memtools.mcp.http``)."""
        from memtools.mcp.http import run_http

        run_http(self, host, port, options)

    async def list_resources(self) -> list[Resource]:
        listed = [r for r in await super().list_resources() if not str(r.uri).startswith("ui://")]  # via tools
        try:
            def listed_videos() -> Any:
                with held(self.memtools) as tools:
                    return tools.list_videos().videos

            videos = await anyio.to_thread.run_sync(listed_videos)
        except Exception:  # a listing must not fail because the memory cannot be read right now
            log.warning("could not list the videos of %s", self.memtools.path, exc_info=True)
            return listed
        for v in [v for v in videos if v.status == "ready"][:LISTED_SUMMARIES]:
            listed.append(Resource(uri=uris.summary_uri(v.video_id), name=f"{v.video_id} summary",
                                   title=f"{v.title or v.video_id} (summary)", mimeType="text/plain",
                                   description=f"Overview and super events of video {v.video_id}."))
        return listed


def build_server(
    memory: Memory | MemoryTools | LazyTools | str | os.PathLike,
    *,
    name: str = "memtools",
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING",
    tool_prefix: str = "",
    allow_writes: bool = False,
    jobs: Any = None,
    structured_images: bool = True,
    audit_reads: bool = False,
    app: bool = True,
) -> MemtoolsServer:
    """The MCP server over ``memory``: every tool of ``TOOL_SPECS`` (read-only), resources, the ORA prompt,
    completions of their arguments; with ``allow_writes`` also the tools that change the memory
    (``WRITE_TOOL_SPECS``), for callers that may write (``memtools.mcp.permission``). A read replica never writes.

    ``memory`` is an open ``Memory`` (or ``MemoryTools``), the path of a memory folder,
    opened on the first call, or a tools provider (``LazyTools``; a read replica's
    ``memtools.mcp.replica_serving.ReplicaTools``). ``tool_prefix`` (e.g. ``"memtools_"``) goes before every tool
    name, so ``search_nodes`` does not collide with another server's. Run it with
    ``server.run()`` (stdio) or ``server.run_http(host, port)`` (streamable HTTP);
    ``memtools.mcp.serve`` does both.

    ``jobs`` (a started or not yet started ``memtools.jobs.JobRunner``) adds the build tools
    ``add_video``, ``get_job``, ``list_jobs`` and ``estimate_build`` (``memtools.mcp.jobs``).
    ``structured_images=False`` leaves structured content out of the image results
    (``inspect_frames``, ``search_frames``): some clients drop a result's images when it has some.
    ``audit_reads`` appends one line per tool call to ``<memory>/reads.jsonl`` (``memtools.mcp.audit_reads``).
    ``app`` serves the timeline MCP App and links it from the tools it draws (``memtools.mcp.app``).
    """
    if tool_prefix and not TOOL_PREFIX.fullmatch(tool_prefix):
        raise ConfigError(f"--tool-prefix {tool_prefix!r}: use letters, digits, '_' or '-' (at most 32), "
                          "e.g. memtools_")
    tools = memory if isinstance(memory, LazyTools) else LazyTools(memory)
    if allow_writes and getattr(tools, "read_only", False):
        raise ConfigError("--allow-writes: a read replica never writes; change the memory where it is built, "
                          "then `memtools publish` it")
    instructions = INSTRUCTIONS + (WRITE_INSTRUCTIONS if allow_writes else "")
    instructions += (f"\n\nOn this server every tool name starts with {tool_prefix!r}: call "
                     f"{tool_prefix}search_nodes for search_nodes, and so on." if tool_prefix else "")
    server = MemtoolsServer(tools, tool_prefix, allow_writes, name=name, title="memtools video memory",
                            instructions=instructions, version=_version(), log_level=log_level,
                            cache_hints=caching.cache_hints())
    server.structured_images = structured_images
    if audit_reads:  # who read what, in <memory>/reads.jsonl (memtools.mcp.audit_reads)
        if getattr(tools, "read_only", False):
            raise ConfigError("--audit-reads writes reads.jsonl into the memory folder, and a read replica's folder "
                              "is a downloaded copy replaced by each new version: audit where the memory is served "
                              "from its folder")
        from memtools.mcp.audit_reads import ReadsAudit

        server.audit = ReadsAudit(tools.path)
    for spec in server.specs.values():
        server.add_tool(tool_function(spec, tools, structured_images=structured_images), name=tool_prefix + spec.name,
                        title=spec.name.replace("_", " ").capitalize(), description=spec.description,
                        annotations=tool_annotations(spec.hints),
                        meta={**META, **(tool_meta(spec.name) if app else {})},
                        structured_output=structured_images or not returns_images(spec))
    if jobs is not None:
        from memtools.mcp.jobs import register_job_tools

        register_job_tools(server, jobs, tool_prefix)
    register_resources(server, tools)
    if app:
        register_app(server)
    register_prompts(server)
    register_completions(server, tools)

    async def set_level(level: str) -> None:
        logging.getLogger("memtools").setLevel(LEVELS.get(level, logging.WARNING))
        log.info("log level set to %s by the client", level)

    server.on_set_level(set_level)
    from memtools.show.web import register_show_routes  # the memory as browsable pages at / (read-only)
    register_show_routes(server, tools)

    @server.custom_route("/health", methods=["GET"])
    async def health(request):  # noqa: ARG001 - Starlette passes the request
        from starlette.responses import JSONResponse

        return JSONResponse({"status": "ok", "server": name})

    return server
