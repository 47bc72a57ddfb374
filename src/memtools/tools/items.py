"""Graph nodes and edges as the items of tool results: what a ``MemoryTools`` navigation tool shows
of a macro event, an entity, a micro-event, an utterance, on-screen text or a typed edge."""

from __future__ import annotations

from memtools.schema import Entity, MacroEvent, MicroEvent, OcrText, Speech
from memtools.store.base import EdgeRow
from memtools.tools.results import EdgeItem, MacroItem, NodeItem
from memtools.tools.text import brief, hms


def macro_item(m: MacroEvent, super_label: str = "") -> MacroItem:
    return MacroItem(id=m.id, super_id=m.super_id, super_label=super_label, label=m.label, t_start=m.t_start,
                     t_end=m.t_end, key_entities=list(m.key_entities), summary=m.summary)


def node_item(node) -> NodeItem:
    if isinstance(node, Entity):
        kind = node.entity_type.value
        text = node.name or node.description or kind.lower()
        bits = [node.description if node.name else ""]
        bits += [f"{k}: {v}" for k, v in node.attributes.items()]
        if node.grounding.primary_time is not None:
            bits.append(f"clearest at {hms(node.grounding.primary_time)}")
        return NodeItem(id=node.id, kind="entity", text=f"{kind} {text}", detail="; ".join(b for b in bits if b))
    if isinstance(node, MicroEvent):
        who = " ".join(p for p in (node.subject, "->" if node.object else "", node.object) if p)
        detail = "; ".join(b for b in (node.description, who) if b)
        return NodeItem(id=node.id, kind="event", text=node.action or node.description, t_start=node.t_start,
                        t_end=node.t_end, detail=detail if node.action else who)
    if isinstance(node, Speech):
        return NodeItem(id=node.id, kind="speech", text=brief(node, 400), t_start=node.t_start, t_end=node.t_end,
                        detail=node.speaker or "")
    assert isinstance(node, OcrText)
    return NodeItem(id=node.id, kind="ocr", text=f'"{node.text}"', t_start=node.t_start, t_end=node.t_end,
                    detail=node.description)


def edge_item(e: EdgeRow) -> EdgeItem:
    return EdgeItem(source=e.source, target=e.target, category=e.category.value, label=e.label,
                    description=e.description, other_text=brief(e.other))
