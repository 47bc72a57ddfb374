"""One ``step5_subgraph.json`` -> the entities, micro-events, on-screen text and typed edges of
one macro event (formats/memdreamer.md §1.3).

Local times are relative to the episode's ``start_sec``; they become absolute and are clipped
into the macro event's range. Local ids (``ent_008``) become ours (``<macro>/ent_008``),
keeping their number when every id of that kind has one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from memtools.memdreamer import values as val
from memtools.memdreamer.report import VideoReport
from memtools.schema import (
    Entity,
    Grounding,
    MacroEvent,
    MicroEvent,
    NodeKind,
    OcrText,
    Speech,
    entity_id,
    event_id,
    ocr_id,
    speech_id,
)

BEST_FRAME = "best_frame.jpg"
EPS = 0.01  # seconds; smaller differences are rounding, not repairs
ID_KEYS = ("node_id", "entity_id", "event_id", "ocr_id", "utterance_id")  # the reference takes the first present
NODE_TYPES = {"entity": NodeKind.ENTITY, "event": NodeKind.EVENT, "microevent": NodeKind.EVENT,
              "ocrtext": NodeKind.OCR, "ocr": NodeKind.OCR, "macroevent": NodeKind.MACRO,
              "speech": NodeKind.SPEECH, "utterance": NodeKind.SPEECH}  # speech: memtools' own export
KINDS = ((NodeKind.ENTITY, "ent", entity_id), (NodeKind.EVENT, "evt", event_id), (NodeKind.OCR, "ocr", ocr_id),
         (NodeKind.SPEECH, "utt", speech_id))


def node_count(sg: dict[str, Any]) -> int:
    """Entity / event / OCR nodes in a subgraph (what is lost when it has no macro event)."""
    nodes = sg.get("nodes")
    if not isinstance(nodes, list):
        return 0
    return sum(1 for n in nodes if isinstance(n, dict)
               and NODE_TYPES.get(val.text(n.get("node_type")).lower().replace("_", "")) is not NodeKind.MACRO)


class SubgraphOwner(Protocol):
    """What a ``SubgraphReader`` adds to: the video being parsed (``parse._Parser``; a protocol, so this
    module does not import the parser that imports it)."""

    report: VideoReport
    kinds: dict[str, NodeKind]
    entities: list[Entity]
    events: list[MicroEvent]
    ocr: list[OcrText]
    speech: list[Speech]
    pending_frames: list[tuple[float, str, str, Path]]
    aliases: dict[str, list[str]]
    aliased: int

    def add_edge(self, src: str, dst: str, raw: dict[str, Any], where: str) -> None: ...


class SubgraphReader:
    """Adds one subgraph's nodes and edges to the video being parsed (``owner``)."""

    def __init__(self, owner: SubgraphOwner, macro: MacroEvent, their_macro: str, slot: int | None,
                 path: Path, sg: dict[str, Any]) -> None:
        self.owner, self.report = owner, owner.report
        self.macro, self.their_macro, self.slot, self.path, self.sg = macro, their_macro, slot, path, sg
        self.local: dict[str, str] = {}  # their local id -> our id
        self.names: dict[str, str] = {}  # their local entity id -> a name for subject / object
        self.shift = 0.0

    def read(self) -> None:
        offset = val.num(self.sg.get("start_sec"))
        if offset is None:
            offset = self.macro.t_start
            self.report.repair("subgraph without start_sec (macro start used)")
        end = val.num(self.sg.get("end_sec"))
        end = end if end is not None else max(offset, self.macro.t_end)
        groups, macro_locals = self._group()
        self.shift = 0.0 if self._absolute(groups, offset, end) else offset
        readers = {NodeKind.ENTITY: self._entity, NodeKind.EVENT: self._event, NodeKind.OCR: self._ocr,
                   NodeKind.SPEECH: self._speech}
        for kind, prefix, make in KINDS:
            items = groups[kind]
            numbers = val.numbering([local for local, _ in items], prefix)
            for n, (local, raw) in enumerate(items, 1):
                ours = make(self.macro.id, numbers[local] if numbers else n)
                if readers[kind](ours, local, raw):
                    self.owner.kinds[ours] = kind
                    if local:
                        self.local[local] = ours
                        self.report.id_map[f"slot{self.slot}_{local}"] = ours
        self._edges(macro_locals)

    def _group(self) -> tuple[dict[NodeKind, list[tuple[str, dict[str, Any]]]], set[str]]:
        groups: dict[NodeKind, list[tuple[str, dict[str, Any]]]] = {kind: [] for kind, _, _ in KINDS}
        macro_locals = {self.their_macro} - {""}
        seen: set[str] = set()
        nodes = self.sg.get("nodes")
        for raw in nodes if isinstance(nodes, list) else []:
            if not isinstance(raw, dict):
                self.report.drop("subgraph node that is not an object")
                continue
            type_name = val.text(raw.get("node_type"))
            kind = NODE_TYPES.get(type_name.lower().replace("_", ""))
            local = val.local_id(next((raw[k] for k in ID_KEYS if k in raw), ""))
            if kind is NodeKind.MACRO:
                if local:
                    macro_locals.add(local)
            elif kind is None:
                self.report.drop(f"subgraph node of unknown node_type {type_name or '(none)'}")
            elif local and local in seen:
                self.report.drop("subgraph node with a duplicate id")
            else:
                if not local:
                    self.report.repair("subgraph node without an id (numbered)")
                seen.add(local)
                groups[kind].append((local, raw))
        return groups, macro_locals

    def _absolute(self, groups, offset: float, end: float) -> bool:
        """True when every time already lies in [start_sec, end_sec] and some cannot be local."""
        if offset <= EPS:
            return False
        values: list[float] = []
        for kind in (NodeKind.EVENT, NodeKind.OCR, NodeKind.SPEECH):
            for _, raw in groups[kind]:
                values += val.time_range(raw.get("time_range")) or ()
        for _, raw in groups[NodeKind.ENTITY]:
            grounding = raw.get("visual_grounding")
            t = val.num(grounding.get("primary_time_sec")) if isinstance(grounding, dict) else None
            values += [t] if t is not None else []
        absolute = bool(values) and all(offset - EPS <= v <= end + EPS for v in values) \
            and any(v > end - offset + EPS for v in values)
        if absolute:
            self.report.repair("subgraph whose times were already absolute (not shifted)")
        return absolute

    # --- times --------------------------------------------------------------------------

    def _clamp(self, t: float) -> float:
        return min(max(t, self.macro.t_start), self.macro.t_end)

    def _point(self, local: float) -> float:
        t = local + self.shift
        clamped = self._clamp(t)
        if abs(clamped - t) > EPS:
            self.report.repair("time clipped into the macro event's range")
        return clamped

    def _span(self, raw: dict[str, Any], what: str) -> tuple[float, float]:
        span = val.time_range(raw.get("time_range"))
        if span is None:
            self.report.repair(f"{what} without time_range (macro range used)")
            return self.macro.t_start, self.macro.t_end
        start, end = span
        if end < start:
            start, end = end, start
            self.report.repair("time range with end before start (swapped)")
        return self._point(start), self._point(end)

    # --- nodes --------------------------------------------------------------------------

    def _entity(self, ours: str, local: str, raw: dict[str, Any]) -> bool:
        given = val.text(raw.get("name"))
        name = None if given.lower() in val.NO_NAME else given
        description = val.text(raw.get("description"))
        if name is None and not description:
            self.report.drop("entity without name or description")
            return False
        kind, known = val.entity_type(raw.get("entity_type"))
        if not known:
            self.report.repair(f"entity_type {val.text(raw.get('entity_type')) or '(none)'} read as OBJECT")
        grounding = val.mapping(raw.get("visual_grounding"))
        t = val.num(grounding.get("primary_time_sec", grounding.get("primary_time")))
        primary = self._point(t) if t is not None else None
        attributes = val.attributes(raw.get("attributes"))
        group = self.owner.aliases.get(name.lower(), []) if name else []
        others = [g for g in group if g.lower() != (name or "").lower()]
        if others:
            existing = val.strings(attributes.get("aliases"))
            attributes["aliases"] = ", ".join(existing + [o for o in others if o not in existing])
            self.owner.aliased += 1
        entity = Entity(
            id=ours, video_id=self.macro.video_id, macro_id=self.macro.id, name=name, entity_type=kind,
            attributes=attributes, description=description,
            grounding=Grounding(
                primary_time=primary, distinctive_features=val.strings(grounding.get("distinctive_features")),
                spatial_hint=val.text(grounding.get("spatial_hint") or grounding.get("spatial_position")
                                      or grounding.get("location")),
            ),
        )
        self.owner.entities.append(entity)
        self.names[local] = entity.display_name
        image = self._best_frame(local)
        if image is not None:
            self.owner.pending_frames.append((primary if primary is not None else self.macro.t_start,
                                              ours, self.macro.id, image))
        return True

    def _best_frame(self, local: str) -> Path | None:
        if not local:
            return None
        folder = self.path.parent
        dirs = [folder / "features"]
        if folder.name != folder.parent.name:  # flat layout: the reference looks one level deeper
            dirs.append(folder / folder.name / "features")
        for features in dirs:
            image = features / local / BEST_FRAME
            if image.is_file():
                if image.stat().st_size > 0:
                    return image
                self.report.drop("keyframe image that is empty")
        return None

    def _names(self, ids: Any) -> str:
        names = [self.names[val.local_id(i)] for i in val.strings(ids) if val.local_id(i) in self.names]
        return ", ".join(dict.fromkeys(names))

    def _event(self, ours: str, local: str, raw: dict[str, Any]) -> bool:
        action, description = val.text(raw.get("action")), val.text(raw.get("description"))
        if not action and not description:
            self.report.drop("micro-event without action or description")
            return False
        start, end = self._span(raw, "micro-event")
        self.owner.events.append(MicroEvent(
            id=ours, video_id=self.macro.video_id, macro_id=self.macro.id, t_start=start, t_end=end,
            event_type=val.text(raw.get("event_type")), action=action, description=description,
            subject=val.text(raw.get("subject")) or self._names(raw.get("subject_entity_ids")),
            object=val.text(raw.get("object")) or self._names(raw.get("object_entity_ids")),
        ))
        return True

    def _ocr(self, ours: str, local: str, raw: dict[str, Any]) -> bool:
        text = val.text(raw.get("text"))
        if not text:
            self.report.drop("on-screen text without text")
            return False
        start, end = self._span(raw, "on-screen text")
        self.owner.ocr.append(OcrText(
            id=ours, video_id=self.macro.video_id, macro_id=self.macro.id, t_start=start, t_end=end, text=text,
            description=val.text(raw.get("description")) or val.text(raw.get("ocr_type")),
        ))
        return True

    def _speech(self, ours: str, local: str, raw: dict[str, Any]) -> bool:
        text = val.text(raw.get("text"))
        if not text:
            self.report.drop("speech without text")
            return False
        start, end = self._span(raw, "speech")
        self.owner.speech.append(Speech(id=ours, video_id=self.macro.video_id, macro_id=self.macro.id, t_start=start,
                                        t_end=end, text=text, speaker=val.text(raw.get("speaker")) or None))
        return True

    # --- edges --------------------------------------------------------------------------

    def _edges(self, macro_locals: set[str]) -> None:
        edges = self.sg.get("edges")
        for raw in edges if isinstance(edges, list) else []:
            if not isinstance(raw, dict):
                self.report.drop("edge that is not an object")
                continue
            a = val.local_id(raw.get("source_id", raw.get("source")))
            b = val.local_id(raw.get("target_id", raw.get("target")))
            if a in macro_locals or b in macro_locals:
                self.report.drop("edge to the macro event itself (the hierarchy already links it)")
            elif a not in self.local or b not in self.local:
                self.report.drop("edge: dangling endpoint")
            else:
                self.owner.add_edge(self.local[a], self.local[b], raw, "edge")
