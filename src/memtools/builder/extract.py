"""Downward extraction: one macro event's answer -> entities, micro-events, on-screen text, edges.

The model speaks clip-local seconds and its own ids; this module turns them into absolute
times inside the macro event and readable, stable memtools ids, and keeps only edges whose
both ends exist and whose label fits their endpoint kinds (``schema.category_of``). Entities
keep the model's order; micro-events and texts are numbered in time order.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from memtools.builder.repair import canonical_label, label_key
from memtools.builder.report import Issue
from memtools.builder.responses import Subgraph
from memtools.schema import (
    LABELS,
    Edge,
    EdgeCategory,
    Entity,
    EntityType,
    Grounding,
    MicroEvent,
    NodeKind,
    OcrText,
    Speech,
    category_of,
    entity_id,
    event_id,
    ocr_id,
    speech_id,
)
from memtools.speech.base import Utterance

STAGE = "extract"
_SUBGRAPH_LABELS = (LABELS[EdgeCategory.SPATIAL] | LABELS[EdgeCategory.ROLE] | LABELS[EdgeCategory.TEMPORAL])
_SPEECH_LABELS = _SUBGRAPH_LABELS | LABELS[EdgeCategory.SPEECH]
_ENTITY_TYPES = {
    "PERSON": "PERSON", "PEOPLE": "GROUP", "HUMAN": "PERSON", "MAN": "PERSON", "WOMAN": "PERSON", "CHILD": "PERSON",
    "CHARACTER": "PERSON", "PLAYER": "PERSON", "INDIVIDUAL": "PERSON",
    "OBJECT": "OBJECT", "THING": "OBJECT", "ITEM": "OBJECT", "VEHICLE": "OBJECT", "ANIMAL": "OBJECT",
    "TOOL": "OBJECT", "PROP": "OBJECT", "DEVICE": "OBJECT", "TEXT": "OBJECT", "SIGN": "OBJECT",
    "LOCATION": "LOCATION", "PLACE": "LOCATION", "SCENE": "LOCATION", "ROOM": "LOCATION", "AREA": "LOCATION",
    "SETTING": "LOCATION", "BUILDING": "LOCATION", "VENUE": "LOCATION",
    "GROUP": "GROUP", "TEAM": "GROUP", "CROWD": "GROUP", "ORGANIZATION": "GROUP", "AUDIENCE": "GROUP",
}
MAX_KEY_ENTITIES = 8


class MacroSpan(BaseModel):
    """A macro event before aggregation: where it is and what segmentation called it."""

    id: str
    ordinal: int
    t_start: float
    t_end: float
    label: str


class Extracted(BaseModel):
    """A macro event's cleaned subgraph; the checkpoint of this stage."""

    macro: MacroSpan
    summary: str = ""
    key_entities: list[str] = []
    entities: list[Entity] = []
    events: list[MicroEvent] = []
    ocr: list[OcrText] = []
    speech: list[Speech] = []
    edges: list[Edge] = []
    issues: list[Issue] = []


class _Clock:
    """Clip-local seconds -> absolute seconds inside the macro event."""

    def __init__(self, macro: MacroSpan, times: list[float], note) -> None:
        self.start, self.end = macro.t_start, macro.t_end
        length = self.end - self.start
        tol = max(1.0, 0.02 * length)
        on_video_clock = [t for t in times if length + tol < t and self.start - tol <= t <= self.end + tol]
        self.absolute = self.start > tol and len(on_video_clock) * 2 >= len(times) > 0
        if self.absolute:
            note("repaired", "times were on the video clock, not the clip's; used them as absolute")
        self.tol = tol
        self.clipped = 0

    def __call__(self, t: float) -> float:
        value = t if self.absolute else self.start + t
        clipped = min(max(value, self.start), self.end)
        if abs(clipped - value) > self.tol:
            self.clipped += 1
        return clipped

    def span(self, pair: list[float]) -> tuple[float, float]:
        a, b = sorted(pair)
        return self(a), self(b)

    def peek(self, pair: list[float]) -> tuple[float, float]:
        """``span`` without counting clipped times (for sorting)."""
        clipped = self.clipped
        result = self.span(pair)
        self.clipped = clipped
        return result


def speech_ids(utterances: Sequence[Utterance | Speech]) -> list[str]:
    """The ids the extraction prompt gives a macro event's utterances (``u1``, ``u2``, ...)."""
    return [f"u{n}" for n in range(1, len(utterances) + 1)]


def clean_subgraph(answer: Subgraph | None, macro: MacroSpan, video_id: str,
                   utterances: Sequence[Utterance] = ()) -> Extracted:
    """The memtools nodes and edges of one macro event from the model's answer (None: unusable).

    ``utterances`` (the macro event's speech, shown to the model as ``u1``, ``u2``, ...) become
    Speech nodes whatever the model answered; its SAYS / ABOUT edges may name them."""
    issues: list[Issue] = []
    step = macro.id.rsplit("/", 1)[-1]

    def note(severity: str, detail: str) -> None:
        issues.append(Issue(stage=STAGE, step=step, severity=severity, detail=detail))

    speech = [Speech(id=speech_id(macro.id, n), video_id=video_id, macro_id=macro.id, t_start=u.t_start,
                     t_end=u.t_end, text=u.text, speaker=u.speaker) for n, u in enumerate(utterances, start=1)]
    if answer is None:
        note("fallback", "no usable answer; the macro event keeps its title but has no subgraph")
        return Extracted(macro=macro, speech=speech, issues=issues)

    times = [t for ev in answer.micro_events for t in ev.time_range] + [t for o in answer.ocr_texts
                                                                       for t in o.time_range]
    clock = _Clock(macro, times, note)
    ids: dict[str, str] = {}  # the model's ids (lower-cased) -> ours
    kinds: dict[str, NodeKind] = {}
    names: dict[str, str] = {}  # entity names/descriptions (lower-cased) -> ours, for edges that use them

    def claim(model_id: str, ours: str, kind: NodeKind) -> None:
        key = model_id.strip().lower()
        kinds[ours] = kind
        if not key:
            return
        if key in ids:
            note("repaired", f"id {model_id!r} was used twice; edges use its first node")
            return
        ids[key] = ours

    entities: list[Entity] = []
    for n, raw in enumerate(answer.entities, start=1):
        etype = _ENTITY_TYPES.get(label_key(raw.entity_type))
        if etype is None:
            note("repaired", f"entity {raw.entity_id!r}: unknown type {raw.entity_type!r}, used OBJECT")
            etype = "OBJECT"
        grounding = raw.visual_grounding
        primary = grounding.primary_time_sec
        ours = entity_id(macro.id, n)
        entities.append(Entity(
            id=ours, video_id=video_id, macro_id=macro.id, name=(raw.name or "").strip() or None,
            entity_type=EntityType(etype), attributes={k: v for k, v in raw.attributes.items() if v.strip()},
            description=raw.description.strip(),
            grounding=Grounding(primary_time=None if primary is None else clock(primary),
                                distinctive_features=grounding.distinctive_features[:6],
                                spatial_hint=grounding.spatial_hint.strip()),
        ))
        claim(raw.entity_id, ours, NodeKind.ENTITY)
        for text in (raw.name, raw.description):
            if text and text.strip().lower() not in names:
                names[text.strip().lower()] = ours

    events: list[MicroEvent] = []
    ordered = sorted(enumerate(answer.micro_events), key=lambda p: (clock.peek(p[1].time_range), p[0]))
    for n, (_, event) in enumerate(ordered, start=1):
        a, b = clock.span(event.time_range)
        ours = event_id(macro.id, n)
        events.append(MicroEvent(id=ours, video_id=video_id, macro_id=macro.id, t_start=a, t_end=b,
                                 event_type=event.event_type.strip(), subject=event.subject.strip(),
                                 object=event.object.strip(), action=event.action.strip(),
                                 description=event.description.strip()))
        claim(event.event_id, ours, NodeKind.EVENT)

    texts: list[OcrText] = []
    ordered_ocr = sorted(enumerate(answer.ocr_texts), key=lambda p: (clock.peek(p[1].time_range), p[0]))
    for _, text_answer in ordered_ocr:
        if not text_answer.text.strip():
            note("dropped", "on-screen text without text")
            continue
        a, b = clock.span(text_answer.time_range)
        ours = ocr_id(macro.id, len(texts) + 1)
        texts.append(OcrText(id=ours, video_id=video_id, macro_id=macro.id, t_start=a, t_end=b,
                             text=text_answer.text.strip(), description=text_answer.description.strip()))
        claim(text_answer.ocr_id, ours, NodeKind.OCR)
    for model_id, node in zip(speech_ids(speech), speech, strict=True):
        claim(model_id, node.id, NodeKind.SPEECH)
    if clock.clipped:
        note("repaired", f"clipped {clock.clipped} time(s) that fell outside the macro event into its range")

    def resolve(model_id: str) -> str | None:
        key = model_id.strip().lower()
        return ids.get(key) or names.get(key)

    edges: list[Edge] = []
    seen: set[tuple[str, str, str]] = set()
    for edge_answer in answer.edges:
        what = f"edge {edge_answer.source_id!r} -{edge_answer.relation_label}-> {edge_answer.target_id!r}"
        src, dst = resolve(edge_answer.source_id), resolve(edge_answer.target_id)
        if src is None or dst is None:
            missing = edge_answer.source_id if src is None else edge_answer.target_id
            note("dropped", f"{what}: no node {missing!r} in this answer")
            continue
        label, flipped = canonical_label(edge_answer.relation_label, _SPEECH_LABELS if speech else _SUBGRAPH_LABELS)
        if label is None:
            note("dropped", f"{what}: unknown relation label")
            continue
        if flipped:
            src, dst = dst, src
            note("repaired", f"{what}: read as {label} in the other direction")
        category = category_of(label, kinds[src], kinds[dst])
        if category is None and category_of(label, kinds[dst], kinds[src]) is not None:
            src, dst = dst, src
            category = category_of(label, kinds[src], kinds[dst])
            note("repaired", f"{what}: reversed to fit {label} ({kinds[src].value} -> {kinds[dst].value})")
        if category is None:
            note("dropped", f"{what}: {label} cannot join {kinds[src].value} and {kinds[dst].value}")
            continue
        if src == dst or (src, dst, label) in seen:
            continue
        if label != label_key(edge_answer.relation_label) and not flipped:
            note("repaired", f"{what}: label mapped to {label}")
        seen.add((src, dst, label))
        edges.append(Edge(source=src, target=dst, category=category, label=label,
                          description=edge_answer.description.strip()))

    key_entities = [k for k in dict.fromkeys(k.strip() for k in answer.key_entities) if k][:MAX_KEY_ENTITIES]
    if not key_entities:
        key_entities = [e.display_name for e in entities][:5]
    return Extracted(macro=macro, summary=answer.summary.strip(), key_entities=key_entities, entities=entities,
                     events=events, ocr=texts, speech=speech, edges=edges, issues=issues)
