"""Short texts that name or describe a node: shared by the store (search rows) and the tools."""

from __future__ import annotations

from memtools.schema import Entity, Keyframe, MacroEvent, MicroEvent, Node, OcrText, Speech, SuperEvent, Video


def hms(seconds: float) -> str:
    """``H:MM:SS`` (whole seconds, truncated), e.g. 3725.4 -> ``1:02:05``."""
    total = max(0, int(seconds))
    return f"{total // 3600}:{total % 3600 // 60:02d}:{total % 60:02d}"


def clip(text: str, limit: int = 160) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def brief(node: Node, limit: int = 80) -> str:
    """A few words that name a node, for context lines."""
    if isinstance(node, Entity):
        text = node.name or node.description or node.entity_type.value.lower()
    elif isinstance(node, MicroEvent):
        text = node.action or node.description
    elif isinstance(node, OcrText):
        text = f'"{node.text}"'
    elif isinstance(node, Speech):
        text = f'{node.speaker + ": " if node.speaker else ""}“{node.text}”'
    elif isinstance(node, (MacroEvent, SuperEvent)):
        text = node.label
    elif isinstance(node, Video):
        text = node.title or node.id
    elif isinstance(node, Keyframe):
        text = f"keyframe at {hms(node.t)}"
    else:  # pragma: no cover - every node kind is handled above
        text = str(node)
    return clip(text, limit)


def hit_text(node: Node) -> str:
    """What a search hit shows: the node's own words, not its search payload."""
    if isinstance(node, MicroEvent):
        parts = [node.action, node.description]
    elif isinstance(node, Entity):
        parts = [f"{node.entity_type.value} {node.name}" if node.name else node.entity_type.value, node.description]
    elif isinstance(node, OcrText):
        parts = [f'"{node.text}"', node.description]
    elif isinstance(node, Speech):
        parts = [f"said{' by ' + node.speaker if node.speaker else ''}: “{node.text}”"]
    elif isinstance(node, MacroEvent):
        parts = [node.label, node.summary]
    elif isinstance(node, Video):
        parts = [node.title or node.id, node.description]
    elif isinstance(node, SuperEvent):
        parts = [node.label, node.description]
    else:  # a keyframe: no words of its own
        parts = [f"keyframe at {hms(node.t)}"]
    kept = [p.strip() for p in parts if p and p.strip()]
    if len(kept) == 2 and kept[1].lower().startswith(kept[0].lower().rstrip(".")):
        kept = kept[1:]
    return " — ".join(kept)
