"""Which HTTP requests get an event stream: those that ask for progress.

The HTTP transport is stateless (``memtools.mcp.sdk.MemtoolsServer.http_app``): each POST is one
JSON-RPC exchange, answered with one JSON body. A request whose ``params._meta`` carries a
``progressToken`` and whose ``Accept`` header offers ``text/event-stream`` is answered with a
server-sent event stream instead, on which the server sends the request's progress notifications
(``add_video`` / ``get_job`` with ``wait_seconds``) before its result, as on stdio. Every other
request keeps its plain JSON answer.

The SDK's session manager chooses JSON or a stream once per server (``json_response``), reading the
attribute when it makes each request's transport; ``per_request`` makes that attribute follow the
request being handled, which the HTTP guard marks with ``streamed(...)``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

_STREAM: ContextVar[bool] = ContextVar("memtools_mcp_stream", default=False)


def asks_for_progress(body: bytes, accept: str) -> bool:
    """Whether a JSON-RPC body (one message or a batch) asks for progress and the client reads event streams."""
    if "text/event-stream" not in accept:
        return False
    try:
        message = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return False  # the MCP app answers the parse error, in JSON
    for item in message if isinstance(message, list) else [message]:
        params = item.get("params") if isinstance(item, dict) else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and meta.get("progressToken") is not None:
            return True
    return False


@contextlib.contextmanager
def streamed(stream: bool) -> Iterator[None]:
    """Handle the request in this block with an event stream (``True``) or one JSON answer."""
    token = _STREAM.set(stream)
    try:
        yield
    finally:
        _STREAM.reset(token)


def per_request(manager: Any) -> None:
    """Make the SDK session manager ``manager`` answer with a stream only the requests marked ``streamed(True)``."""
    base = type(manager)
    if getattr(base, "_memtools_per_request", False):
        return

    class PerRequest(base):  # type: ignore[valid-type,misc]
        _memtools_per_request = True

        @property
        def json_response(self) -> bool:
            return not _STREAM.get()

        @json_response.setter
        def json_response(self, value: bool) -> None:
            pass  # set once by the SDK's constructor; the request decides

    manager.__class__ = PerRequest
