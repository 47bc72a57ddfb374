"""What gets embedded and full-text indexed for each searchable node (its retrieval payload)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memtools.schema import Entity, MacroEvent, MicroEvent, OcrText, SuperEvent, VideoGraph


def payload(node: SuperEvent | MacroEvent | Entity | MicroEvent | OcrText) -> str:
    """One line of text that describes a node for search."""
    if isinstance(node, SuperEvent):
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
    else:
        parts = [f'"{node.text}"', node.description]
    seen: list[str] = []
    for part in parts:
        part = (part or "").strip().rstrip(".").strip()
        if part and part.lower() not in (s.lower() for s in seen):
            seen.append(part)
    return ". ".join(seen)


def index_rows(graphs: Sequence[VideoGraph]) -> list[dict[str, Any]]:
    """Lance rows (without vectors) for every searchable node of these videos."""
    rows: list[dict[str, Any]] = []
    for graph in graphs:
        macros = {m.id: m for m in graph.macros}
        for s in graph.supers:
            rows.append(_row(s, "super", "", s.t_start, s.t_end))
        for m in graph.macros:
            rows.append(_row(m, "macro", m.id, m.t_start, m.t_end))
        for e in graph.entities:
            macro = macros[e.macro_id]
            rows.append(_row(e, "entity", e.macro_id, macro.t_start, macro.t_end))
        for ev in graph.events:
            rows.append(_row(ev, "event", ev.macro_id, ev.t_start, ev.t_end))
        for o in graph.ocr:
            rows.append(_row(o, "ocr", o.macro_id, o.t_start, o.t_end))
    return rows


def _row(node: Any, kind: str, macro_id: str, t_start: float, t_end: float) -> dict[str, Any]:
    return {"id": node.id, "video_id": node.video_id, "kind": kind, "macro_id": macro_id,
            "t_start": float(t_start), "t_end": float(t_end), "text": payload(node)}
