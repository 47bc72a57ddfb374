"""The show pages, live: Starlette routes for the MCP server's HTTP app (``memtools serve --http``).

The routes serve the same files ``memtools show`` writes, at the same relative names, so one
page works from disk and from the server: ``/`` (the library), ``/index-N.html``,
``/video-<id>.html`` and its ``.parts/<n>.js``, ``/timeline-<id>.png`` and
``/frames/<id>/<file>``. Everything is read-only and goes through the server's own
``MemoryTools`` (the graph is opened read-only per call, as for the tools), so a person can
watch the memory Claude is reading while ``memtools build`` adds to it. Pages are cached per
video and memory generation.
"""

from __future__ import annotations

import io
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import anyio.to_thread

from memtools.errors import MemoryBusy, MemtoolsError, ToolError
from memtools.ontology import VIDEO_ID_RE
from memtools.show.collect import library, video_view
from memtools.show.page import library_pages, video_files, video_page_name
from memtools.show.timeline import draw_timeline
from memtools.tools import MemoryTools
from memtools.tools.provider import held

log = logging.getLogger(__name__)

FRAME_NAME = re.compile(r"[A-Za-z0-9_.-]{1,200}\.(jpg|jpeg|png)")
"""A frame file's name (matched whole); longer or odder names are not there (404), never asked of the file system."""
CACHED_VIDEOS = 16
TYPES = {"html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8", "png": "image/png"}


class ShowSite:
    """The pages of one memory, made on demand and cached per (video, generation)."""

    def __init__(self, tools: Callable[[], MemoryTools]) -> None:
        self._tools = tools
        self._cache: OrderedDict[tuple[str, int], dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def index(self, page: int) -> str | None:
        with held(self._tools) as tools:
            rows = library(tools)
            linked = {r.video_id for r in rows if r.status == "ready"}
            return library_pages(rows, linked, title=f"memtools library: {tools.memory.path.name}").get(
                "index.html" if page <= 1 else f"index-{page}.html")

    def _video(self, video_id: str) -> dict[str, Any]:
        with held(self._tools) as tools:
            tools.memory.refresh()
            key = (video_id, tools.memory.manifest.generation)
            with self._lock:
                if key in self._cache:
                    self._cache.move_to_end(key)
                    return self._cache[key]
            view = video_view(tools, video_id)
        entry = {"view": view, "files": video_files(view), "png": None}
        with self._lock:
            self._cache[key] = entry
            while len(self._cache) > CACHED_VIDEOS:
                self._cache.popitem(last=False)
        return entry

    def video_file(self, video_id: str, name: str) -> str | None:
        return self._video(video_id)["files"].get(name)

    def timeline(self, video_id: str) -> bytes:
        entry = self._video(video_id)
        if entry["png"] is None:
            buffer = io.BytesIO()
            with held(self._tools) as tools:
                draw_timeline(entry["view"], buffer, memory_path=tools.memory.path)
            entry["png"] = buffer.getvalue()
        return entry["png"]

    def frame(self, video_id: str, name: str):
        return self._frame_path(self._tools(), video_id, name)

    def frame_bytes(self, video_id: str, name: str) -> bytes | None:
        """The stored frame's bytes, read while its memory is held (a replica may move to a new version)."""
        with held(self._tools) as tools:
            path = self._frame_path(tools, video_id, name)
            return path.read_bytes() if path is not None else None

    @staticmethod
    def _frame_path(tools: MemoryTools, video_id: str, name: str):
        folder = tools.memory.frames_dir(video_id)
        path = folder / name
        try:
            return path if path.is_file() and path.parent == folder else None
        except OSError:  # a name the file system refuses (too long for it, ...): not there
            return None


def _video_id(text: str) -> str | None:
    return text if VIDEO_ID_RE.fullmatch(text) else None


def register_show_routes(server, tools: Callable[[], MemoryTools]) -> ShowSite:
    """Add the read-only page routes to an ``MCPServer`` (``tools`` returns its ``MemoryTools``)."""
    from starlette.responses import PlainTextResponse, Response

    site = ShowSite(tools)

    async def answer(make: Callable[[], Any], kind: str) -> Response:
        try:
            body = await anyio.to_thread.run_sync(make)
        except (MemoryBusy, ToolError) as exc:
            busy = isinstance(exc, MemoryBusy) or (isinstance(exc, ToolError) and exc.kind == "busy")
            return PlainTextResponse(str(exc), status_code=503 if busy else 404)
        except MemtoolsError as exc:
            log.warning("show page failed: %s", exc)
            return PlainTextResponse(str(exc), status_code=500)
        if body is None:
            return PlainTextResponse("not found; start at /", status_code=404)
        return Response(body, media_type=TYPES[kind], headers={"Cache-Control": "no-cache"})

    @server.custom_route("/", methods=["GET"])
    async def home(request):  # noqa: ARG001 - Starlette passes the request
        return await answer(lambda: site.index(1), "html")

    @server.custom_route("/index.html", methods=["GET"])
    async def index_first(request):  # noqa: ARG001
        return await answer(lambda: site.index(1), "html")

    @server.custom_route("/index-{page:int}.html", methods=["GET"])
    async def index_page(request):
        return await answer(lambda: site.index(request.path_params["page"]), "html")

    @server.custom_route("/video-{video_id}.html", methods=["GET"])
    async def video_page(request):
        vid = _video_id(request.path_params["video_id"])
        return await answer(lambda: vid and site.video_file(vid, video_page_name(vid)), "html")

    @server.custom_route("/video-{video_id}.parts/{n:int}.js", methods=["GET"])
    async def video_part(request):
        vid, n = _video_id(request.path_params["video_id"]), request.path_params["n"]
        return await answer(lambda: vid and site.video_file(vid, f"video-{vid}.parts/{n}.js"), "js")

    @server.custom_route("/timeline-{video_id}.png", methods=["GET"])
    async def timeline(request):
        vid = _video_id(request.path_params["video_id"])
        return await answer(lambda: vid and site.timeline(vid), "png")

    @server.custom_route("/frames/{video_id}/{name}", methods=["GET"])
    async def frame(request):
        vid, name = _video_id(request.path_params["video_id"]), request.path_params["name"]
        if not vid or not FRAME_NAME.fullmatch(name):
            return PlainTextResponse("not found", status_code=404)
        body = await anyio.to_thread.run_sync(lambda: site.frame_bytes(vid, name))
        if body is None:
            return PlainTextResponse("not found", status_code=404)
        return Response(body, media_type="image/png" if name.endswith(".png") else "image/jpeg")

    return site
