"""The one module that knows which MCP SDK is installed: mcp 2.x (``MCPServer``) or mcp 1.x (``FastMCP``).

memtools serves the same tools, schemas, results, resources, prompts and errors on both, so it
can share an environment with clients written against mcp 1.x (``langchain-mcp-adapters``
requires ``mcp<2``). The rest of ``memtools.mcp`` imports the server class and the errors from
here and never names a module of the SDK that only one major has. The wire types
(``mcp.types``) exist on both; they are built with their camelCase field names
(``isError=``, ``mimeType=``), which 2.x accepts as aliases.

What differs, and how it is bridged:

- the server class and its module (``mcp.server.mcpserver.MCPServer`` / ``mcp.server.fastmcp.FastMCP``);
  ``call_tool`` and ``read_resource`` take the request ``Context`` only on 2.x;
- 1.x has no server ``title``/``version`` options (the version is set on its low-level server;
  the title exists only in 2.x's ``serverInfo``);
- HTTP options go to ``streamable_http_app()`` on 2.x and into ``settings`` on 1.x; the SDK's own
  DNS-rebinding guard is off on both, as ``memtools.mcp.guard`` guards every route (not just ``/mcp``);
- resource errors: 2.x answers a missing resource with invalid-params and a failing one with
  internal-error, decodes template values and refuses path traversal; 1.x wraps every failure
  in a ``ValueError`` (error code 0), so ``read_resource`` does the same mapping itself there;
- protocol errors are ``MCPError(code, message, data)`` on 2.x and ``McpError(ErrorData)`` on 1.x.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import unquote

from mcp.types import INTERNAL_ERROR, INVALID_PARAMS, ErrorData

log = logging.getLogger(__name__)


def _load() -> tuple[int, Any, Any]:
    """(major, server module, exceptions module) of the installed SDK."""
    try:
        return 2, importlib.import_module("mcp.server.mcpserver"), importlib.import_module(
            "mcp.server.mcpserver.exceptions")
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("mcp.server"):
            raise
    return 1, importlib.import_module("mcp.server.fastmcp"), importlib.import_module("mcp.server.fastmcp.exceptions")


SDK_MAJOR, _server, _exceptions = _load()
"""2 with ``mcp>=2``, 1 with ``mcp<2``."""

_Base: Any = _server.MCPServer if SDK_MAJOR == 2 else _server.FastMCP
Context: Any = getattr(_server, "Context", Any)
"""The request context a tool function receives when it has a parameter annotated with it (progress, session)."""
ResourceError: type[Exception] = _exceptions.ResourceError
"""Raised by a resource that exists but cannot be read now (answered as internal-error)."""

if SDK_MAJOR == 2:
    ResourceNotFoundError: type[Exception] = _exceptions.ResourceNotFoundError
    _ProtocolError: type[Exception] = importlib.import_module("mcp.shared.exceptions").MCPError
else:

    class _NotFound(ResourceError):  # type: ignore[misc,valid-type]  # a class held in a variable
        """What 2.x calls ``ResourceNotFoundError``: a wrong id or URI (answered as invalid-params)."""

    ResourceNotFoundError = _NotFound
    _ProtocolError = importlib.import_module("mcp.shared.exceptions").McpError


def protocol_error(code: int, message: str, data: Any = None) -> Exception:
    """A JSON-RPC error the SDK sends as the response (``MCPError`` / ``McpError``), logged by neither."""
    if SDK_MAJOR == 2:
        return _ProtocolError(code, message, data)
    return _ProtocolError(ErrorData(code=code, message=message, data=data))


def invalid_params(message: str, data: Any = None) -> Exception:
    return protocol_error(INVALID_PARAMS, message, data)


def _refused(value: str) -> bool:
    """What 2.x's default ``ResourceSecurity`` refuses in a (decoded) template value: NUL, an absolute path
    (``/x``, ``\\x``, ``C:x``) or ``..`` climbing above the start."""
    if "\0" in value or value.startswith(("/", "\\")) or (len(value) > 1 and value[1] == ":" and value[0].isascii()
                                                         and value[0].isalpha()):
        return True
    depth = 0
    for part in value.replace("\\", "/").split("/"):
        depth += -1 if part == ".." else 1 if part and part != "." else 0
        if depth < 0:
            return True
    return False


class Server(_Base):
    """The SDK's server with one API on both majors (see the module docstring)."""

    def __init__(self, *, name: str, title: str, instructions: str, version: str, log_level: str,
                 cache_hints: Any = None) -> None:
        """``cache_hints``: the ``ttlMs``/``cacheScope`` of cacheable results (2.x only: ``memtools.mcp.caching``)."""
        if SDK_MAJOR == 2:
            super().__init__(name=name, title=title, instructions=instructions, version=version, log_level=log_level,
                             cache_hints=cache_hints)
        else:
            super().__init__(name=name, instructions=instructions, log_level=log_level)
            self._mcp_server.version = version
        low = self._lowlevel_server if SDK_MAJOR == 2 else self._mcp_server
        make_options = low.create_initialization_options

        def with_tools_changed(notification_options: Any = None, *args: Any, **kwargs: Any) -> Any:
            """Advertise ``tools.listChanged`` (sent by ``notify_tools_changed``) at handshake-era protocols."""
            from mcp.server.lowlevel.server import NotificationOptions

            return make_options(notification_options or NotificationOptions(tools_changed=True), *args, **kwargs)

        low.create_initialization_options = with_tools_changed

    async def notify_tools_changed(self, context: Any = None) -> None:
        """Send ``notifications/tools/list_changed`` to the client of the request being handled (if it can get it)."""
        try:
            if SDK_MAJOR == 2:
                if context is not None:  # to subscriptions/listen streams (2026-07-28), whose clients cache tools/list
                    await context.notify_tools_changed()
                session = context.session if context is not None else None
            else:
                session = self.get_context().session
            if session is not None:
                await session.send_tool_list_changed()
        except Exception as exc:  # a transport without a way back (stateless HTTP): the next tools/list tells
            log.info("could not send tools/list_changed: %s", exc)

    def request_context(self, context: Any = None) -> Any:
        """The ``Context`` of the request being handled (progress, session): 2.x passes it, 1.x has it on the server."""
        return context if SDK_MAJOR == 2 else self.get_context()

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if SDK_MAJOR == 2:
            return await super().call_tool(name, arguments, context)
        return await super().call_tool(name, arguments)

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None, context: Any = None) -> Any:
        if SDK_MAJOR == 2:
            return await super().get_prompt(name, arguments, context)
        return await super().get_prompt(name, arguments)

    async def read_resource(self, uri: Any, context: Any = None) -> Any:
        if SDK_MAJOR == 2:
            return await super().read_resource(uri, context)
        text = str(uri)
        scheme, sep, rest = text.partition("://")
        segments = [unquote(s) for s in rest.split("/")]
        if any(_refused(s) for s in segments):
            raise invalid_params(f"Unknown resource: {text}", {"uri": text})
        try:
            return await super().read_resource(scheme + sep + "/".join(segments))
        except Exception as exc:
            raise _resource_error(exc, text) from exc

    def on_set_level(self, func: Callable[[str], Awaitable[None]]) -> None:
        """Answer ``logging/setLevel`` with ``func(level)`` (which also advertises the ``logging`` capability)."""
        if SDK_MAJOR == 2:
            from mcp.types import EmptyResult, SetLevelRequestParams

            async def handler(ctx: Any, params: Any) -> Any:  # noqa: ARG001 - the SDK passes the request context
                await func(params.level)
                return EmptyResult()

            self._lowlevel_server.add_request_handler("logging/setLevel", SetLevelRequestParams, handler)
        else:
            self._mcp_server.set_logging_level()(func)

    def add_extension(self, extension: Any) -> None:
        """Serve an ``mcp.server.extension.Extension`` (mcp 2.x only: declared in ``capabilities.extensions``, its
        methods added, its ``tools/call`` interceptor around the others'). 2.x takes extensions at construction; this
        applies one later, the way its constructor does."""
        if SDK_MAJOR != 2:
            raise RuntimeError("MCP extensions need mcp 2.x")
        self._apply_extension(extension)
        self._install_extension_interceptor()

    def http_app(self) -> Any:
        """The Starlette app of streamable HTTP at ``/mcp`` (stateless; JSON responses, or an event stream for a request
        that asks for progress: ``memtools.mcp.streaming``) and the custom routes,
        without the SDK's own DNS-rebinding guard: ``memtools.mcp.guard`` guards every route instead."""
        from mcp.server.transport_security import TransportSecuritySettings

        from memtools.mcp.streaming import per_request

        unguarded = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        if SDK_MAJOR == 2:
            app = self.streamable_http_app(stateless_http=True, json_response=True, transport_security=unguarded)
        else:
            settings = self.settings
            settings.stateless_http, settings.json_response, settings.transport_security = True, True, unguarded
            app = self.streamable_http_app()
        per_request(self.session_manager)  # a request that asks for progress gets an event stream
        return app


def _resource_error(exc: BaseException, uri: str) -> Exception:
    """1.x: the error 2.x would send for a failed read (1.x chains ours inside ``ValueError``s)."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ResourceError):
            code = INVALID_PARAMS if isinstance(cause, ResourceNotFoundError) else INTERNAL_ERROR
            log.info("Resource %r failed: %r", uri, str(cause))
            return protocol_error(code, str(cause), {"uri": uri})
        cause = cause.__cause__ or cause.__context__
    if str(exc).startswith("Unknown resource"):
        return protocol_error(INVALID_PARAMS, f"Unknown resource: {uri}", {"uri": uri})
    log.error("Resource %r raised an unexpected exception", uri, exc_info=exc)
    return protocol_error(INTERNAL_ERROR, f"Error reading resource {uri}", {"uri": uri})
