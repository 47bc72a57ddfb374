"""The MCP App in headless Chromium, hosted the way an MCP Apps host does it (SEP-1865), over a real server.

``AppHost(memory)`` runs ``build_server(memory)`` in this process behind an MCP client (the SDK's
own, over memory streams, on mcp 1.x and 2.x: ``mcp_support.Client``) and serves, on 127.0.0.1:

- ``/host.html``: ``host.html`` next to this file, the host page that frames the app;
- ``/launch.json``: what the host hands the app: the tool (from ``tools/list``), its arguments and
  its result, from a real ``tools/call``;
- ``/app.html``: the ``ui://`` resource the tool links (``_meta.ui.resourceUri``), read with
  ``resources/read``, sent with the Content-Security-Policy a host builds from its ``_meta.ui.csp``;
- ``POST /call``: the app's ``tools/call``, forwarded to the server; the answer goes back as JSON.

``sent`` counts every byte the app received (the HTML, the launch result and each answer).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio.from_thread

HOST_PAGE = Path(__file__).with_name("host.html")


def wire(result: Any) -> dict[str, Any]:
    """A result as it goes over JSON-RPC (camelCase names), from either SDK's client."""
    model = getattr(result, "_model", result)  # mcp_support's 1.x wrapper
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def host_csp(csp: dict[str, list[str]]) -> str:
    """The policy SEP-1865 tells a host to build from a resource's ``_meta.ui.csp``."""
    res = " ".join(csp.get("resourceDomains", []))
    connect = " ".join(csp.get("connectDomains", []))
    frames = " ".join(csp.get("frameDomains", [])) or "'none'"
    base = " ".join(csp.get("baseUriDomains", [])) or "'self'"
    return (f"default-src 'none'; script-src 'self' 'unsafe-inline' {res}; style-src 'self' 'unsafe-inline' {res}; "
            f"connect-src 'self' {connect}; img-src 'self' data: {res}; font-src 'self' {res}; "
            f"media-src 'self' data: {res}; frame-src {frames}; object-src 'none'; base-uri {base}")


class AppHost:
    def __init__(self, memory: Path, **server_options: Any) -> None:
        self.memory = memory
        self.server_options = server_options
        self.sent: list[tuple[str, int]] = []  # (what, bytes) the app received
        self.launch_data: dict[str, Any] = {}
        self.app_html = b""
        self.app_csp = ""

    def __enter__(self) -> AppHost:
        from mcp_support import Client
        from memtools.mcp import build_server

        self._portal_cm = anyio.from_thread.start_blocking_portal()
        self.portal = self._portal_cm.__enter__()
        server = build_server(self.memory, **self.server_options)
        self._client_cm = self.portal.wrap_async_context_manager(Client(server))
        self.client = self._client_cm.__enter__()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._client_cm.__exit__(*exc)
        self._portal_cm.__exit__(*exc)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/host.html"

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return wire(self.portal.call(self.client.call_tool, name, arguments))

    def tools(self) -> dict[str, dict[str, Any]]:
        return {t["name"]: t for t in (wire(self.portal.call(self.client.list_tools)))["tools"]}

    def launch(self, tool: str, arguments: dict[str, Any], theme: str | None = "light") -> str:
        """What a host does when the model calls ``tool``: call it, find the app it links and read that; returns the
        host page's URL. ``theme=None`` sends no theme (the app follows prefers-color-scheme)."""
        listed = self.tools()[tool]
        uri = listed["_meta"]["ui"]["resourceUri"]
        content = wire(self.portal.call(self.client.read_resource, uri))["contents"][0]
        assert content["mimeType"] == "text/html;profile=mcp-app", content["mimeType"]
        self.app_html = content["text"].encode()
        self.app_csp = host_csp(content.get("_meta", {}).get("ui", {}).get("csp", {}))
        result = self.call(tool, arguments)
        self.launch_data = {"tool": listed, "arguments": arguments, "result": result, "theme": theme}
        self.sent = [("app.html", len(self.app_html)), (tool, len(json.dumps(result)))]
        return self.url

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        host = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, body: bytes, kind: str, headers: dict[str, str] | None = None) -> None:
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if self.path == "/host.html":
                    self._send(HOST_PAGE.read_bytes(), "text/html; charset=utf-8")
                elif self.path == "/launch.json":
                    self._send(json.dumps(host.launch_data).encode(), "application/json")
                elif self.path == "/app.html":
                    self._send(host.app_html, "text/html; charset=utf-8", {"Content-Security-Policy": host.app_csp})
                else:
                    self.send_error(404)

            def do_POST(self) -> None:  # noqa: N802
                if self.path != "/call":
                    self.send_error(404)
                    return
                asked = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                body = json.dumps(host.call(asked["name"], asked.get("arguments") or {})).encode()
                host.sent.append((asked["name"], len(body)))
                self._send(body, "application/json")

        return Handler
