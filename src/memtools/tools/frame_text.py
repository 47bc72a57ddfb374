"""What is visible in a frame, as stored text: so a frame result says it in words too.

Claude Desktop, claude.ai and Claude Code each drop tool-result images in some cases; an answer
must not depend on the picture arriving. For a frame at ``t`` in macro event ``m`` the text is
built from what the build stored about that moment (no model is called):

- the macro event's summary (what is going on in the episode);
- the micro-events under way at ``t`` (or the nearest one), with their descriptions;
- the on-screen text shown at ``t``, verbatim;
- the entities of ``m``: those grounded nearest to ``t`` first.

The memory keeps no caption per keyframe (the build describes episodes, not single frames), so
the episode's graph at that moment is the description.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memtools.schema import Entity, MacroEvent, MicroEvent, Node, OcrText
from memtools.tools.text import clip, hms

MAX_CHARS = 320
"""About 80 tokens of description per frame (16 frames stay near 1.3k tokens)."""

Subgraph = Callable[[str], Sequence[Node]]
"""A macro event's id -> its child nodes (``GraphStore.subgraph(...)[0]``)."""


def describe_at(t: float, macro: MacroEvent | None, nodes: Sequence[Node]) -> str:
    """The stored description of what is visible at ``t`` seconds (empty without a macro event)."""
    if macro is None:
        return ""
    parts = [f"In {macro.label!r}: {clip(macro.summary, 160)}" if macro.summary else f"In {macro.label!r}."]
    events = [n for n in nodes if isinstance(n, MicroEvent)]
    now = [e for e in events if e.t_start <= t <= e.t_end] or sorted(
        events, key=lambda e: min(abs(e.t_start - t), abs(e.t_end - t)))[:1]
    if now:
        parts.append(f"At {hms(t)}: " + "; ".join(clip(e.description or f"{e.subject} {e.action}".strip(), 120)
                                                for e in now[:2]))
    shown = [o for o in nodes if isinstance(o, OcrText) and o.t_start <= t <= o.t_end]
    if shown:
        parts.append("On screen: " + " | ".join(f'"{clip(o.text, 60)}"' for o in shown[:3]))
    entities = [n for n in nodes if isinstance(n, Entity)]
    entities.sort(key=lambda e: abs(e.grounding.primary_time - t) if e.grounding.primary_time is not None else 1e9)
    if entities:
        parts.append("Visible: " + ", ".join(clip(e.display_name, 50) for e in entities[:5]))
    return clip(" ".join(p if p.endswith(".") else p + "." for p in parts), MAX_CHARS)


def describe_frames(frames: Sequence, macros: Sequence[MacroEvent], subgraph: Subgraph) -> None:
    """Fill ``description`` of every ``FrameItem`` in ``frames`` (each macro event's nodes read once)."""
    by_id = {m.id: m for m in macros}
    cache: dict[str, Sequence[Node]] = {}
    for frame in frames:
        macro = by_id.get(frame.macro_id)
        if macro is None:
            continue
        if macro.id not in cache:
            cache[macro.id] = subgraph(macro.id)
        frame.description = describe_at(frame.t, macro, cache[macro.id])
