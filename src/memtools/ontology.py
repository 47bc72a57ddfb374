"""The memory's vocabulary: node kinds, edge categories and their labels, which kinds each
category joins, and the readable ids agents copy between calls (see ``memtools.schema``)."""

from __future__ import annotations

import re
from enum import Enum
from typing import Literal

VIDEO_ID_RE = re.compile(r"^(?!\.)[A-Za-z0-9_.-]{1,128}(?<!\.)$")
"""A video id: 1-128 letters, digits, ``_ - .``, not starting or ending with ``.`` (``memtools.schema.video_id_problem``
says why one is not)."""


class EntityType(str, Enum):
    PERSON = "PERSON"
    OBJECT = "OBJECT"
    LOCATION = "LOCATION"
    GROUP = "GROUP"


class NodeKind(str, Enum):
    """The node tables. The value is what tools accept in ``node_types``."""

    VIDEO = "video"
    SUPER = "super"
    MACRO = "macro"
    ENTITY = "entity"
    EVENT = "event"
    OCR = "ocr"
    SPEECH = "speech"
    KEYFRAME = "keyframe"


class EdgeCategory(str, Enum):
    HIERARCHY = "hierarchy"
    SPATIAL = "spatial"
    ROLE = "role"
    TEMPORAL = "temporal"
    MACRO_CAUSAL = "macro_causal"
    PROGRESSION = "progression"
    GROUNDING = "grounding"
    SPEECH = "speech"


class SpatialLabel(str, Enum):
    LOCATED_IN = "LOCATED_IN"
    NEXT_TO = "NEXT_TO"
    ATTACHED_TO = "ATTACHED_TO"
    PART_OF = "PART_OF"
    IS_SAME_AS = "IS_SAME_AS"
    ANNOTATES = "ANNOTATES"


class RoleLabel(str, Enum):
    PERFORMS = "PERFORMS"
    RECEIVES = "RECEIVES"
    USES_TOOL = "USES_TOOL"
    HAPPENS_IN = "HAPPENS_IN"
    CONTEXT_FOR = "CONTEXT_FOR"


class TemporalLabel(str, Enum):
    BEFORE = "BEFORE"
    OVERLAP = "OVERLAP"
    CAUSES = "CAUSES"
    PREVENTS = "PREVENTS"
    SUBEVENT_OF = "SUBEVENT_OF"


class SpeechLabel(str, Enum):
    SAYS = "SAYS"  # entity -> utterance: who speaks
    ABOUT = "ABOUT"  # utterance -> entity or micro-event: what is talked about


class MacroCausalLabel(str, Enum):
    CAUSES = "CAUSES"
    PREVENTS = "PREVENTS"
    ENABLES = "ENABLES"


class ProgressionLabel(str, Enum):
    LEADS_TO = "LEADS_TO"
    RESOLVES = "RESOLVES"
    CONTRASTS_WITH = "CONTRASTS_WITH"
    BEFORE = "BEFORE"


LABELS: dict[EdgeCategory, frozenset[str]] = {
    EdgeCategory.HIERARCHY: frozenset({"CONTAINS"}),
    EdgeCategory.SPATIAL: frozenset(m.value for m in SpatialLabel),
    EdgeCategory.ROLE: frozenset(m.value for m in RoleLabel),
    EdgeCategory.TEMPORAL: frozenset(m.value for m in TemporalLabel),
    EdgeCategory.MACRO_CAUSAL: frozenset(m.value for m in MacroCausalLabel),
    EdgeCategory.PROGRESSION: frozenset(m.value for m in ProgressionLabel),
    EdgeCategory.GROUNDING: frozenset({"DEPICTS"}),
    EdgeCategory.SPEECH: frozenset(m.value for m in SpeechLabel),
}

# Which endpoint kinds each category joins (source kinds, target kinds).
_SUBGRAPH = {NodeKind.ENTITY, NodeKind.EVENT, NodeKind.OCR, NodeKind.SPEECH}
ENDPOINTS: dict[EdgeCategory, tuple[set[NodeKind], set[NodeKind]]] = {
    EdgeCategory.HIERARCHY: (
        {NodeKind.VIDEO, NodeKind.SUPER, NodeKind.MACRO},
        {NodeKind.SUPER, NodeKind.MACRO} | _SUBGRAPH,
    ),
    # OCR text can annotate an entity (ANNOTATES), so it joins the spatial-attribute edges.
    EdgeCategory.SPATIAL: ({NodeKind.ENTITY, NodeKind.OCR}, {NodeKind.ENTITY, NodeKind.OCR}),
    EdgeCategory.ROLE: ({NodeKind.ENTITY, NodeKind.EVENT}, {NodeKind.ENTITY, NodeKind.EVENT}),
    EdgeCategory.TEMPORAL: ({NodeKind.EVENT}, {NodeKind.EVENT}),
    EdgeCategory.MACRO_CAUSAL: ({NodeKind.MACRO}, {NodeKind.MACRO}),
    EdgeCategory.PROGRESSION: ({NodeKind.SUPER}, {NodeKind.SUPER}),
    EdgeCategory.GROUNDING: ({NodeKind.KEYFRAME}, {NodeKind.MACRO, NodeKind.ENTITY}),
    EdgeCategory.SPEECH: ({NodeKind.ENTITY, NodeKind.SPEECH}, {NodeKind.SPEECH, NodeKind.ENTITY, NodeKind.EVENT}),
}
# Labels whose endpoints are narrower than their category's: an entity SAYS an utterance; an
# utterance is ABOUT an entity or a micro-event.
LABEL_ENDPOINTS: dict[str, tuple[set[NodeKind], set[NodeKind]]] = {
    SpeechLabel.SAYS.value: ({NodeKind.ENTITY}, {NodeKind.SPEECH}),
    SpeechLabel.ABOUT.value: ({NodeKind.SPEECH}, {NodeKind.ENTITY, NodeKind.EVENT}),
}


def joins(category: EdgeCategory, label: str, source: NodeKind, target: NodeKind) -> bool:
    """Whether an edge of this category and label may go from ``source`` to ``target``."""
    sources, targets = LABEL_ENDPOINTS.get(label, ENDPOINTS[category]) if category is EdgeCategory.SPEECH \
        else ENDPOINTS[category]
    return source in sources and target in targets


def category_of(label: str, source: NodeKind, target: NodeKind) -> EdgeCategory | None:
    """The edge category a label takes between two node kinds, or None if it fits none."""
    for category, labels in LABELS.items():
        if label in labels and joins(category, label, source, target):
            return category
    return None


# --- ids -------------------------------------------------------------------------------


def super_id(video_id: str, ordinal: int) -> str:
    return f"{video_id}/super_{ordinal:02d}"


def macro_id(video_id: str, ordinal: int) -> str:
    return f"{video_id}/macro_{ordinal:04d}"


def entity_id(macro: str, n: int) -> str:
    return f"{macro}/ent_{n:03d}"


def event_id(macro: str, n: int) -> str:
    return f"{macro}/evt_{n:03d}"


def ocr_id(macro: str, n: int) -> str:
    return f"{macro}/ocr_{n:03d}"


def speech_id(macro: str, n: int) -> str:
    return f"{macro}/utt_{n:03d}"


def keyframe_id(video_id: str, n: int) -> str:
    return f"{video_id}/kf_{n:04d}"


def slugify_video_id(name: str) -> str:
    """A valid video id from a file name or free text ("My Trip (2).mp4" -> "My_Trip_2")."""
    stem = re.sub(r"\.[A-Za-z0-9]{1,5}$", "", name.strip())
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", stem).strip("_.-")
    return (slug or "video")[:128]


_KIND_BY_PART = {
    "super": NodeKind.SUPER,
    "macro": NodeKind.MACRO,
    "ent": NodeKind.ENTITY,
    "evt": NodeKind.EVENT,
    "ocr": NodeKind.OCR,
    "utt": NodeKind.SPEECH,
    "kf": NodeKind.KEYFRAME,
}


def kind_of_id(node_id: str) -> NodeKind | None:
    """The kind a well-formed id names, or None when it is not a memtools id."""
    parts = node_id.split("/")
    if len(parts) == 1:
        return NodeKind.VIDEO if VIDEO_ID_RE.match(parts[0]) else None
    prefix = parts[-1].split("_", 1)[0]
    return _KIND_BY_PART.get(prefix)


NodeTypeName = Literal["super", "macro", "entity", "event", "ocr", "speech"]
SEARCHABLE_KINDS: tuple[NodeKind, ...] = (
    NodeKind.SUPER,
    NodeKind.MACRO,
    NodeKind.ENTITY,
    NodeKind.EVENT,
    NodeKind.OCR,
    NodeKind.SPEECH,
)
