"""What a page shows, read through the public tools: plain JSON-able dicts, one per video.

Everything comes from ``MemoryTools`` (list_videos, get_summary, get_super_events,
get_macro_events, get_subgraph, get_relations) plus the memory's stored keyframe list; nothing
here writes. Times are seconds from the video's start, as everywhere in memtools.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from memtools.errors import MemoryBusy, ToolBusy
from memtools.tools import MemoryTools
from memtools.tools import messages as msg

MACRO_RELATIONS = ["CAUSES", "PREVENTS", "ENABLES"]
SUPER_RELATIONS = ["LEADS_TO", "RESOLVES", "CONTRASTS_WITH"]
KEYFRAMES_PER_MACRO = 6
STRIP_FRAMES = 40
MAIN_ENTITIES = 8


def _r(t: float | None) -> float | None:
    return None if t is None else round(float(t), 2)


@dataclass(frozen=True)
class VideoRow:
    """One line of the library index."""

    video_id: str
    title: str
    duration: float
    status: str
    counts: dict[str, int]

    def as_json(self) -> dict[str, Any]:
        return {"id": self.video_id, "title": self.title, "duration": _r(self.duration), "status": self.status,
                "counts": self.counts}


def library(tools: MemoryTools) -> list[VideoRow]:
    return [VideoRow(v.video_id, v.title, v.duration, v.status, dict(v.counts)) for v in tools.list_videos().videos]


def _evenly(items: list, n: int) -> list:
    if len(items) <= n:
        return list(items)
    step = (len(items) - 1) / (n - 1) if n > 1 else 0
    return [items[round(i * step)] for i in range(n)]


def keyframes(tools: MemoryTools, video_id: str, duration: float) -> list[dict[str, Any]]:
    """Stored keyframes of a video (id, t, path relative to the memory folder, macro id)."""
    try:
        with tools.memory.reading() as g:
            frames = g.keyframes(video_id, 0.0, max(duration, 0.0) + 1e9)
    except MemoryBusy as exc:
        raise ToolBusy(msg.BUSY) from exc
    return [{"id": k.id, "t": _r(k.t), "path": k.path, "macro": k.macro_id or ""} for k in frames]


def _relations(tools: MemoryTools, node_id: str, labels: list[str]) -> list[list[str]]:
    rel = tools.get_relations(node_id, direction="out", relation_types=labels)
    return [[e.source, e.target, e.label, e.description] for e in rel.outgoing]


def _nodes(items) -> list[dict[str, Any]]:
    out = []
    for n in items:
        row: dict[str, Any] = {"id": n.id, "text": n.text}
        if n.t_start is not None:
            row["t0"], row["t1"] = _r(n.t_start), _r(n.t_end)
        if n.detail:
            row["detail"] = n.detail
        out.append(row)
    return out


def subgraph(tools: MemoryTools, macro_id: str, frames: list[dict[str, Any]]) -> dict[str, Any]:
    """A macro event's details: summary, entities, micro-events, on-screen text, speech (who said what), edges,
    keyframes."""
    sub = tools.get_subgraph(macro_id)
    return {
        "summary": sub.macro.summary,
        "entities": _nodes(sub.entities), "events": _nodes(sub.events), "ocr": _nodes(sub.ocr),
        "speech": [{k: v for k, v in row.items() if k != "detail"} for row in _nodes(sub.speech)],  # text names who
        "edges": [[e.source, e.target, e.label, e.category, e.description] for e in sub.edges],
        "relations": _relations(tools, macro_id, MACRO_RELATIONS),
        "keyframes": [[f["t"], PurePosixPath(f["path"]).name] for f in _evenly(frames, KEYFRAMES_PER_MACRO)],
    }


def main_entities(macros: list[dict[str, Any]], subgraphs: dict[str, dict[str, Any]], key: list[str],
                  limit: int = MAIN_ENTITIES) -> list[dict[str, Any]]:
    """The entities named in the most macro events (the video's key entities first among equals),
    each with the macro events it appears in."""
    where: dict[str, list[str]] = {}
    order = {m["id"]: i for i, m in enumerate(macros)}
    for m in macros:
        names = list(m["key_entities"])
        if not names:  # fall back on the subgraph's own entities
            names = [e["text"].split(" ", 1)[-1] for e in subgraphs.get(m["id"], {}).get("entities", [])]
        for name in dict.fromkeys(n.strip().lower() for n in names if n.strip()):
            where.setdefault(name, []).append(m["id"])
    key_rank = {name.strip().lower(): i for i, name in enumerate(key)}
    ranked = sorted(where, key=lambda n: (-len(where[n]), key_rank.get(n, len(key_rank))))[:limit]
    ranked.sort(key=lambda n: min(order[m] for m in where[n]))
    return [{"name": name, "macros": where[name]} for name in ranked]


def outline(tools: MemoryTools, video_id: str) -> dict[str, Any]:
    """The top of a video: root, super events (with their progression edges) and macro events."""
    summary = tools.get_summary(video_id)
    supers = tools.get_super_events(video_id).supers
    macros: list[dict[str, Any]] = []
    for s in supers:
        if s.macro_ids:
            macros += [{"id": m.id, "super": m.super_id, "label": m.label, "t0": _r(m.t_start), "t1": _r(m.t_end),
                        "key_entities": list(m.key_entities)} for m in tools.get_macro_events(super_id=s.id).macros]
    return {
        "video": {"id": summary.video_id, "title": summary.title, "description": summary.description,
                  "themes": list(summary.themes), "key_entities": list(summary.key_entities),
                  "tone": summary.emotional_tone, "duration": _r(summary.duration)},
        "supers": [{"id": s.id, "label": s.label, "t0": _r(s.t_start), "t1": _r(s.t_end),
                    "description": s.description, "key_entities": list(s.key_entities), "macros": list(s.macro_ids),
                    "relations": _relations(tools, s.id, SUPER_RELATIONS)} for s in supers],
        "macros": macros,
    }


def video_view(tools: MemoryTools, video_id: str) -> dict[str, Any]:
    """The whole of one video as page data: the outline, every subgraph, keyframes, main entities."""
    view = outline(tools, video_id)
    macros = view["macros"]
    frames = keyframes(tools, video_id, view["video"]["duration"] or 0.0)
    by_macro: dict[str, list[dict[str, Any]]] = {}
    for f in frames:
        by_macro.setdefault(f["macro"], []).append(f)
    for m in macros:  # keyframes without a macro id are placed by time
        if not by_macro.get(m["id"]):
            by_macro[m["id"]] = [f for f in frames if not f["macro"] and m["t0"] <= f["t"] <= m["t1"]]
    view["subgraphs"] = {m["id"]: subgraph(tools, m["id"], by_macro.get(m["id"], [])) for m in macros}
    view["strip"] = [[f["t"], PurePosixPath(f["path"]).name] for f in _evenly(frames, STRIP_FRAMES)]
    view["frame_paths"] = {PurePosixPath(f["path"]).name: f["path"] for f in frames}
    view["entities"] = main_entities(macros, view["subgraphs"], view["video"]["key_entities"])
    view["speech"] = speech_spans(tools, video_id)
    return view


def speech_spans(tools: MemoryTools, video_id: str, page: int = 1000) -> list[list[float]]:
    """[start, end] of every utterance, in time order (empty for a memory without speech)."""
    spans: list[list[float]] = []
    seen: set[str] = set()
    start = 0.0
    with tools._reading() as g:  # noqa: SLF001 - the tools' own guarded read
        while True:
            found = g.speech(video_id, start, 1e12, limit=page)
            spans += [[u.t_start, u.t_end] for u in found if u.id not in seen]
            seen.update(u.id for u in found)
            if len(found) < page:
                return spans
            start = found[-1].t_start + 1e-6


def used_frames(view: dict[str, Any]) -> dict[str, str]:
    """File name -> path (relative to the memory folder) of every keyframe the page shows."""
    names = {name for _, name in view["strip"]}
    for sub in view["subgraphs"].values():
        names.update(name for _, name in sub["keyframes"])
    return {name: view["frame_paths"][name] for name in sorted(names) if name in view["frame_paths"]}
