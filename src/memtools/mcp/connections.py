"""Connections before any request: how long a client may take to send its headers, and how many it may hold open.

uvicorn gives a new connection no deadline until its first response, and its own
``limit_concurrency`` counts idle connections too, so a few hundred sockets that never finished
their headers made the server answer 503 to everyone, authenticated clients included.
``limited_protocol`` is uvicorn's h11 protocol with three limits of its own, applied to the socket
before any request reaches the app:

- **a header deadline**: a connection must send a request's headers within ``HEADER_TIMEOUT``
  seconds of connecting (or of its previous response); otherwise it is closed. Trickling a byte
  at a time does not move the deadline;
- **a per-client cap**: at most ``ConnectionLimits.per_client`` connections open at once from one
  remote address (``--max-client-connections``); one more is answered 503 and closed at once;
- **a waiting cap**: at most ``MAX_WAITING`` connections, over all clients, may be waiting for
  their headers; past it the one that has waited longest is closed, so a flood of idle sockets
  from many addresses cannot keep out a client that sends its request at once.

Requests that get through then meet ``Guard`` (``memtools.mcp.guard``): authentication first,
then at most ``--max-connections`` in flight. An unauthenticated connection never takes an
authenticated client's place.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

HEADER_TIMEOUT = 5.0
"""Seconds a connection has to send a request's headers, from connecting or from its last response."""
DEFAULT_PER_CLIENT = 16
"""Connections one remote address may hold open at once (``--max-client-connections``)."""
MAX_WAITING = 256
"""Connections, over all clients, that may be waiting for their headers at once."""


@dataclass
class ConnectionLimits:
    """The limits of one server and the connections it holds (shared by all its connections)."""

    per_client: int = DEFAULT_PER_CLIENT
    max_waiting: int = MAX_WAITING
    header_timeout: float = HEADER_TIMEOUT
    open: Counter[str] = field(default_factory=Counter)
    """Open connections per remote address."""
    waiting: dict[Any, None] = field(default_factory=dict)
    """Connections waiting for their headers, oldest first."""


def _too_many(limit: int) -> bytes:
    body = json.dumps({"error": f"too many connections from your address (at most {limit} at once); close idle "
                                "ones or try again in a second"}).encode()
    head = (f"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
            "retry-after: 1\r\nconnection: close\r\n\r\n")
    return head.encode() + body


def limited_protocol(limits: ConnectionLimits) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with ``limits`` (see the module docstring); give it to uvicorn as ``http=``."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class LimitedH11Protocol(H11Protocol):
        address: str | None = None
        header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            address = self.client[0] if self.client else ""
            if limits.open[address] >= limits.per_client:
                log.warning("refused a connection from %s: it already has %d open (see --max-client-connections)",
                            address, limits.open[address])
                transport.write(_too_many(limits.per_client))
                transport.close()
                return
            self.address = address
            limits.open[address] += 1
            self.wait_for_headers()

        def connection_lost(self, exc: Exception | None) -> None:
            self.stop_waiting()
            if self.address is not None:
                limits.open[self.address] -= 1
                if limits.open[self.address] <= 0:
                    del limits.open[self.address]
                self.address = None
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:  # a request's headers are in
                self.stop_waiting()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self.wait_for_headers()  # kept alive: the next request's headers have the same deadline

        def wait_for_headers(self) -> None:
            self.stop_waiting()
            self.header_timer = self.loop.call_later(limits.header_timeout, self.headers_late)
            limits.waiting[self] = None
            while len(limits.waiting) > limits.max_waiting:
                next(iter(limits.waiting)).headers_late()  # the one waiting longest makes room

        def stop_waiting(self) -> None:
            limits.waiting.pop(self, None)
            if self.header_timer is not None:
                self.header_timer.cancel()
                self.header_timer = None

        def headers_late(self) -> None:
            self.stop_waiting()
            if not self.transport.is_closing():
                self.transport.close()

    return LimitedH11Protocol
