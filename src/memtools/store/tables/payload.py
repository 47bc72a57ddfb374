"""The lance row of each searchable node: its retrieval payload (embedded and full-text
indexed), plus what a search hit shows — the node's own words, its macro event's label and its
one-hop context — worked out once at write time so a search needs no graph query."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from memtools.describe import brief, hit_text
from memtools.schema import (
    EdgeCategory,
    Entity,
    MacroEvent,
    MicroEvent,
    Node,
    OcrText,
    Speech,
    SuperEvent,
    Video,
    VideoGraph,
)

MAX_CONTEXT = 5  # context lines stored per node; SearchConfig.context_per_hit shows up to this many


def payload(node: Video | SuperEvent | MacroEvent | Entity | MicroEvent | OcrText | Speech) -> str:
    """One line of text that describes a node for search."""
    if isinstance(node, Video):
        title = node.title if node.title and node.title != node.id else ""
        parts = [title, node.description, ", ".join(node.themes), ", ".join(node.key_entities)]
    elif isinstance(node, SuperEvent):
        parts = [node.label, node.description]
    elif isinstance(node, MacroEvent):
        same = node.summary.lower().startswith(node.label.lower().rstrip(". "))
        parts = [node.summary] if same and node.summary else [node.label, node.summary]
    elif isinstance(node, Entity):
        attrs = ", ".join(f"{k}: {v}" for k, v in node.attributes.items())
        parts = [node.name or "", node.entity_type.value.lower(), node.description, attrs,
                 ", ".join(node.grounding.distinctive_features)]
    elif isinstance(node, MicroEvent):
        parts = [node.action, node.description, node.event_type,
                 " ".join(p for p in (node.subject, node.object) if p)]
    elif isinstance(node, Speech):
        parts = [node.text, f"said by {node.speaker}" if node.speaker else ""]
    else:
        parts = [f'"{node.text}"', node.description]
    seen: list[str] = []
    for part in parts:
        part = (part or "").strip().rstrip(".").strip()
        if part and part.lower() not in (s.lower() for s in seen):
            seen.append(part)
    return ". ".join(seen)


def _context(graph: VideoGraph, nodes: dict[str, Node]) -> dict[str, list[str]]:
    """Up to MAX_CONTEXT lines per node: its typed edges (outgoing first), like get_relations."""
    out: dict[str, list[tuple]] = defaultdict(list)
    inc: dict[str, list[tuple]] = defaultdict(list)
    for e in graph.edges:
        if e.category in (EdgeCategory.HIERARCHY, EdgeCategory.GROUNDING):
            continue
        out[e.source].append((e.category.value, e.target, e.label))
        inc[e.target].append((e.category.value, e.source, e.label))
    lines: dict[str, list[str]] = {}
    for node_id in set(out) | set(inc):
        found = [("->", label, other) for _, other, label in sorted(out[node_id])]
        found += [("<-", label, other) for _, other, label in sorted(inc[node_id])]
        lines[node_id] = [f"{arrow} {label} {other.rsplit('/', 1)[-1]}: {brief(nodes[other], 70)}"
                          for arrow, label, other in found[:MAX_CONTEXT]]
    return lines


def index_rows(graphs: Sequence[VideoGraph]) -> list[dict[str, Any]]:
    """Lance rows (without vectors) for every searchable node of these videos, plus one
    ``video`` row per root (its title, description, themes and key entities)."""
    rows: list[dict[str, Any]] = []
    for graph in graphs:
        nodes = {n.id: n for n in graph.nodes()}
        context = _context(graph, nodes)
        macros = {m.id: m for m in graph.macros}

        def row(node: Any, kind: str, macro: MacroEvent | None, t_start: float, t_end: float,
                context: dict[str, list[str]] = context) -> dict[str, Any]:  # this video's context lines
            return {"id": node.id, "video_id": node.video_id, "kind": kind, "macro_id": macro.id if macro else "",
                    "t_start": float(t_start), "t_end": float(t_end), "text": payload(node),
                    "display": hit_text(node), "macro_label": macro.label if macro else "",
                    "context": json.dumps(context.get(node.id, []), ensure_ascii=False)}

        # The root is searchable only as a whole-video profile: library search ranks videos
        # by it (``memtools.retrieval``); search_nodes never returns it as a hit.
        rows.append(row(graph.video, "video", None, 0.0, graph.video.duration))
        rows += [row(s, "super", None, s.t_start, s.t_end) for s in graph.supers]
        rows += [row(m, "macro", m, m.t_start, m.t_end) for m in graph.macros]
        for e in graph.entities:
            macro = macros[e.macro_id]
            rows.append(row(e, "entity", macro, macro.t_start, macro.t_end))
        rows += [row(ev, "event", macros[ev.macro_id], ev.t_start, ev.t_end) for ev in graph.events]
        rows += [row(o, "ocr", macros[o.macro_id], o.t_start, o.t_end) for o in graph.ocr]
        rows += [row(u, "speech", macros[u.macro_id], u.t_start, u.t_end) for u in graph.speech]
    return rows
