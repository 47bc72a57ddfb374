"""The memory inside the chat: an MCP App (extension ``io.modelcontextprotocol/ui``, SEP-1865).

One ``ui://`` resource, ``ui://memtools/timeline``: a self-contained HTML page (the files of
``memtools/show/assets/app/``, joined here) that a host supporting MCP Apps renders next to the
conversation, in a sandboxed iframe. The tools that return times of one or more videos link it
with ``_meta.ui.resourceUri`` in ``tools/list``; the host then hands the page the tool's result
(``ui/notifications/tool-result``) and the page draws keyframes, super and macro events and the
result's hits or appearances on a time axis. A click on a moment calls ``get_macro_events`` back
through the host (``tools/call``) and shows the answer.

The page needs no network: its script and style are inline (allowed by their hashes in the page's
own Content-Security-Policy), the frames are the base64 JPEGs ``inspect_frames`` already returns
(shown as ``data:`` URIs), and the resource declares no connect or resource domains. Clients without
the extension ignore ``_meta.ui`` and get the same results as always: nothing in a tool's result
depends on the app.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from importlib import resources
from typing import Any

APP_URI = "ui://memtools/timeline"
APP_MIME = "text/html;profile=mcp-app"
LINKED_TOOLS = frozenset({"get_summary", "search_by_time", "search_nodes", "get_entity_timeline"})
"""The tools whose results the app draws: a video's overview, a time window, search hits, an entity's appearances."""
APP_META: dict[str, Any] = {"ui": {
    "csp": {"connectDomains": [], "resourceDomains": [], "frameDomains": [], "baseUriDomains": []},
    "prefersBorder": True}}
"""``_meta`` of the resource: no domain of any kind (everything is inline or a ``data:`` URI)."""
PARTS = ("app.html", "app.css", "protocol.js", "draw.js", "app.js")


def tool_meta(name: str) -> dict[str, Any]:
    """The ``_meta`` that links a (bare) memtools tool to the app: ``{"ui": {"resourceUri": ...}}``, or nothing."""
    return {"ui": {"resourceUri": APP_URI}} if name in LINKED_TOOLS else {}


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@functools.cache
def app_html() -> str:
    """The app as one HTML document: the style and the scripts inline, and a CSP allowing exactly those."""
    folder = resources.files("memtools.show") / "assets" / "app"
    page, css, *scripts = (folder.joinpath(name).read_text(encoding="utf-8") for name in PARTS)
    js = "(function () {\n" + "\n".join(scripts) + "})();\n"  # one scope for the three parts, none global
    if "</script" in js.lower() or "</style" in css.lower():  # pragma: no cover - guards the asset files
        raise ValueError("the app's script or style closes its own tag")
    csp = (f"default-src 'none'; script-src {_sha256(js)}; style-src {_sha256(css)}; img-src data:; "
           "connect-src 'none'; frame-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'")
    return page.replace("{{csp}}", csp).replace("{{css}}", css).replace("{{js}}", js)


def register_app(server: Any) -> None:
    """Add the app's ``ui://`` resource to the SDK's server (read with ``resources/read``; not in ``resources/list``,
    which the server keeps for what a person attaches: ``MemtoolsServer.list_resources``)."""

    @server.resource(APP_URI, name="timeline_app", title="memtools timeline", mime_type=APP_MIME, meta=APP_META,
                     description="An MCP App (io.modelcontextprotocol/ui) that draws a memtools result on a time "
                                 "axis: keyframes, super and macro events, hits or appearances; clicking a moment "
                                 "calls get_macro_events through the host.")
    async def timeline_app() -> str:
        return app_html()
