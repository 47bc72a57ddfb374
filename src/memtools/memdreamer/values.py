"""Tolerant readers for the values found in MEMDREAMER files, and the edge-label mapping.

Their JSON is model output: numbers arrive as strings, time ranges as ``[s, e]`` or
``{"start": s, "end": e}``, lists as comma-separated strings, entity lists as dicts. Each
reader returns a clean value or ``None`` / empty, never raises.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from memtools.schema import LABELS, EdgeCategory, EntityType, NodeKind, category_of

_CLOCK = re.compile(r"(?:(\d+):)?(\d{1,3}):(\d{1,2}(?:\.\d+)?)")
_SLOT_PREFIX = re.compile(r"^slot-?\d+_")
_NAME_KEYS = ("name", "label", "canonical_name", "entity_name", "text")
NO_NAME = frozenset({"", "none", "null", "n/a"})


def num(value: Any) -> float | None:
    """A finite float from a number or numeric string ("12.5", "1:02:05"); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        text = value.strip().rstrip("s").strip()
        try:
            result = float(text)
        except ValueError:
            match = _CLOCK.fullmatch(text)
            if not match:
                return None
            hours, minutes, seconds = match.groups()
            result = int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)
        return result if math.isfinite(result) else None
    return None


def integer(value: Any) -> int | None:
    number = num(value)
    return int(number) if number is not None and number == int(number) else None


def mapping(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def time_range(value: Any) -> tuple[float, float] | None:
    """``[s, e]``, ``(s, e)`` or ``{"start": s, "end": e}`` (also ``start_sec``/``end_sec``)."""
    if isinstance(value, dict):
        start = next((num(value[k]) for k in ("start", "start_sec", "t_start") if k in value), None)
        end = next((num(value[k]) for k in ("end", "end_sec", "t_end") if k in value), None)
    elif isinstance(value, (list, tuple)) and len(value) >= 2:
        start, end = num(value[0]), num(value[1])
    else:
        return None
    if start is None and end is None:
        return None
    return (start if start is not None else end, end if end is not None else start)  # type: ignore[return-value]


def text(value: Any) -> str:
    """A stripped string from a string, number, list (joined with ", ") or dict (as JSON)."""
    if value is None or isinstance(value, bool):
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(t for t in (text(v) for v in value) if t)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value).strip()


def strings(value: Any) -> list[str]:
    """A list of non-empty strings: from a list (dict items give their name), or a comma-separated string."""
    if value is None:
        return []
    if isinstance(value, str):
        items: list[Any] = value.split(",")
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        items = [value]
    result: list[str] = []
    for item in items:
        if isinstance(item, dict):
            item = next((item[k] for k in _NAME_KEYS if text(item.get(k))), "")
        item = text(item)
        if item and item not in result:
            result.append(item)
    return result


def ident(value: Any) -> str:
    """An id as written (numbers become strings)."""
    return text(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else ""


def local_id(value: Any) -> str:
    """A subgraph-local id, without the ``slot{N}_`` prefix the reference loader adds."""
    return _SLOT_PREFIX.sub("", ident(value))


def numbering(ids: list[str], prefix: str) -> dict[str, int] | None:
    """Their numbering (``macro_0012`` -> 12) when every id has it and none repeats, else None."""
    pattern = re.compile(rf"{prefix}_?(\d+)", re.IGNORECASE)
    found: dict[str, int] = {}
    for their in ids:
        match = pattern.fullmatch(their)
        if not match:
            return None
        found[their] = int(match.group(1))
    return found if len(set(found.values())) == len(ids) else None


def attributes(value: Any) -> dict[str, str]:
    """Entity attributes as ``{str: str}`` (a dict, or a list of "key: value" strings)."""
    result: dict[str, str] = {}
    if isinstance(value, dict):
        for key, item in value.items():
            if text(key) and text(item):
                result[text(key)] = text(item)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            key, sep, rest = text(item).partition(":")
            if sep and key.strip() and rest.strip():
                result[key.strip()] = rest.strip()
            elif text(item):
                result[f"attribute_{i + 1}"] = text(item)
    return result


_PERSON = {"person", "human", "character", "man", "woman", "boy", "girl", "child", "player", "speaker",
           "individual", "actor", "people_individual"}
_LOCATION = {"location", "place", "scene", "setting", "area", "room", "building", "venue", "environment"}
_GROUP = {"group", "crowd", "team", "people", "audience", "organization", "organisation"}
_OBJECT = {"object", "item", "thing", "prop", "tool", "vehicle", "device"}


def entity_type(value: Any) -> tuple[EntityType, bool]:
    """Our entity type for theirs, and whether it was recognised (unknown types read as OBJECT)."""
    name = text(value).lower().replace("-", "_").strip()
    for names, kind in ((_PERSON, EntityType.PERSON), (_LOCATION, EntityType.LOCATION),
                        (_GROUP, EntityType.GROUP), (_OBJECT, EntityType.OBJECT)):
        if name in names:
            return kind, True
    return EntityType.OBJECT, False


# --- edge labels --------------------------------------------------------------------------

ALL_LABELS = frozenset().union(*(labels for cat, labels in LABELS.items() if cat is not EdgeCategory.HIERARCHY))

# Their label -> our labels to try, in order, each with "reverse the direction?". The first
# that fits the endpoint kinds (``category_of``) wins. Between macro events LEADS_TO means a
# causal consequence (their macro_relations default to type CAUSAL), so it reads as CAUSES;
# between super events CAUSES/ENABLES read as LEADS_TO. BEFORE between macro events has no
# counterpart (time order is already in their times) and is dropped.
SYNONYMS: dict[str, tuple[tuple[str, bool], ...]] = {
    "LEADS_TO": (("CAUSES", False),),
    "RESULTS_IN": (("CAUSES", False), ("LEADS_TO", False)),
    "TRIGGERS": (("CAUSES", False), ("LEADS_TO", False)),
    "CAUSES": (("LEADS_TO", False),),
    "ENABLES": (("LEADS_TO", False),),
    "CAUSED_BY": (("CAUSES", True),),
    "AFTER": (("BEFORE", True),),
    "FOLLOWS": (("BEFORE", True),),
    "PRECEDES": (("BEFORE", False),),
    "FOLLOWED_BY": (("BEFORE", False),),
    "OVERLAPS": (("OVERLAP", False),),
    "OVERLAPS_WITH": (("OVERLAP", False),),
    "DURING": (("OVERLAP", False),),
    "SIMULTANEOUS_WITH": (("OVERLAP", False),),
    "LOCATED_AT": (("LOCATED_IN", False),),
    "LOCATED_ON": (("LOCATED_IN", False),),
    "INSIDE": (("LOCATED_IN", False),),
    "NEAR": (("NEXT_TO", False),),
    "ADJACENT_TO": (("NEXT_TO", False),),
    "BESIDE": (("NEXT_TO", False),),
    "HAS_PART": (("PART_OF", True),),
    "CONTAINS": (("PART_OF", True),),
    "SAME_AS": (("IS_SAME_AS", False),),
    "IDENTICAL_TO": (("IS_SAME_AS", False),),
    "USES": (("USES_TOOL", False),),
    "PERFORMED_BY": (("PERFORMS", True),),
    "RECEIVED_BY": (("RECEIVES", True),),
    "CONTRASTS": (("CONTRASTS_WITH", False),),
    "CONTRAST": (("CONTRASTS_WITH", False),),
}
# A relation_type given without a relation_label.
TYPE_DEFAULTS = {"CAUSAL": "CAUSES", "PROGRESSION": "LEADS_TO"}


def norm_label(value: Any) -> str:
    return re.sub(r"[\s\-]+", "_", text(value).upper())


def edge_label(raw: dict[str, Any]) -> str:
    """The relation label of an edge item: ``relation_label``, else one implied by ``relation_type``."""
    label = norm_label(raw.get("relation_label") or raw.get("label"))
    if label:
        return label
    kind = norm_label(raw.get("relation_type"))
    return kind if kind in ALL_LABELS else TYPE_DEFAULTS.get(kind, "")


def fit_label(label: str, source: NodeKind, target: NodeKind) -> tuple[EdgeCategory, str, bool] | None:
    """(category, our label, reversed?) for a label between two kinds, or None if nothing fits."""
    for candidate, reverse in ((label, False), *SYNONYMS.get(label, ())):
        a, b = (target, source) if reverse else (source, target)
        category = category_of(candidate, a, b)
        if category is not None and category is not EdgeCategory.HIERARCHY:
            return category, candidate, reverse
    return None
