"""The HTTP server's one gate: every route (``/mcp``, the show pages and frames, ``/health``) passes it.

``Guard`` is a plain ASGI middleware wrapped around the whole app (SDK transport and custom
routes alike), so no route can bypass it. In order, a request is:

1. refused with 421 when its ``Host`` is not one of the allowed names (loopback names by
   default, ``--allowed-host`` to widen), and with 403 when it carries an ``Origin`` that is
   neither the server's own origin (the request's scheme, host and port; a loopback name on the
   same port counts as the same) nor an allowed origin: DNS rebinding cannot read anything, nor
   can a page served on another local port;
2. refused with 401 and a ``WWW-Authenticate: Bearer ...`` header when authentication is on
   and its bearer token is missing or not valid (``memtools.mcp.auth``), and answered 503
   (``Retry-After: 5``) when the token cannot be checked now (``AuthUnavailable``: the issuer
   cannot be reached); the protected-resource metadata at
   ``/.well-known/oauth-protected-resource`` is the only public route then;
3. answered 405 when it is a ``GET`` on the stateless MCP endpoint (which has no event stream to
   offer, so no stream stays open);
4. answered 403 with ``WWW-Authenticate: Bearer error="insufficient_scope"`` when it calls a tool that
   changes the memory and its token may only read (``memtools.mcp.permission``); every request
   that passes runs as its caller (``memtools.tools.caller.CALLER``: front end ``mcp``, the
   token's subject, whether it may write);
5. answered 503 (``Retry-After: 1``) when ``max_connections`` requests are already in flight;
6. answered with an event stream when it asks for progress, else with one JSON body
   (``memtools.mcp.streaming``).

Connections are limited before any of this, below the app (``memtools.mcp.connections``).
"""

from __future__ import annotations

import ipaddress
import json
import logging
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from memtools.mcp import permission, streaming
from memtools.tools.caller import acting_as

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
MCP_PATH = "/mcp"
METADATA_PATH = "/.well-known/oauth-protected-resource"
DEFAULT_MAX_CONNECTIONS = 64


class AuthUnavailable(Exception):
    """Raised by an authenticator that cannot tell now whether a token is valid; its text is the 503's message."""


def is_loopback(name: str) -> bool:
    """``localhost`` or a loopback address (``127.0.0.0/8``, ``::1``)."""
    if name.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


def origin_parts(url: str) -> tuple[str, str, int] | None:
    """(scheme, host name, port) of an http(s) origin or URL, the port filled in; ``None`` if it is not one."""
    parts = urlsplit(url.strip().lower())
    try:
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80)


def host_name(value: str) -> str:
    """The name of a ``Host`` header or URL netloc without its port, lower-cased (``[::1]:80`` -> ``::1``)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


@dataclass(frozen=True)
class Gate:
    """What the guard lets in: host names, extra origins, the authenticator and the connection cap."""

    allowed_hosts: frozenset[str] = frozenset(LOOPBACK_NAMES)
    allowed_origins: frozenset[str] = frozenset()
    authenticator: Any = None
    """``None`` (no authentication) or an object with ``async grant(token) -> frozenset[str] | None`` (the
    token's scopes; ``None``: not valid), ``who(token) -> str`` and ``challenge(base_url, error) -> str``
    (``memtools.mcp.auth``)."""
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    public_paths: frozenset[str] = field(default_factory=frozenset)
    """Paths served without authentication (the protected-resource metadata)."""
    write_tools: frozenset[str] = field(default_factory=frozenset)
    """The (prefixed) names of the tools that change the memory: a caller that may not write gets 403 for them."""

    @classmethod
    def make(cls, bind_host: str, hosts: Iterable[str] = (), origins: Iterable[str] = (), **kwargs: Any) -> Gate:
        """Loopback names, the bound address itself (unless it is a wildcard) and ``hosts``."""
        names = set(LOOPBACK_NAMES) | {host_name(h) for h in hosts if h.strip()}
        if bind_host not in ("0.0.0.0", "::", ""):
            names.add(host_name(bind_host) if not bind_host.count(":") > 1 else bind_host.lower())
        return cls(allowed_hosts=frozenset(names),
                   allowed_origins=frozenset(o.strip().rstrip("/").lower() for o in origins if o.strip()), **kwargs)

    def host_allowed(self, host: str) -> bool:
        return "*" in self.allowed_hosts or host_name(host) in self.allowed_hosts

    def origin_allowed(self, origin: str, host: str, scheme: str = "http") -> bool:
        """``origin`` is an allowed origin or the server's own: the request's ``scheme`` and ``host`` (with
        its port); another of ``LOOPBACK_NAMES`` on the same scheme and port is the same server."""
        origin = origin.strip().rstrip("/").lower()
        if "*" in self.allowed_origins or origin in self.allowed_origins:
            return True
        theirs, ours = origin_parts(origin), origin_parts(f"{scheme}://{host.strip()}")
        if theirs is None or ours is None:
            return False
        if theirs == ours or theirs in {origin_parts(o) for o in self.allowed_origins}:
            return True
        return (theirs[0], theirs[2]) == (ours[0], ours[2]) and {theirs[1], ours[1]} <= set(LOOPBACK_NAMES)


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}


async def _answer(send: Callable[[Any], Awaitable[None]], status: int, message: str,
                  headers: dict[str, str] | None = None) -> None:
    body = json.dumps({"error": message}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def bearer_token(headers: dict[str, str]) -> str | None:
    scheme, _, token = headers.get("authorization", "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


class Guard:
    """ASGI middleware applying a ``Gate`` to every HTTP request of ``app`` (see the module docstring)."""

    def __init__(self, app: ASGIApp, gate: Gate) -> None:
        self.app = app
        self.gate = gate
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Any]],
                       send: Callable[[Any], Awaitable[None]]) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)  # lifespan
            return
        headers = _headers(scope)
        host = headers.get("host", "")
        if not self.gate.host_allowed(host):
            log.warning("refused a request for host %r (allow it with --allowed-host)", host)
            await _answer(send, 421, f"host {host!r} is not served here (see --allowed-host)")
            return
        origin = headers.get("origin")
        if origin is not None and not self.gate.origin_allowed(origin, host, scope.get("scheme", "http")):
            log.warning("refused a request from origin %r (allow it with --allowed-origin)", origin)
            await _answer(send, 403, f"origin {origin!r} is not allowed (see --allowed-origin)")
            return
        path = scope.get("path", "")
        auth = self.gate.authenticator
        base = f"{scope.get('scheme', 'http')}://{host}"
        scopes: frozenset[str] | None = None
        who = "http client"
        if auth is not None and path not in self.gate.public_paths:
            token = bearer_token(headers)
            try:
                scopes = await auth.grant(token) if token is not None else None
            except AuthUnavailable as exc:
                await _answer(send, 503, str(exc), {"Retry-After": "5"})
                return
            if scopes is None:
                error = "invalid_token" if token is not None else None
                await _answer(send, 401, "a valid bearer token is required" if token is None
                              else "the bearer token is not valid", {"WWW-Authenticate": auth.challenge(base, error)})
                return
            who = auth.who(token) if token is not None else who
        if scope.get("method") == "GET" and path.rstrip("/") == MCP_PATH:
            await _answer(send, 405, "this stateless endpoint has no event stream: POST JSON-RPC requests to it",
                          {"Allow": "POST"})
            return
        caller = permission.caller_of(scopes, who)
        stream = False
        if scope.get("method") == "POST" and path.rstrip("/") == MCP_PATH:
            read = await permission.read_body(receive)
            if read is None:
                await _answer(send, 413, "the request is too large")
                return
            body, messages = read
            receive = permission.replay(messages, receive)
            stream = streaming.asks_for_progress(body, headers.get("accept", ""))
            tool = (permission.calls_a_write_tool(body, self.gate.write_tools)
                    if auth is not None and not caller.may_write and self.gate.write_tools else None)
            if tool is not None:
                log.info("refused a call of %s by a token that may only read", tool)
                await _answer(send, 403, f"the tool {tool} changes the memory, and this token may only read; use a "
                                         "token that may write (the memtools:write scope)",
                              {"WWW-Authenticate": permission.insufficient_scope(
                                  auth.challenge(base, "insufficient_scope"))})
                return
        if self.in_flight >= self.gate.max_connections:
            await _answer(send, 503, "the server is busy; try again in a second", {"Retry-After": "1"})
            return
        self.in_flight += 1
        try:
            with acting_as(caller), streaming.streamed(stream):
                await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
