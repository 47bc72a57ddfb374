"""Size limits that keep every MCP result acceptable to clients.

Claude Code rejects a tool result over 25k tokens by default and spills results over 50k
characters to a file unless the tool's ``_meta["anthropic/maxResultSizeChars"]`` allows
more. memtools results are small by design (rendered text is budgeted to ~7k characters and
``top_k``, id lists and frame counts are bounded), so these caps only bite on unusual data;
when they do, the text says how to narrow the call.
"""

from __future__ import annotations

import json
from typing import Any

TEXT_LIMIT = 40_000
"""Characters of text content per result (about 10k tokens)."""

STRUCTURED_LIMIT = 40_000
"""Characters of structured content (as JSON) per result."""

IMAGE_BYTES_LIMIT = 4_000_000
"""JPEG bytes per ``inspect_frames`` result; frames past it are sent as resource links only."""

MAX_RESULT_CHARS = 100_000
"""Advertised in each tool's ``_meta``: above text + structured content, so no client spills us to a file."""

NARROW_HINT = "narrow the call (a lower top_k or max_frames, fewer ids, a shorter time window, or a filter)"


def cap_text(text: str, limit: int = TEXT_LIMIT) -> str:
    """``text`` cut at a line boundary to at most ``limit`` characters, ending with how to see the rest."""
    if len(text) <= limit:
        return text
    note = f"\n… output cut at {limit} of {len(text)} characters; {NARROW_HINT} to see the rest."
    kept = text[: max(0, limit - len(note))]
    newline = kept.rfind("\n")
    if newline > len(kept) // 2:
        kept = kept[:newline]
    return kept + note


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _candidates(value: Any, path: str, holder: Any, key: Any):
    """Every list with more than one item and every long string, with where it sits."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _candidates(v, f"{path}.{k}" if path else str(k), value, k)
    elif isinstance(value, list):
        if len(value) > 1 and holder is not None:
            yield path, holder, key, value
        for i, v in enumerate(value):
            yield from _candidates(v, f"{path}[{i}]", value, i)
    elif isinstance(value, str) and len(value) > 200 and holder is not None:
        yield path, holder, key, value


def cap_structured(data: dict[str, Any], limit: int = STRUCTURED_LIMIT) -> tuple[dict[str, Any], list[str]]:
    """Halve the largest list (or long string) until the JSON fits; returns the data and what was cut.

    Only lists get shorter and strings get clipped, so the result still matches the tool's
    output schema.
    """
    cuts: dict[str, tuple[int, int]] = {}
    while _size(data) > limit:
        found = max(_candidates(data, "", None, None), key=lambda c: _size(c[3]), default=None)
        if found is None:
            break
        path, holder, key, value = found
        if isinstance(value, list):
            original = cuts.get(path, (len(value), 0))[0]
            holder[key] = value[: len(value) // 2]
            cuts[path] = (original, len(holder[key]))
        else:
            holder[key] = value[: len(value) // 2] + "…"
            cuts.setdefault(path, (len(value), -1))
    notes = [f"{path}: kept {kept} of {n} items" if kept >= 0 else f"{path}: text clipped"
             for path, (n, kept) in cuts.items()]
    return data, notes
