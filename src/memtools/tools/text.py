"""Small text helpers shared by every rendered tool result."""

from __future__ import annotations

from memtools.describe import brief, clip, hit_text, hms

__all__ = ["RENDER_BUDGET", "brief", "budgeted", "clip", "hit_text", "hms", "span"]

# A rendered result stays around 1-2K tokens; past this many characters lists are cut.
RENDER_BUDGET = 7000


def span(start: float, end: float) -> str:
    return f"[{hms(start)}-{hms(end)}]"


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
