"""Small text helpers shared by every rendered tool result."""

from __future__ import annotations

from memtools.schema import Entity, Keyframe, MacroEvent, MicroEvent, Node, OcrText, SuperEvent, Video

# A rendered result stays around 1-2K tokens; past this many characters lists are cut.
RENDER_BUDGET = 7000


def hms(seconds: float) -> str:
    """``H:MM:SS`` (whole seconds, truncated), e.g. 3725.4 -> ``1:02:05``."""
    total = max(0, int(seconds))
    return f"{total // 3600}:{total % 3600 // 60:02d}:{total % 60:02d}"


def span(start: float, end: float) -> str:
    return f"[{hms(start)}-{hms(end)}]"


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
    elif isinstance(node, (MacroEvent, SuperEvent)):
        text = node.label
    elif isinstance(node, Video):
        text = node.title or node.id
    elif isinstance(node, Keyframe):
        text = f"keyframe at {hms(node.t)}"
    else:  # pragma: no cover - every node kind is handled above
        text = str(node)
    return clip(text, limit)


def budgeted(lines: list[str], more_hint: str, budget: int = RENDER_BUDGET) -> list[str]:
    """Keep lines until the budget is spent, then one line that says how to get the rest."""
    kept: list[str] = []
    used = 0
    for i, line in enumerate(lines):
        if used + len(line) + 1 > budget and kept:
            kept.append(f"… {len(lines) - i} more lines cut to keep this short; {more_hint}")
            return kept
        kept.append(line)
        used += len(line) + 1
    return kept
