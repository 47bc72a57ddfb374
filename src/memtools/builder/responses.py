"""What the perception model must answer, as pydantic models.

The field descriptions *are* the output schema: ``schema_text(Model)`` renders them into the
prompt, and ``Model.model_json_schema()`` can go to a backend that supports structured
output. The models are lenient where models commonly slip and nothing is lost by accepting
("00:01:05" or "65s" for 65 seconds, ``null`` for an empty string, a number for a name,
unknown extra keys); everything semantic (labels, ids, time ranges) is checked afterwards
by ``memtools.builder.repair``, item by item, so one bad edge never costs the whole answer.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

_CLOCK = re.compile(r"^\s*(?:(\d+):)?(\d{1,3}):(\d{1,2}(?:\.\d+)?)\s*$")
_NUMBER = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(?:s|sec|secs|seconds)?\s*$", re.IGNORECASE)


def parse_seconds(value: Any) -> float | None:
    """Seconds from a number, ``"H:MM:SS(.s)"``, ``"MM:SS"``, ``"65"`` or ``"65.5s"``; None if unreadable."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if value == value and abs(value) != float("inf") else None
    if isinstance(value, str):
        match = _CLOCK.match(value)
        if match:
            hours, minutes, seconds = match.groups()
            return int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)
        match = _NUMBER.match(value)
        if match:
            return float(match.group(1))
    return None


def _seconds(value: Any) -> Any:
    parsed = parse_seconds(value)
    return value if parsed is None else parsed  # leave unreadable input for pydantic to report


def _text(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return ", ".join(str(v) for v in value)
    return value


def _optional_text(value: Any) -> Any:
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "null", "none", "unknown", "n/a")):
        return None
    return _text(value)


def _text_list(value: Any) -> Any:
    if value is None:
        return []
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list):
        out = []
        for item in value:
            if isinstance(item, dict):  # {"name": ..., "type": ...} as in the aggregation prompt
                item = item.get("name") or item.get("text") or next(iter(item.values()), "")
            if item is not None and str(item).strip():
                out.append(str(item).strip())
        return out
    return value


def _time_range(value: Any) -> Any:
    """``[start, end]`` from a list, a ``{"start": .., "end": ..}`` dict or a ``"a-b"`` string."""
    if isinstance(value, dict):
        value = [value.get("start", value.get("start_sec")), value.get("end", value.get("end_sec"))]
    if isinstance(value, str):
        parts = re.split(r"\s*(?:-|–|to)\s*(?=\d)", value.strip())
        value = parts if len(parts) == 2 else value
    if isinstance(value, (list, tuple)):
        if len(value) == 1:
            value = [value[0], value[0]]
        return [_seconds(v) for v in value]
    return value


def _attributes(value: Any) -> Any:
    if value is None:
        return {}
    if isinstance(value, dict):
        return {str(k): _text(v) if not isinstance(v, str) else v for k, v in value.items() if v not in (None, "")}
    if isinstance(value, list):  # ["red", "large"] -> {"0": ...} is useless; keep them as one field
        return {"attributes": ", ".join(str(v) for v in value)}
    return value


Seconds = Annotated[float, BeforeValidator(_seconds)]
Text = Annotated[str, BeforeValidator(_text)]
OptionalText = Annotated[str | None, BeforeValidator(_optional_text)]
TextList = Annotated[list[str], BeforeValidator(_text_list)]
TimeRange = Annotated[list[Seconds], BeforeValidator(_time_range), Field(min_length=2, max_length=2)]
Attributes = Annotated[dict[str, str], BeforeValidator(_attributes)]


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


# --- segmentation (Fig. 7) -----------------------------------------------------------------


class Episode(_Answer):
    start_time: Seconds = Field(description='Start, as "HH:MM:SS" on the timestamps shown with the frames.')
    end_time: Seconds = Field(description='End, as "HH:MM:SS": the last second before the next episode begins.')
    episode_title: Text = Field(description='A concise, readable name, e.g. "Chef plates the dessert".')
    visual_evidence: Text = Field("", description="The visual cue that justified this boundary.")
    complete: bool = Field(True, description="false only for the last episode when it is still going on at the "
                                             "last frame shown.")


class Segmentation(_Answer):
    episodes: list[Episode] = Field(description="The episodes in time order, covering the frames without gaps "
                                                "or overlaps.")


# --- subgraph extraction (Fig. 8) ------------------------------------------------------------


class MicroEventAnswer(_Answer):
    event_id: Text = Field(description='Your own short id, e.g. "ev1", used by edges.')
    event_type: Text = Field("", description='Free text, e.g. "collision", "greeting", "scoring play".')
    time_range: TimeRange = Field(description="[start_sec, end_sec], seconds from the start of this clip.")
    subject: Text = Field("", description="Who or what acts; specific enough to match one entity.")
    object: Text = Field("", description="Who or what is acted on, or empty.")
    action: Text = Field("", description="The precise motion or action, a short verb phrase.")
    description: Text = Field("", description="One or two sentences: the full happening, with its cause if any.")


class VisualGrounding(_Answer):
    primary_time_sec: Seconds | None = Field(None, description="Second of the clip where the entity is clearest.")
    distinctive_features: TextList = Field(default_factory=list, description="2-4 unique visual cues.")
    spatial_hint: Text = Field("", description='Where in the frame, e.g. "left foreground".')


class EntityAnswer(_Answer):
    entity_id: Text = Field(description='Your own short id, e.g. "en1", used by edges.')
    name: OptionalText = Field(None, description="The real name ONLY if shown on screen (caption, sign, jersey); "
                                                 "otherwise null. Never invent names.")
    entity_type: Text = Field(description="One of PERSON, OBJECT, LOCATION, GROUP.")
    attributes: Attributes = Field(default_factory=dict, description="Short key/value facts: colour, role, type, "
                                                                     "position.")
    description: Text = Field("", description="One sentence fusing the attributes and visual cues.")
    visual_grounding: VisualGrounding = Field(default_factory=VisualGrounding)


class OcrAnswer(_Answer):
    ocr_id: Text = Field("", description='Your own short id, e.g. "tx1", used by ANNOTATES edges.')
    text: Text = Field(description="The on-screen text, verbatim.")
    time_range: TimeRange = Field(description="[start_sec, end_sec] it is visible, seconds from the clip start; "
                                              "one node for a text that persists.")
    description: Text = Field("", description="What the text means in context.")


class EdgeAnswer(_Answer):
    source_id: Text = Field(description="An entity_id, event_id or ocr_id from this answer.")
    target_id: Text = Field(description="An entity_id, event_id or ocr_id from this answer.")
    relation_label: Text = Field(description="One of the allowed labels listed above.")
    description: Text = Field("", description="One sentence: why this relation holds.")


class Subgraph(_Answer):
    summary: Text = Field(description="3-5 sentences: what happens in this clip, in order, naming the key "
                                      "entities and any cause and effect.")
    key_entities: TextList = Field(default_factory=list, description="Up to 5 short names of the most important "
                                                                     "entities.")
    micro_events: list[MicroEventAnswer] = Field(default_factory=list)
    entities: list[EntityAnswer] = Field(default_factory=list)
    ocr_texts: list[OcrAnswer] = Field(default_factory=list, description="On-screen text (signs, captions, "
                                                                         "scoreboards).")
    edges: list[EdgeAnswer] = Field(default_factory=list)


# --- hierarchical aggregation (Fig. 9) --------------------------------------------------------


class SuperEventAnswer(_Answer):
    super_id: Text = Field(description='Your own short id, e.g. "S1", used by super_relations.')
    label: Text = Field(description="A noun phrase under 10 words naming the narrative arc.")
    description: Text = Field("", description="60-150 words: the arc, its key entities and on-screen milestones.")
    sub_macro_ids: TextList = Field(description="The macro_ids of this super event, a contiguous run in time order.")
    key_entities: TextList = Field(default_factory=list, description="Canonical names, deduplicated.")


class RelationAnswer(_Answer):
    source: Text = Field(description="An id from the input (macro_id) or from super_events (super_id).")
    target: Text = Field(description="An id of the same kind as source.")
    type: Text = Field(description="The relation label.")
    reason: Text = Field("", description="One sentence: why.")


class RootAnswer(_Answer):
    title: Text = Field(description="Under 15 words, specific.")
    description: Text = Field("", description="3-5 sentences synthesising all super events.")
    themes: TextList = Field(default_factory=list, description="3-5 short tags.")
    key_entities: TextList = Field(default_factory=list, description="5-10 canonical names.")
    emotional_tone: Text = Field("", description="2-3 adjectives.")


class Aggregation(_Answer):
    super_events: list[SuperEventAnswer] = Field(description="Super events partitioning all macro events, in "
                                                             "time order.")
    macro_relations: list[RelationAnswer] = Field(default_factory=list,
                                                  description="CAUSES, PREVENTS or ENABLES between macro events of "
                                                              "the same super event.")
    super_relations: list[RelationAnswer] = Field(default_factory=list,
                                                  description="LEADS_TO, RESOLVES or CONTRASTS_WITH between super "
                                                              "events.")
    root: RootAnswer | None = Field(None, description="The video-level summary.")


class RootSynthesis(_Answer):
    super_relations: list[RelationAnswer] = Field(default_factory=list,
                                                  description="LEADS_TO, RESOLVES or CONTRASTS_WITH between super "
                                                              "events.")
    root: RootAnswer = Field(description="The video-level summary.")


# --- the schema as prompt text ---------------------------------------------------------------


def schema_text(model: type[BaseModel], indent: str = "") -> str:
    """The fields of ``model`` (and nested models) as an indented list with their descriptions."""
    lines: list[str] = []
    for name, field in model.model_fields.items():
        desc = field.description or ""
        nested = _nested_model(field.annotation)
        if nested is not None:
            many = "list of objects" if _is_list(field.annotation) else "object"
            lines.append(f"{indent}- {name}: {many}{' - ' + desc if desc else ''}")
            lines.append(schema_text(nested, indent + "    "))
        else:
            lines.append(f"{indent}- {name}: {desc}".rstrip(": "))
    return "\n".join(lines)


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _nested_model(arg)
        if found is not None:
            return found
    return None


def _is_list(annotation: Any) -> bool:
    return getattr(annotation, "__origin__", None) is list
