"""The memory's data model: every node and edge kind of the hierarchical graph memory.

Follows MEMDREAMER Table 1, extended with on-screen text and keyframes (DESIGN.md §2)::

    Video (root) -CONTAINS-> SuperEvent -CONTAINS-> MacroEvent -CONTAINS-> Entity | MicroEvent | OcrText | Speech

plus typed spatial, role and temporal-causal edges inside a macro event, causal edges
between macro events, progression edges between super events and DEPICTS edges from
keyframes, and cross-modal edges from speech (an entity SAYS an utterance; an utterance
is ABOUT an entity or micro-event). Times are seconds from the start of the video, always absolute.

Ids are readable and stable because agents copy them from one tool call into the next::

    cooking                          the video (root)
    cooking/super_02                 a super event
    cooking/macro_0012               a macro event
    cooking/macro_0012/ent_003       an entity      (evt_ micro-event, ocr_ on-screen text, utt_ speech)
    cooking/kf_0007                  a keyframe

``VideoGraph`` bundles one whole video; ``VideoGraph.check()`` refuses dangling edges,
edges whose label does not fit their endpoints, and duplicate ids, so a store never
receives a half-consistent graph.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from memtools.ontology import (  # noqa: F401 - re-exported: the vocabulary is part of the schema
    ENDPOINTS,
    LABELS,
    SEARCHABLE_KINDS,
    VIDEO_ID_RE,
    EdgeCategory,
    EntityType,
    MacroCausalLabel,
    NodeKind,
    NodeTypeName,
    ProgressionLabel,
    RoleLabel,
    SpatialLabel,
    SpeechLabel,
    TemporalLabel,
    category_of,
    entity_id,
    event_id,
    joins,
    keyframe_id,
    kind_of_id,
    macro_id,
    ocr_id,
    slugify_video_id,
    speech_id,
    super_id,
)

SCHEMA_VERSION = 2  # of a memory folder: 2 keeps each video's entry in videos.sqlite (1: in memtools.json)

VIDEO_ID_RULE = ("a video id is 1-128 letters, digits, '_', '-' or '.', not starting or ending with '.' "
                 "(it names files, web pages and URIs, and agents copy it between tool calls)")


def video_id_problem(value: object) -> str | None:
    """Why ``value`` cannot be a video id (``VIDEO_ID_RULE``), worded to follow the id; None when it can.

    Ids are kept exactly as their source gives them, never rewritten: an id that breaks the rule
    is refused with this reason. The allowed characters are safe in file and folder names
    (``frames/<id>/``, ``video-<id>.html``), in ``memtools://`` URIs and in node ids, so an id
    needs no second, escaped form that two ids could share.
    """
    if not isinstance(value, str):
        return f"is not text but {type(value).__name__}"
    if not value:
        return "is empty"
    if value != value.strip():
        return "has leading or trailing whitespace"
    if len(value) > 128:
        return f"is {len(value):,} characters long (at most 128)"
    if "/" in value or "\\" in value:
        return "contains a path separator ('/' or '\\')"
    if value in (".", ".."):
        return "is a relative folder name"
    if value.startswith(".") or value.endswith("."):
        return "starts or ends with '.'"
    if VIDEO_ID_RE.match(value):
        return None
    bad = sorted({c for c in value if not re.match(r"[A-Za-z0-9_.-]", c)})
    return "contains " + ", ".join(repr(c) for c in bad[:5]) + (" ..." if len(bad) > 5 else "")


def video_id_from_filename(name: str) -> str:
    """The video id of a subtitle file that names none: its name without the last extension
    (``talk.en.srt`` -> ``talk.en``), characters a video id cannot hold dropped at the ends and
    each run of them inside made one ``_`` (``My Trip (2).srt`` -> ``My_Trip_2``), outer dots
    dropped, cut to 128 characters. A leading ``-`` or ``_`` is kept (``-ErPSunMfcs.srt`` ->
    ``-ErPSunMfcs``). ``""`` when nothing usable is left."""
    stem = re.sub(r"\.[^.]*$", "", name) if "." in name.strip(".") else name
    stem = re.sub(r"^[^A-Za-z0-9_.-]+|[^A-Za-z0-9_.-]+$", "", stem)
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", stem).strip(".")
    return slug[:128].rstrip(".")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", use_enum_values=False)


class _Timed(_Model):
    t_start: float = Field(ge=0)
    t_end: float = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> _Timed:
        if self.t_end < self.t_start:
            raise ValueError(f"t_end {self.t_end} is before t_start {self.t_start}")
        return self


class Video(_Model):
    """The root v^R: one per video."""

    id: str
    title: str = ""
    description: str = ""
    themes: list[str] = Field(default_factory=list)
    key_entities: list[str] = Field(default_factory=list)
    emotional_tone: str = ""
    duration: float = Field(default=0.0, ge=0)
    fps: float = Field(default=0.0, ge=0)
    width: int = Field(default=0, ge=0)
    height: int = Field(default=0, ge=0)
    source_path: str = ""
    content_hash: str = ""
    recorded_at: str | None = None  # recording start, ISO 8601 with offset (memtools.wallclock); None: unknown

    @field_validator("id")
    @classmethod
    def _valid_id(cls, value: str) -> str:
        problem = video_id_problem(value)
        if problem:
            raise ValueError(f"video id {value!r} {problem}; {VIDEO_ID_RULE}")
        return value

    @property
    def video_id(self) -> str:
        return self.id


class SuperEvent(_Timed):
    """v^S: a narrative phase made of consecutive macro events."""

    id: str
    video_id: str
    ordinal: int = Field(ge=0)
    label: str
    description: str = ""
    key_entities: list[str] = Field(default_factory=list)


class MacroEvent(_Timed):
    """v^Mc: a self-contained episode; the leaf of the hierarchy and owner of a subgraph."""

    id: str
    video_id: str
    super_id: str
    ordinal: int = Field(ge=0)
    label: str
    summary: str = ""
    key_entities: list[str] = Field(default_factory=list)


class Grounding(_Model):
    """Where an entity is most clearly visible, and (``entity_id``) which canonical entity it is.

    ``entity_id`` (``<video>/entity_003``) is set on every mention of a video once a change tool
    (``memtools.changes``) has written it: the canonical ids the assistant read then stay the
    entities' ids on every later write (``memtools.store.tables.entities``). It lives here, in a
    JSON column, so no graph engine needs a new column; it is left out of dumps while unset, so a
    graph never changed keeps the digest it had.
    """

    primary_time: float | None = Field(default=None, ge=0)
    distinctive_features: list[str] = Field(default_factory=list)
    spatial_hint: str = ""
    entity_id: str | None = None

    @model_serializer(mode="wrap")
    def _without_unset_id(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if data.get("entity_id") is None:
            data.pop("entity_id", None)
        return data


class Entity(_Model):
    """A persistent referent inside one macro event."""

    id: str
    video_id: str
    macro_id: str
    name: str | None = None
    entity_type: EntityType
    attributes: dict[str, str] = Field(default_factory=dict)
    description: str = ""
    grounding: Grounding = Field(default_factory=Grounding)

    @property
    def display_name(self) -> str:
        return self.name or self.description or self.entity_type.value.lower()


class MicroEvent(_Timed):
    """An atomic action with a temporal extent."""

    id: str
    video_id: str
    macro_id: str
    event_type: str = ""
    subject: str = ""
    object: str = ""
    action: str = ""
    description: str = ""


class OcrText(_Timed):
    """On-screen text, verbatim, with what it means in context."""

    id: str
    video_id: str
    macro_id: str
    text: str
    description: str = ""


class Speech(_Timed):
    """An utterance: what was said (recognised or from subtitles), and by whom when known."""

    id: str
    video_id: str
    macro_id: str
    text: str
    speaker: str | None = None


class Keyframe(_Model):
    """A stored frame; ``path`` is relative to the memory folder."""

    id: str
    video_id: str
    t: float = Field(ge=0)
    path: str
    macro_id: str | None = None


class Edge(_Model):
    """A typed, directed edge. ``description`` is the model's one-sentence reason."""

    source: str
    target: str
    category: EdgeCategory
    label: str
    description: str = ""

    @model_validator(mode="after")
    def _label_fits(self) -> Edge:
        if self.label not in LABELS[self.category]:
            allowed = ", ".join(sorted(LABELS[self.category]))
            raise ValueError(f"label {self.label!r} is not a {self.category.value} label ({allowed})")
        return self


Node = Video | SuperEvent | MacroEvent | Entity | MicroEvent | OcrText | Speech | Keyframe

KIND_OF: dict[type, NodeKind] = {
    Video: NodeKind.VIDEO,
    SuperEvent: NodeKind.SUPER,
    MacroEvent: NodeKind.MACRO,
    Entity: NodeKind.ENTITY,
    MicroEvent: NodeKind.EVENT,
    OcrText: NodeKind.OCR,
    Speech: NodeKind.SPEECH,
    Keyframe: NodeKind.KEYFRAME,
}


# --- one whole video --------------------------------------------------------------------


class VideoGraph(_Model):
    """Everything the memory holds about one video; the unit a store writes."""

    video: Video
    supers: list[SuperEvent] = Field(default_factory=list)
    macros: list[MacroEvent] = Field(default_factory=list)
    entities: list[Entity] = Field(default_factory=list)
    events: list[MicroEvent] = Field(default_factory=list)
    ocr: list[OcrText] = Field(default_factory=list)
    speech: list[Speech] = Field(default_factory=list)
    keyframes: list[Keyframe] = Field(default_factory=list)
    edges: list[Edge] = Field(default_factory=list)

    @property
    def video_id(self) -> str:
        return self.video.id

    def nodes(self) -> Iterator[Node]:
        yield self.video
        yield from self.supers
        yield from self.macros
        yield from self.entities
        yield from self.events
        yield from self.ocr
        yield from self.speech
        yield from self.keyframes

    def macro_children(self) -> list[Entity | MicroEvent | OcrText | Speech]:
        """The nodes that hang under a macro event (entities, micro-events, on-screen text, speech)."""
        return [*self.entities, *self.events, *self.ocr, *self.speech]

    def hierarchy_edges(self) -> list[Edge]:
        """CONTAINS edges implied by the parent fields (video->super->macro->subgraph)."""
        contains = EdgeCategory.HIERARCHY
        edges = [Edge(source=self.video.id, target=s.id, category=contains, label="CONTAINS") for s in self.supers]
        edges += [Edge(source=m.super_id, target=m.id, category=contains, label="CONTAINS") for m in self.macros]
        for child in self.macro_children():
            edges.append(Edge(source=child.macro_id, target=child.id, category=contains, label="CONTAINS"))
        return edges

    def check(self) -> None:
        """Raise ValueError naming every inconsistency: ids, parents, edge endpoints and labels."""
        problems: list[str] = []
        kinds: dict[str, NodeKind] = {}
        vid = self.video.id
        for node in self.nodes():
            if node.id in kinds:
                problems.append(f"duplicate id {node.id!r}")
            kinds[node.id] = KIND_OF[type(node)]
            if not isinstance(node, Video):
                if node.video_id != vid:
                    problems.append(f"{node.id!r} belongs to video {node.video_id!r}, not {vid!r}")
                if not node.id.startswith(vid + "/"):
                    problems.append(f"id {node.id!r} does not start with '{vid}/'")
        for m in self.macros:
            if kinds.get(m.super_id) is not NodeKind.SUPER:
                problems.append(f"macro {m.id!r} names missing super event {m.super_id!r}")
        for child in self.macro_children():
            if kinds.get(child.macro_id) is not NodeKind.MACRO:
                problems.append(f"{child.id!r} names missing macro event {child.macro_id!r}")
        for kf in self.keyframes:
            if kf.macro_id is not None and kinds.get(kf.macro_id) is not NodeKind.MACRO:
                problems.append(f"keyframe {kf.id!r} names missing macro event {kf.macro_id!r}")
        for e in self.edges:
            if e.category is EdgeCategory.HIERARCHY:
                problems.append(f"edge {e.source}->{e.target}: CONTAINS edges come from parent fields")
                continue
            src, dst = kinds.get(e.source), kinds.get(e.target)
            if src is None or dst is None:
                missing = e.source if src is None else e.target
                problems.append(f"edge {e.source} -{e.label}-> {e.target} is dangling ({missing!r} does not exist)")
                continue
            if not joins(e.category, e.label, src, dst):
                problems.append(
                    f"edge {e.source} -{e.label}-> {e.target}: {e.category.value} edges do not join "
                    f"{src.value}->{dst.value}"
                )
        if problems:
            shown = "; ".join(problems[:10])
            more = f" (+{len(problems) - 10} more)" if len(problems) > 10 else ""
            raise ValueError(f"video graph {vid!r} is inconsistent: {shown}{more}")
