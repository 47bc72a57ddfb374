"""The HTTP server's one gate (``memtools.mcp.guard``): every route checks Host, Origin and the bearer token.

The whole app (``/mcp``, the pages, frames, ``/health``) runs in-process under Starlette's
``TestClient``, with a real memory; the OAuth issuer is a tiny RFC 7662 introspection server on
127.0.0.1.
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import anyio
import pytest
from starlette.testclient import TestClient

from mcp_support import shared_memory
from memtools.errors import ConfigError
from memtools.mcp import auth
from memtools.mcp.guard import Gate, Guard
from memtools.mcp.http import HttpOptions, authenticator, check_exposure, http_app
from memtools.mcp.server import build_server

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "guard-test", "version": "0"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
TOKEN = "guard-test-token-0123456789abcdefghij"


@pytest.fixture(scope="module")
def memory_path(tmp_path_factory):
    return shared_memory(tmp_path_factory)


def routes(memory_path) -> list[str]:
    frame = sorted((memory_path / "frames" / "kitchen").glob("*.jpg"))[0].name
    return ["/", "/index.html", "/video-kitchen.html", "/timeline-kitchen.png", f"/frames/kitchen/{frame}",
            "/health", "/mcp"]


def request(client: TestClient, path: str, headers: dict[str, str] | None = None):
    if path == "/mcp":
        return client.post(path, json=INITIALIZE, headers={**MCP_HEADERS, **(headers or {})})
    return client.get(path, headers=headers or {})


def served(memory_path, options: HttpOptions | None = None, auth=None) -> TestClient:
    app = http_app(build_server(memory_path), "127.0.0.1", options or HttpOptions(), auth)
    return TestClient(app, base_url="http://127.0.0.1:8765")


def test_every_route_refuses_a_foreign_host_or_origin(memory_path):
    with served(memory_path) as client:
        for path in routes(memory_path):
            assert request(client, path).status_code == 200, path
            assert request(client, path, {"Host": "localhost:8765", "Origin": "http://localhost:8765"}).status_code \
                == 200, path
            assert request(client, path, {"Host": "attacker.test"}).status_code == 421, path
            assert request(client, path, {"Host": "attacker.test:8765"}).status_code == 421, path
            refused = request(client, path, {"Origin": "http://attacker.test"})
            assert refused.status_code == 403 and "--allowed-origin" in refused.json()["error"], path
            assert request(client, path, {"Origin": "null"}).status_code == 403, path


def test_only_the_servers_own_origin_passes_on_loopback(memory_path):
    """A page on another local port (a dev server, another app) is another origin: it may not call /mcp."""
    with served(memory_path) as client:
        for origin in ("http://127.0.0.1:8765", "http://localhost:8765", "http://[::1]:8765"):  # this server
            assert request(client, "/mcp", {"Origin": origin}).status_code == 200, origin
        for origin in ("http://localhost:3000", "http://127.0.0.1:8766", "http://127.0.0.1", "https://127.0.0.1:8765",
                       "http://127.0.0.2:8765"):
            refused = request(client, "/mcp", {"Origin": origin})
            assert refused.status_code == 403 and "--allowed-origin" in refused.json()["error"], origin
    with served(memory_path, HttpOptions(allowed_origins=("http://localhost:3000",))) as client:
        assert request(client, "/mcp", {"Origin": "http://localhost:3000"}).status_code == 200
        assert request(client, "/mcp", {"Origin": "http://localhost:3001"}).status_code == 403


def test_allowed_hosts_and_origins_widen_the_guard(memory_path):
    options = HttpOptions(allowed_hosts=("video-box.lan",), allowed_origins=("https://app.example.com",))
    with served(memory_path, options) as client:
        for path in routes(memory_path):
            assert request(client, path, {"Host": "video-box.lan:8765"}).status_code == 200, path
            assert request(client, path, {"Host": "video-box.lan:8765", "Origin": "http://video-box.lan:8765"}) \
                .status_code == 200, path  # same origin
            assert request(client, path, {"Origin": "https://app.example.com"}).status_code == 200, path
            assert request(client, path, {"Host": "other.lan"}).status_code == 421, path
            assert request(client, path, {"Origin": "https://app.example.com.attacker.test"}).status_code == 403, path


def test_a_static_token_guards_every_route(memory_path, monkeypatch):
    monkeypatch.setenv("MEMTOOLS_TEST_TOKEN", TOKEN)
    options = HttpOptions(auth_token_env="MEMTOOLS_TEST_TOKEN")
    with served(memory_path, options, authenticator(options)) as client:
        for path in routes(memory_path):
            missing = request(client, path)
            assert missing.status_code == 401 and missing.headers["www-authenticate"] == 'Bearer realm="memtools"'
            wrong = request(client, path, {"Authorization": f"Bearer {TOKEN[:-1]}x"})
            assert wrong.status_code == 401 and 'error="invalid_token"' in wrong.headers["www-authenticate"]
            assert request(client, path, {"Authorization": f"Basic {TOKEN}"}).status_code == 401
            assert request(client, path, {"Authorization": f"Bearer {TOKEN}"}).status_code == 200, path
            assert request(client, path, {"Authorization": f"Bearer {TOKEN}", "Host": "attacker.test"}) \
                .status_code == 421  # a token does not lift the host guard


def test_a_token_variable_that_is_not_set_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("MEMTOOLS_NO_SUCH_TOKEN", raising=False)
    with pytest.raises(ConfigError, match="MEMTOOLS_NO_SUCH_TOKEN is not set"):
        authenticator(HttpOptions(auth_token_env="MEMTOOLS_NO_SUCH_TOKEN"))


@pytest.mark.parametrize("token", ["x", "s3cret-token", "y" * 31])
def test_a_short_token_is_refused_at_start(monkeypatch, token):
    monkeypatch.setenv("MEMTOOLS_TEST_TOKEN", token)
    with pytest.raises(ConfigError) as refused:
        authenticator(HttpOptions(auth_token_env="MEMTOOLS_TEST_TOKEN"))
    assert f"the token in MEMTOOLS_TEST_TOKEN has {len(token)} characters" in str(refused.value)
    assert "at least 32" in str(refused.value) and "secrets.token_urlsafe(32)" in str(refused.value)
    monkeypatch.setenv("MEMTOOLS_TEST_TOKEN", "z" * 32)
    authenticator(HttpOptions(auth_token_env="MEMTOOLS_TEST_TOKEN"))


def test_a_plain_http_issuer_must_be_on_this_machine():
    for issuer in ("http://auth.example.com", "http://10.0.0.5:9000", "http://localhost.attacker.test"):
        with pytest.raises(ConfigError, match="plain http would let anyone on the network read the tokens.*https://"):
            authenticator(HttpOptions(auth_issuer=issuer))
    for issuer in ("https://auth.example.com", "http://127.0.0.1:9000", "http://localhost:9000", "http://[::1]:9000"):
        assert authenticator(HttpOptions(auth_issuer=issuer)).issuer == issuer


def test_listening_beyond_loopback_needs_authentication_or_an_explicit_opt_out(monkeypatch):
    with pytest.raises(ConfigError, match="refusing to serve on 0.0.0.0 without authentication"):
        check_exposure("0.0.0.0", None, HttpOptions())
    check_exposure("127.0.0.1", None, HttpOptions())
    check_exposure("0.0.0.0", None, HttpOptions(insecure_no_auth=True))
    monkeypatch.setenv("MEMTOOLS_TEST_TOKEN", "x" * 32)
    options = HttpOptions(auth_token_env="MEMTOOLS_TEST_TOKEN")
    check_exposure("0.0.0.0", authenticator(options), options)


class Issuer:
    """An OAuth issuer on 127.0.0.1: RFC 8414 metadata and RFC 7662 introspection of a few known tokens."""

    def __init__(self) -> None:
        issuer = self
        self.tokens: dict[str, dict] = {}

        class Handler(BaseHTTPRequestHandler):
            def _json(self, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # noqa: N802 - http.server's name
                if self.path == "/.well-known/oauth-authorization-server":
                    self._json({"issuer": issuer.url, "introspection_endpoint": issuer.url + "/introspect"})
                else:
                    self.send_error(404)

            def do_POST(self):  # noqa: N802
                form = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
                issuer.asked += 1
                self._json(issuer.tokens.get(form["token"][0], {"active": False}))

            def log_message(self, *args):
                pass

        self.asked = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_mcp_authorization_with_a_local_issuer(memory_path):
    issuer = Issuer()
    future = 4_000_000_000
    issuer.tokens = {
        "good": {"active": True, "iss": issuer.url, "aud": ["memtools-test"], "exp": future, "client_id": "claude",
                 "scope": "mcp"},
        "expired": {"active": True, "iss": issuer.url, "aud": "memtools-test", "exp": 1_000},
        "other-audience": {"active": True, "iss": issuer.url, "aud": "someone-else", "exp": future},
        "other-issuer": {"active": True, "iss": "https://evil.example", "aud": "memtools-test", "exp": future},
        "revoked": {"active": False},
    }
    try:
        options = HttpOptions(auth_issuer=issuer.url, auth_audience="memtools-test")
        with served(memory_path, options, authenticator(options)) as client:
            metadata = client.get("/.well-known/oauth-protected-resource")  # public: how a client finds the issuer
            assert metadata.status_code == 200 and metadata.json()["authorization_servers"] == [issuer.url]
            assert metadata.json()["resource"] == "http://127.0.0.1:8765/mcp"
            assert client.get("/.well-known/oauth-protected-resource/mcp").json() == metadata.json()
            assert client.get("/.well-known/oauth-protected-resource", headers={"Host": "attacker.test"}) \
                .status_code == 421
            for path in routes(memory_path):
                missing = request(client, path)
                assert missing.status_code == 401 and missing.headers["www-authenticate"] == (
                    'Bearer resource_metadata="http://127.0.0.1:8765/.well-known/oauth-protected-resource"')
                for bad in ("expired", "other-audience", "other-issuer", "revoked", "unknown"):
                    refused = request(client, path, {"Authorization": f"Bearer {bad}"})
                    assert refused.status_code == 401 and 'error="invalid_token"' in \
                        refused.headers["www-authenticate"], (path, bad)
                assert request(client, path, {"Authorization": "Bearer good"}).status_code == 200, path
        asked = issuer.asked
        verifier = authenticator(options)
        access = anyio.run(verifier.verify_token, "good")  # the SDK's TokenVerifier protocol
        assert access.client_id == "claude" and access.scopes == ["mcp"] and access.expires_at == future
        assert anyio.run(verifier.verify_token, "good") is not None and issuer.asked == asked + 1  # cached
    finally:
        issuer.close()


def test_an_unreachable_issuer_is_a_503_not_a_bad_token(memory_path, monkeypatch):
    """Connection refused, or no answer in time: the client is told to come back, not that its token is bad."""
    monkeypatch.setattr(auth, "TIMEOUT", 0.5)
    with socket.socket() as silent:  # listens (the kernel accepts connections) but never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        for issuer, why in (("http://127.0.0.1:9", "cannot be reached"),
                            (f"http://127.0.0.1:{silent.getsockname()[1]}", "did not answer within 0.5 s")):
            options = HttpOptions(auth_issuer=issuer, auth_audience="memtools-test")
            with served(memory_path, options, authenticator(options)) as client:
                for path in ("/health", "/mcp"):
                    answer = request(client, path, {"Authorization": "Bearer good"})
                    assert answer.status_code == 503 and answer.headers["retry-after"] == "5", (issuer, path)
                    error = answer.json()["error"]
                    assert error.startswith(f"cannot check the bearer token now: the token issuer {issuer} {why}")
                    assert error.endswith("; try again in a few seconds")
                assert request(client, "/health").status_code == 401  # no token: nothing to ask the issuer


def test_get_on_the_stateless_endpoint_ends_at_once(memory_path):
    with served(memory_path) as client:
        answer = client.get("/mcp", headers={"Accept": "text/event-stream"})
        assert answer.status_code == 405 and answer.headers["allow"] == "POST"


async def test_requests_beyond_the_cap_are_answered_503():
    release, entered = anyio.Event(), anyio.Event()

    async def slow(scope, receive, send):
        entered.set()
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"done"})

    guard = Guard(slow, Gate.make("127.0.0.1", max_connections=1))
    statuses: list[int] = []

    async def call() -> None:
        async def receive():
            return {"type": "http.request", "body": b""}

        async def send(message):
            if message["type"] == "http.response.start":
                statuses.append(message["status"])

        await guard({"type": "http", "method": "GET", "path": "/", "headers": [(b"host", b"127.0.0.1")]},
                    receive, send)

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        await entered.wait()
        await call()  # the second one while the first is in flight
        assert statuses == [503]
        release.set()
    assert statuses == [503, 200]
    await call()  # the slot is free again
    assert statuses[-1] == 200 and guard.in_flight == 0


def test_serving_beyond_loopback_without_auth_is_refused_before_listening(memory_path, capsys):
    from memtools.mcp.run import main

    assert main(["--memory", str(memory_path), "--transport", "http", "--host", "0.0.0.0", "--port", "9"]) == 1
    assert "refusing to serve on 0.0.0.0 without authentication" in capsys.readouterr().err


def test_the_banner_names_the_mcp_url_and_the_pages(memory_path, capsys, monkeypatch):
    from memtools.mcp import launch, run

    served_with: list = []
    monkeypatch.setattr(launch, "run_http",
                        lambda server, host, port, options: served_with.append((host, port, options)))
    assert run.main(["--memory", str(memory_path), "--http", "--port", "8799", "--allowed-host", "box.lan",
                     "--tool-prefix", "memtools_"]) == 0
    err = capsys.readouterr().err
    assert "MCP at http://127.0.0.1:8799/mcp" in err and "browsable pages at http://127.0.0.1:8799/" in err
    host, port, options = served_with[0]
    assert (host, port, options.allowed_hosts) == ("127.0.0.1", 8799, ("box.lan",))
    assert run.main(["--memory", str(memory_path), "--tool-prefix", "bad prefix"]) == 1
    assert "--tool-prefix 'bad prefix'" in capsys.readouterr().err
