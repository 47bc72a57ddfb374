"""Cache hints on the lists and reads (protocol 2026-07-28, mcp 2.x), and telling clients what a write made stale.

At 2026-07-28 every ``tools/list``, ``resources/list``, ``resources/templates/list``, ``prompts/list`` and
``resources/read`` result says how long a client may reuse it (``ttlMs``) and whether a shared cache may serve it
to another caller (``cacheScope``); the SDK's client honours both. What memtools lists and serves changes only when
the memory is written (its manifest generation moves), so:

- ``tools/list``, ``resources/list`` and ``resources/read`` (the video list, summaries, frames): ``LIST_TTL_MS``
  (30 s), ``private``. The tool list differs per caller (the write tools are listed only to callers that may
  write) and every answer is the memory's content, which a token guards: never for a shared cache.
- ``resources/templates/list`` and ``prompts/list``: ``FIXED_TTL_MS`` (1 h), ``public``. They come from the code,
  the same for every caller and every memory, and change only with a new server.

Invalidated by a write: after a tool call, when the generation moved since the last call (a write through this
server, or a build, import or change from another process), the server publishes ``resources/list_changed``
and ``resources/updated`` for ``memtools://videos`` and for the summary of the video a write touched to the
``subscriptions/listen`` streams of its clients; the SDK's client drops those cached answers at once. A client
that does not listen, and anything else cached (a keyframe of a forgotten video), is at most ``LIST_TTL_MS`` stale:
30 s is the longest a new or forgotten video should stay unseen, while a client that lists every few seconds
(an agent loop) still asks once per half minute instead of once per step. On mcp 1.x (protocols up to
2025-11-25, which have no hints) nothing changes.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable
from typing import Any

import anyio.to_thread

from memtools.mcp import uris
from memtools.mcp.sdk import SDK_MAJOR
from memtools.tools.provider import ToolsProvider, held

log = logging.getLogger(__name__)

LIST_TTL_MS = 30_000
"""How long a client may reuse a list or read that depends on the memory (see the module docstring)."""
FIXED_TTL_MS = 3_600_000
"""How long a client may reuse a list that only a new server changes (resource templates, prompts)."""
HINTS: dict[str, tuple[int, str]] = {
    "tools/list": (LIST_TTL_MS, "private"),
    "resources/list": (LIST_TTL_MS, "private"),
    "resources/read": (LIST_TTL_MS, "private"),
    "resources/templates/list": (FIXED_TTL_MS, "public"),
    "prompts/list": (FIXED_TTL_MS, "public"),
}
"""Method -> (ttlMs, cacheScope)."""


def cache_hints() -> Any:
    """``HINTS`` as the SDK's ``cache_hints`` argument (mcp 2.x); ``None`` on mcp 1.x."""
    if SDK_MAJOR != 2:
        return None
    hint = importlib.import_module("mcp.server.caching").CacheHint  # mcp 2.x only
    return {method: hint(ttl_ms=ttl, scope=scope) for method, (ttl, scope) in HINTS.items()}


def _generation(tools: ToolsProvider) -> int | None:
    try:
        with held(tools) as current:
            current.memory.refresh()
            return current.memory.manifest.generation
    except Exception:  # a memory that cannot be read now: the tool call has said why
        return None


def written(spec: Any, result: Any) -> list[str]:
    """The video a successful call of a tool that changes the memory wrote to (its ``ChangeResult.video_id``)."""
    if spec.hints.read_only:
        return []
    data = result.model_dump(by_alias=True, exclude_none=True)  # 1.x and 2.x name the fields apart in Python
    video_id = None if data.get("isError") else (data.get("structuredContent") or {}).get("video_id")
    return [video_id] if isinstance(video_id, str) else []


class Freshness:
    """The memory generation this server's clients last saw, and the events that say it moved."""

    def __init__(self, tools: ToolsProvider) -> None:
        self.tools = tools
        self.seen: int | None = None

    async def after_call(self, context: Any, videos: Iterable[str] = ()) -> bool:
        """After a tool call that wrote to ``videos`` (``written``), or when the memory's generation moved since the
        last call: publish what went stale (the resource list, the video list, the summaries of ``videos``) to the
        listening clients. Whether it did."""
        if SDK_MAJOR != 2 or context is None:  # no hints, so nothing to invalidate
            return False
        video_ids = list(videos)
        now = await anyio.to_thread.run_sync(_generation, self.tools)
        moved = bool(video_ids) or (now is not None and self.seen is not None and now != self.seen)
        self.seen = now if now is not None else self.seen
        if moved:
            try:
                await context.notify_resources_changed()
                for uri in (uris.VIDEOS, *(uris.summary_uri(v) for v in video_ids)):
                    await context.notify_resource_updated(uri)
            except Exception as exc:  # the call's answer matters more than the events
                log.info("could not publish what the write made stale: %s", exc)
        return moved
