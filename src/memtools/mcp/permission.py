"""Who may change the memory through the MCP server.

Writing is off unless the server starts with ``--allow-writes``; then:

- over stdio, the client that started the server may write (it runs as the folder's owner);
- over HTTP without authentication (loopback, or ``--insecure-no-auth``), every client may write;
- with ``--auth-token-env VAR`` / ``--write-token-env VAR``: the first token reads, the second reads
  and writes (``memtools.mcp.auth.StaticToken``);
- with ``--auth-issuer``: a token whose introspection answer has the scope ``memtools:write`` writes;
  any other valid token reads (``memtools:read``, or no memtools scope at all);
- with ``--memories DIR`` (many memories), scopes name them: ``memtools:read:NAME``, ``memtools:write:NAME``
  (``memtools.mcp.many.access``).

The HTTP guard (``memtools.mcp.guard``) asks the authenticator for the token's scopes
(``grant(token)``), sets the request's ``memtools.tools.caller.CALLER`` (front end ``mcp``, who:
the token's subject or client) and, when the caller may not write, answers a ``tools/call`` of a
write tool with **403** and ``WWW-Authenticate: Bearer error="insufficient_scope",
scope="memtools:write"`` (RFC 6750 §3.1) before the MCP app sees it (``refused_write``). The
server lists write tools only to a caller that may write and checks again before running one.

For a front end or tool author: mark a tool ``ToolSpec(..., write=True)`` and put it in
``memtools.changes.tool_specs.WRITE_TOOL_SPECS``; inside it, ``memtools.tools.caller.require_write()``
gives the caller (for the change log) or refuses.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from memtools.tools.caller import CALLER, Caller

READ_SCOPE = "memtools:read"
WRITE_SCOPE = "memtools:write"
MAX_PEEK_BYTES = 4 * 1024 * 1024
"""The most of a request body the guard reads to tell whether it calls a write tool: a larger one is answered 413,
as the SDK's transport answers any body over its default limit (4 MiB)."""


def caller_of(scopes: frozenset[str] | None, who: str) -> Caller:
    """The MCP caller a request's granted scopes make (``None``: no authentication on this server)."""
    may_write = scopes is None or WRITE_SCOPE in scopes
    return Caller("mcp", who, may_write=may_write, scopes=scopes)


def request_caller(allow_writes: bool) -> Caller:
    """The caller of the MCP request being handled: the HTTP guard's, else the stdio client; never allowed to
    write on a server without ``--allow-writes``."""
    caller = CALLER.get()
    if caller is None or caller.front_end != "mcp":
        caller = Caller("mcp", "stdio client", may_write=True)
    if caller.may_write and not allow_writes:
        caller = Caller(caller.front_end, caller.who, may_write=False)
    return caller


def calls_a_write_tool(body: bytes, write_tools: frozenset[str]) -> str | None:
    """The name of the first write tool a JSON-RPC body (one message or a batch) calls, or ``None``."""
    try:
        message = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None  # the MCP app answers the parse error
    for item in message if isinstance(message, list) else [message]:
        if isinstance(item, dict) and item.get("method") == "tools/call":
            params = item.get("params")
            name = params.get("name") if isinstance(params, dict) else None
            if isinstance(name, str) and name in write_tools:
                return name
    return None


Receive = Callable[[], Awaitable[Any]]


async def read_body(receive: Receive, limit: int = MAX_PEEK_BYTES) -> tuple[bytes, list[Any]] | None:
    """The whole request body and the messages it came in (to replay), or ``None`` when it exceeds ``limit``."""
    chunks: list[bytes] = []
    messages: list[Any] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message.get("type") != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks), messages


def replay(messages: list[Any], receive: Receive) -> Receive:
    """A ``receive`` that gives ``messages`` again, then the original's."""
    pending = list(messages)

    async def again() -> Any:
        return pending.pop(0) if pending else await receive()

    return again


def insufficient_scope(challenge: str) -> str:
    """An authenticator's ``WWW-Authenticate`` value for a token lacking the write scope (RFC 6750 §3.1)."""
    return f'{challenge}, scope="{WRITE_SCOPE}"'


__all__ = ["READ_SCOPE", "WRITE_SCOPE", "caller_of", "calls_a_write_tool", "insufficient_scope", "read_body",
           "replay", "request_caller"]
