"""Every tool's output on a memory, for comparing two copies of it (``memtools migrate`` checks
that a memory answers exactly the same on its new graph engine).

``snapshot_calls`` derives the arguments from the memory itself (its videos, super and macro
events, key entities), one builder per tool of ``TOOL_SPECS``: a tool added to the catalogue
without a builder here is refused, so a migration can never skip it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from memtools.store.outline import Outline
from memtools.tools.core import MemoryTools
from memtools.tools.specs import TOOL_SPECS

MACROS_PER_VIDEO = 3  # get_subgraph / get_relations calls per video

Args = dict[str, Any]


def _query(o: Outline) -> str:
    return o.video.title or (o.macros[0].label if o.macros else o.video.id)


def _entity(o: Outline) -> str:
    return next((e for e in (*o.video.key_entities, *(k for m in o.macros for k in m.key_entities)) if e), "person")


BUILDERS: dict[str, Callable[[Outline], list[Args]]] = {
    "list_videos": lambda o: [{}],
    "get_summary": lambda o: [{"video_id": o.video.id}],
    "get_super_events": lambda o: [{"video_id": o.video.id}],
    "get_macro_events": lambda o: [{"super_id": s.id} for s in o.supers[:2]],
    "get_subgraph": lambda o: [{"macro_id": m.id} for m in o.macros[:MACROS_PER_VIDEO]],
    "search_nodes": lambda o: [{"query": _query(o), "video_id": o.video.id}, {"query": _query(o)}],
    "search_graph": lambda o: [{"query": _query(o), "video_id": o.video.id}],
    "search_entities": lambda o: [{"query": _entity(o)}],
    "get_entity_timeline": lambda o: [{"name": _entity(o), "video_id": o.video.id}, {"name": _entity(o)}],
    "get_event_chain": lambda o: [{"activity": o.macros[0].label if o.macros else "walking"}],
    "search_by_time": lambda o: [{"start_sec": 0, "end_sec": max(o.video.duration, 1.0), "video_id": o.video.id}],
    "get_transcript": lambda o: [{"video_id": o.video.id, "start_sec": 0, "end_sec": max(o.video.duration, 1.0)}],
    "get_relations": lambda o: [{"node_id": m.id} for m in o.macros[:MACROS_PER_VIDEO]] + [{"node_id": o.video.id}],
    "inspect_frames": lambda o: [{"video_id": o.video.id, "start_sec": 0, "end_sec": max(o.video.duration, 1.0)}],
    "search_frames": lambda o: [{"query": _query(o), "video_id": o.video.id}],
}


def snapshot_calls(tools: MemoryTools, max_videos: int | None = None) -> list[tuple[str, Args]]:
    """(tool, arguments) for every tool of the catalogue, over the first ``max_videos`` videos."""
    missing = [name for name in TOOL_SPECS if name not in BUILDERS]
    if missing:
        raise NotImplementedError(f"memtools.tools.snapshot has no arguments for {missing}: add a builder")
    calls: list[tuple[str, Args]] = []
    seen: set[str] = set()
    for video_id in tools.memory.video_ids()[:max_videos]:
        if tools.memory.manifest.videos[video_id].status != "ready":
            continue
        outline = tools.memory.outline(video_id)
        if outline is None:
            continue
        for name, build in BUILDERS.items():
            for args in build(outline):
                key = json.dumps([name, args], sort_keys=True)
                if key not in seen:
                    seen.add(key)
                    calls.append((name, args))
    return calls


def snapshot(tools: MemoryTools, max_videos: int | None = None) -> list[dict[str, Any]]:
    """Each call's rendered text, structured data and error kind (a ToolError is an answer too)."""
    out = []
    for name, args in snapshot_calls(tools, max_videos):
        outcome = TOOL_SPECS[name].invoke(tools, args)
        out.append({"tool": name, "arguments": args, "text": outcome.text, "error": outcome.error,
                    "data": json.loads(json.dumps(outcome.data, default=str, sort_keys=True)),
                    "images": [hashlib.sha256(image).hexdigest() for image in outcome.images]})
    return out


def differences(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[str]:
    """One line per call whose output differs between two snapshots (empty: identical)."""
    lines = []
    if [(b["tool"], b["arguments"]) for b in before] != [(a["tool"], a["arguments"]) for a in after]:
        return ["the two memories do not hold the same videos, super and macro events (different calls)"]
    for b, a in zip(before, after, strict=True):
        if b != a:
            lines.append(f"{b['tool']}({json.dumps(b['arguments'], sort_keys=True)}) differs")
    return lines


__all__ = ["BUILDERS", "differences", "snapshot", "snapshot_calls"]
