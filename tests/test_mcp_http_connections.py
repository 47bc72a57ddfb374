"""Idle and slow connections cannot starve the HTTP server (``memtools.mcp.connections``).

A real ``memtools serve --http`` process on 127.0.0.1 with a token; the "other clients" connect
from other loopback addresses (127.0.0.2, 127.0.0.10-39: Linux routes all of 127/8 to the
loopback interface), send half a request and stop.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import time

import httpx
import pytest

from mcp_support import http_server, shared_memory
from memtools.mcp.connections import DEFAULT_PER_CLIENT, HEADER_TIMEOUT

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform != "linux", reason="binds 127.0.0.x sources")]

TOKEN = "idle-sockets-test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
HALF_REQUEST = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json"  # never finished
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "idle-test", "version": "0"}}}


@pytest.fixture(scope="module")
def memory_path(tmp_path_factory):
    return shared_memory(tmp_path_factory)


class Idle:
    """One socket that sent ``HALF_REQUEST`` from ``source`` and waits; ``closed()`` says whether the server hung up."""

    def __init__(self, port: int, source: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))
        self.received = b""
        self.is_closed = False
        with contextlib.suppress(OSError):  # the server may already have answered and closed it
            self.sock.sendall(HALF_REQUEST)
        self.sock.setblocking(False)

    def closed(self) -> bool:
        while not self.is_closed:
            try:
                data = self.sock.recv(65536)
            except BlockingIOError:
                return False
            except OSError:
                data = b""
            self.received += data
            self.is_closed = not data
        return True


def answered(url: str) -> list[int]:
    """Statuses of an authenticated client's requests, each on a new connection from 127.0.0.1."""
    base = url.removesuffix("/mcp")
    return [httpx.post(url, json=INITIALIZE, timeout=30, headers={**AUTH, "Accept": "application/json, "
                       "text/event-stream"}).status_code for _ in range(3)] + \
        [httpx.get(f"{base}/health", headers=AUTH, timeout=30).status_code]


def wait_until(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_idle_half_open_sockets_do_not_starve_an_authenticated_client(memory_path):
    with http_server(memory_path, extra=("--auth-token-env", "MEMTOOLS_IDLE_TOKEN"),
                     env={"MEMTOOLS_IDLE_TOKEN": TOKEN}, headers=AUTH) as url:
        port = int(url.split(":")[2].split("/")[0])
        one_client = [Idle(port, "127.0.0.2") for _ in range(300)]
        try:
            assert answered(url) == [200, 200, 200, 200]
            # one address keeps at most DEFAULT_PER_CLIENT of them; the others are told why and closed at once
            assert wait_until(lambda: sum(s.closed() for s in one_client) >= 300 - DEFAULT_PER_CLIENT, 10)
            refused = next(s.received for s in one_client if s.closed())
            assert refused.startswith(b"HTTP/1.1 503") and b"too many connections from your address" in refused
            # 300 more from 30 addresses (10 each, under the per-client cap): the ones waiting longest make room
            many_clients = [Idle(port, f"127.0.0.{10 + n % 30}") for n in range(300)]
            assert answered(url) == [200, 200, 200, 200]
            # after a response on a kept-alive connection, the next request's headers have the same deadline
            kept = Idle(port, "127.0.0.4")
            kept.sock.setblocking(True)
            kept.sock.sendall(b"\r\n".join([b"", b"Authorization: " + AUTH["Authorization"].encode(), b"", b""]))
            head = b""
            while b"\r\n\r\n" not in head:
                head += kept.sock.recv(65536)
            assert head.startswith(b"HTTP/1.1 200")
            kept.sock.sendall(HALF_REQUEST)
            kept.sock.setblocking(False)
            # a client that trickles its headers a byte at a time is closed at the deadline all the same
            trickle = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=("127.0.0.3", 0))
            deadline, hung_up = time.monotonic() + HEADER_TIMEOUT + 10, False
            for byte in (HALF_REQUEST * 20)[:200]:
                try:
                    trickle.sendall(bytes([byte]))
                except OSError:
                    hung_up = True
                    break
                if time.monotonic() > deadline:
                    break
                time.sleep(0.25)
            trickle.close()
            assert hung_up
            # and every idle socket is gone once its headers are late
            everyone = [*one_client, *many_clients, kept]
            assert wait_until(lambda: all(s.closed() for s in everyone), HEADER_TIMEOUT + 10)
            assert answered(url) == [200, 200, 200, 200]
        finally:
            for s in one_client + locals().get("many_clients", []):
                s.sock.close()
