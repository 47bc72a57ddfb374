"""``completion/complete``: values for every resource-template variable and prompt argument, from the memory.

- ``video_id`` (the summary, keyframe and frame templates; the prompt): the memory's video ids;
- ``name`` (keyframe template): the keyframe names (``kf_0001``) of the ``video_id`` already given;
- ``t`` (frame template): the keyframe times (``130.000``) of the ``video_id`` already given;
- ``question`` (prompt): the named entities of the memory (of ``video_id`` when given), so a
  client can offer "the red van", "Anna", ... while the user types.

Values are prefix-matched (case-insensitively) against what was typed, sorted, and capped at
100 (``hasMore`` says when more matched). An unknown argument, or a memory that cannot be read
right now, completes to nothing rather than failing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio.to_thread
from mcp.types import Completion

from memtools.ontology import VIDEO_ID_RE
from memtools.tools import MemoryTools
from memtools.tools.provider import held

log = logging.getLogger(__name__)

MAX_VALUES = 100
FOREVER = 1e12


def _video_ids(tools: MemoryTools, _: str | None) -> list[str]:
    with tools.memory.reading() as g:
        return list(g.video_ids())


def _keyframes(tools: MemoryTools, video_id: str | None) -> list[Any]:
    if not video_id or not VIDEO_ID_RE.fullmatch(video_id):
        return []
    with tools.memory.reading() as g:
        return list(g.keyframes(video_id, 0.0, FOREVER))


def _keyframe_names(tools: MemoryTools, video_id: str | None) -> list[str]:
    return [k.id.partition("/")[2] for k in _keyframes(tools, video_id)]


def _keyframe_times(tools: MemoryTools, video_id: str | None) -> list[str]:
    return [f"{k.t:.3f}" for k in _keyframes(tools, video_id)]


def _entity_names(tools: MemoryTools, video_id: str | None) -> list[str]:
    with tools.memory.reading() as g:
        videos = [video_id] if video_id and VIDEO_ID_RE.fullmatch(video_id) else list(g.video_ids())
        names: set[str] = set()
        for vid in videos:
            graph = g.video_graph(vid)
            if graph is not None:
                names.update(e.name for e in graph.entities if e.name)
    return list(names)


SOURCES: dict[str, Callable[[MemoryTools, str | None], list[str]]] = {
    "video_id": _video_ids, "name": _keyframe_names, "t": _keyframe_times, "question": _entity_names}


def complete(tools: MemoryTools, argument: str, typed: str, context: dict[str, str] | None) -> Completion:
    """The completion of ``argument`` (typed so far: ``typed``) given the other arguments in ``context``."""
    source = SOURCES.get(argument)
    if source is None:
        return Completion(values=[], total=0, hasMore=False)
    try:
        values = source(tools, (context or {}).get("video_id"))
    except Exception as exc:  # completion is a convenience: never an error for the client
        log.info("no completion for %s: %s", argument, exc)
        values = []
    prefix = typed.lower()
    matched = sorted({v for v in values if v.lower().startswith(prefix)}, key=lambda v: (v.lower(), v))
    return Completion(values=matched[:MAX_VALUES], total=len(matched), hasMore=len(matched) > MAX_VALUES)


def register_completions(server: Any, tools: Callable[[], MemoryTools]) -> None:
    """Answer ``completion/complete`` for the resource templates and prompts of ``server``."""

    @server.completion()
    async def handle(ref: Any, argument: Any, context: Any) -> Completion:  # noqa: ARG001 - one source per name
        known = dict(getattr(context, "arguments", None) or {})
        def run() -> Completion:
            with held(tools) as current:
                return complete(current, argument.name, argument.value or "", known)

        return await anyio.to_thread.run_sync(run)
