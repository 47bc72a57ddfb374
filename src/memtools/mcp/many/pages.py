"""The show pages of many memories: ``/`` lists the caller's memories, ``/m/NAME/...`` are the pages of one
(``memtools.show.web``, the same routes as a one-memory server has at ``/``).

A memory the caller may not read answers exactly as one that does not exist: 404, ``not found; start at /``.
"""

from __future__ import annotations

import html
from typing import Any

from memtools.mcp.many.access import granted, may_read
from memtools.show.web import register_show_routes

NOT_FOUND = "not found; start at /"


class _Routes:
    """Collects the routes ``register_show_routes`` adds, for one memory's router."""

    def __init__(self) -> None:
        self.routes: list[Any] = []

    def custom_route(self, path: str, methods: list[str], **kwargs: Any) -> Any:
        from starlette.routing import Route

        def add(endpoint: Any) -> Any:
            self.routes.append(Route(path, endpoint, methods=methods, **kwargs))
            return endpoint

        return add


class MemoryPages:
    """The ASGI endpoint of ``/m/{memory}/{rest:path}``: the page ``/rest`` of that memory, if the caller may read
    it."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self._routers: dict[str, Any] = {}

    def _router(self, name: str, tools: Any) -> Any:
        from starlette.routing import Router

        if name not in self._routers:
            routes = _Routes()
            register_show_routes(routes, tools)
            self._routers[name] = Router(routes=routes.routes)
        return self._routers[name]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        from starlette.responses import PlainTextResponse

        name, rest = scope["path_params"]["memory"], scope["path_params"]["rest"]
        one = self.server.visible().get(name)
        if one is None:
            await PlainTextResponse(NOT_FOUND, status_code=404)(scope, receive, send)
            return
        path = "/" + rest
        inner = {**scope, "path": path, "raw_path": path.encode(), "root_path": "", "path_params": {}}
        await self._router(name, one.server.memtools)(inner, receive, send)


def register_pages(server: Any) -> None:
    """Add ``/``, ``/index.html`` and ``/m/{memory}/...`` to ``server`` (a ``ManyServer``)."""
    from starlette.responses import HTMLResponse, RedirectResponse

    async def home(request: Any) -> Any:  # noqa: ARG001 - Starlette passes the request
        scopes = granted()
        names = sorted(n for n in server.memories.all() if may_read(scopes, n))
        items = "".join(f'<li><a href="m/{html.escape(n)}/">{html.escape(n)}</a></li>' for n in names)
        body = (f"<!doctype html><meta charset=utf-8><title>memtools memories</title><h1>Memories</h1>"
                f"<ul>{items}</ul>" if names else
                "<!doctype html><meta charset=utf-8><title>memtools memories</title><p>No memory is open to you.</p>")
        return HTMLResponse(body, headers={"Cache-Control": "no-cache"})

    server.custom_route("/", methods=["GET"])(home)
    server.custom_route("/index.html", methods=["GET"])(home)

    async def memory_root(request: Any) -> Any:  # the same answer whether the memory exists or not
        return RedirectResponse(f"/m/{request.path_params['memory']}/", status_code=307)

    server.custom_route("/m/{memory}", methods=["GET"])(memory_root)
    server.custom_route("/m/{memory}/{rest:path}", methods=["GET"])(MemoryPages(server))


__all__ = ["NOT_FOUND", "MemoryPages", "register_pages"]
