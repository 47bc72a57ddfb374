"""One MEMDREAMER video folder -> one checked ``VideoGraph`` (formats/memdreamer.md §1).

``parse_video`` raises ``ImportFormatError`` only when the video cannot be read at all (no
graph file, unreadable JSON, no macro events); everything smaller is dropped or repaired and
counted in the ``VideoReport``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memtools.errors import ImportFormatError
from memtools.memdreamer import values as val
from memtools.memdreamer.files import VideoFiles
from memtools.memdreamer.report import VideoReport
from memtools.memdreamer.subgraph import SubgraphReader, node_count
from memtools.schema import (
    Edge,
    EdgeCategory,
    Entity,
    Keyframe,
    MacroEvent,
    MicroEvent,
    NodeKind,
    OcrText,
    Speech,
    SuperEvent,
    Video,
    VideoGraph,
    keyframe_id,
    macro_id,
    slugify_video_id,
    super_id,
)
from memtools.tools.text import clip

FRAMES_DIR = "frames"  # keyframe paths are relative to the memory folder: frames/<video_id>/<file>


@dataclass(frozen=True)
class FrameFile:
    """A keyframe image to copy: from ``source`` to ``<frames_dir(video)>/<name>``."""

    source: Path
    name: str


@dataclass
class MemdreamerVideo:
    """One parsed video: its graph, the keyframe images it needs, and what happened on the way."""

    key: str
    folder: Path
    graph: VideoGraph
    frames: list[FrameFile]
    report: VideoReport


@dataclass
class _Rec:
    """A super or macro event while its parent, times and id are being settled."""

    their: str
    raw: dict[str, Any]
    index: int
    span: tuple[float, float] | None
    slot: int | None = None
    parent: str | None = None
    ours: str = ""
    children: list[_Rec] = field(default_factory=list)

    @property
    def times(self) -> tuple[float, float]:
        """The time range once ``_settle_supers`` has given every record one."""
        if self.span is None:
            raise ImportFormatError(f"{self.their or 'an event'} has no time range yet")  # pragma: no cover
        return self.span


def parse_video(key: str, folder: Path) -> MemdreamerVideo:
    """Read ``<root>/<key>/`` into a checked ``VideoGraph``; see the module docstring."""
    report = VideoReport(key=key, video_id=slugify_video_id(key), folder=str(folder))
    parser = _Parser(key, Path(folder), report)
    graph = parser.run()
    try:
        graph.check()
    except ValueError as exc:  # a bug of ours, not their data: refuse the video rather than write it
        raise ImportFormatError(str(exc)) from exc
    report.counts = {"super": len(graph.supers), "macro": len(graph.macros), "entity": len(graph.entities),
                     "event": len(graph.events), "ocr": len(graph.ocr), "keyframe": len(graph.keyframes),
                     "edges": len(graph.edges)}
    return MemdreamerVideo(key=key, folder=Path(folder), graph=graph, frames=parser.frames, report=report)


class _Parser:
    def __init__(self, key: str, folder: Path, report: VideoReport) -> None:
        self.key, self.folder, self.report = key, folder, report
        self.vid = report.video_id
        self.kinds: dict[str, NodeKind] = {}
        self.edge_keys: set[tuple[str, str, str]] = set()
        self.supers: list[SuperEvent] = []
        self.macros: list[MacroEvent] = []
        self.entities: list[Entity] = []
        self.events: list[MicroEvent] = []
        self.ocr: list[OcrText] = []
        self.speech: list[Speech] = []
        self.edges: list[Edge] = []
        self.pending_frames: list[tuple[float, str, str, Path]] = []  # (t, entity id, macro id, image)
        self.frames: list[FrameFile] = []
        self.keyframes: list[Keyframe] = []
        self.supers_by_their: dict[str, SuperEvent] = {}
        self.aliases: dict[str, list[str]] = {}  # lower-cased name -> its unification group
        self.aliased = 0

    # --- the graph ----------------------------------------------------------------------

    def run(self) -> VideoGraph:
        files = VideoFiles(self.folder, self.report)
        path, data = files.graph()
        by_slot = files.subgraphs_by_slot()
        self.aliases = files.aliases(path.parent)
        files.check_embeddings()
        root = val.mapping(data.get("root_event"))
        supers = self._records(data, "super_events", "super event")
        macros = self._records(data, "macro_events", "macro event")
        if not macros:
            raise ImportFormatError(f"{path} has no macro events")
        self._link(data, supers, macros, by_slot)
        supers = self._settle_supers(supers, macros, root)
        self._number(supers, "super", lambda n: super_id(self.vid, n))
        self._number(macros, "macro", lambda n: macro_id(self.vid, n))
        for rec in sorted(supers, key=_order):
            self._add_super(rec)
        used: set[int] = set()
        for rec in sorted(macros, key=_order):
            macro = self._add_macro(rec)
            if rec.slot is not None and rec.slot in by_slot and rec.slot not in used:
                used.add(rec.slot)
                self._subgraph(macro, rec, *by_slot[rec.slot])
        unmatched = sum(node_count(sg) for slot, (_, sg) in by_slot.items() if slot not in used)
        self.report.drop("node in a subgraph whose slot matches no macro event", unmatched)
        without = sum(1 for rec in macros if rec.slot is None or rec.slot not in by_slot)
        if without:
            self.report.note(f"{without} macro event(s) without a subgraph")
        for key, where in (("super_relations", "super relation"), ("macro_relations", "macro relation")):
            for raw in self._items(data, key, where):
                self._relation(raw, where)
        self._keyframes()
        if self.aliased:
            self.report.note(f"aliases from entity unification added to {self.aliased} entity(ies)")
        ends = [s.t_end for s in self.supers] + [m.t_end for m in self.macros]
        root_span = val.time_range(root.get("time_range"))
        video = Video(
            id=self.vid, title=val.text(root.get("title") or root.get("label")) or self.key,
            description=val.text(root.get("description")), themes=val.strings(root.get("themes")),
            key_entities=val.strings(root.get("key_entities")), emotional_tone=val.text(root.get("emotional_tone")),
            duration=max([0.0, *ends, *(root_span or ())]),
        )
        return VideoGraph(video=video, supers=self.supers, macros=self.macros, entities=self.entities,
                          events=self.events, ocr=self.ocr, speech=self.speech, keyframes=self.keyframes,
                          edges=self.edges)

    def _items(self, data: dict[str, Any], key: str, what: str) -> list[dict[str, Any]]:
        items = data.get(key)
        if items is None:
            return []
        if not isinstance(items, list):
            self.report.drop(f"{key} that is not a list")
            return []
        self.report.drop(f"{what} that is not an object", sum(not isinstance(i, dict) for i in items))
        return [i for i in items if isinstance(i, dict)]

    def _records(self, data: dict[str, Any], key: str, what: str) -> list[_Rec]:
        records: dict[str, _Rec] = {}
        for index, raw in enumerate(self._items(data, key, what)):
            their = val.ident(raw.get("node_id"))
            if not their:
                self.report.drop(f"{what} without node_id")
            elif their in records:
                self.report.drop(f"{what} with a duplicate node_id")
            else:
                anchors = val.mapping(raw.get("anchors"))
                slots = anchors.get("slot_ids", raw.get("slot_id"))
                slot = val.integer(slots[0] if isinstance(slots, list) and slots else slots)
                records[their] = _Rec(their, raw, index, val.time_range(raw.get("time_range")),
                                      slot if slot is not None and slot >= 0 else None)
        return list(records.values())

    def _link(self, data: dict[str, Any], supers: list[_Rec], macros: list[_Rec], by_slot: dict) -> None:
        """Each macro's super (sub_macro_ids, then subevent_relations either way round), and macro times."""
        super_ids = {s.their for s in supers}
        by_id = {m.their: m for m in macros}
        for s in supers:
            for child in val.strings(s.raw.get("sub_macro_ids")):
                if child in by_id and by_id[child].parent is None:
                    by_id[child].parent = s.their
        for rel in self._items(data, "subevent_relations", "subevent relation"):
            a, b = val.ident(rel.get("source_id")), val.ident(rel.get("target_id"))
            if b in by_id and a in super_ids and by_id[b].parent is None:
                by_id[b].parent = a
            elif a in by_id and b in super_ids and by_id[a].parent is None:
                by_id[a].parent = b
        for m in macros:
            if m.span is None and m.slot in by_slot:
                sg = by_slot[m.slot][1]
                m.span = val.time_range([sg.get("start_sec"), sg.get("end_sec")])
                if m.span is not None:
                    self.report.repair("macro event time range taken from its subgraph")

    def _settle_supers(self, supers: list[_Rec], macros: list[_Rec], root: dict[str, Any]) -> list[_Rec]:
        by_id = {s.their: s for s in supers}
        for m in macros:
            if m.parent in by_id:
                by_id[m.parent].children.append(m)
        for s in supers:
            if s.span is None and s.children and any(c.span for c in s.children):
                spans = [c.span for c in s.children if c.span]
                s.span = (min(a for a, _ in spans), max(b for _, b in spans))
                self.report.repair("super event time range taken from its macro events")
        kept = []
        for s in supers:
            if s.span is None and not s.children:
                self.report.drop("super event without time range or macro events")
            else:
                kept.append(s)
        orphans = [m for m in macros if m.parent not in by_id]
        if orphans and not kept:
            title = val.text(root.get("title")) or self.key
            synthetic = _Rec("", {"label": title, "description": val.text(root.get("description"))}, 0, None)
            kept.append(synthetic)
            self.report.repair("super event created because the graph has none")
        for m in orphans:
            parent = min(kept, key=lambda s: _distance(s.span, m.span))
            m.parent = parent.their
            parent.children.append(m)
            self.report.repair("macro event placed in a super event by time")
        for rec in [*kept, *macros]:
            if rec.span is None:
                rec.span = (0.0, 0.0)
                if rec.their:
                    self.report.repair("event without a time range set to 0:00")
            start, end = (max(0.0, t) for t in rec.span)
            if end < start:
                start, end = end, start
                self.report.repair("time range with end before start (swapped)")
            rec.span = (start, end)
        for s in kept:
            if s.their == "" and s.children:
                s.span = (min(c.times[0] for c in s.children), max(c.times[1] for c in s.children))
        return kept

    def _number(self, records: list[_Rec], prefix: str, make) -> None:
        numbers = val.numbering([r.their for r in records], prefix)
        for ordinal, rec in enumerate(sorted(records, key=_order)):
            rec.ours = make(numbers[rec.their] if numbers else ordinal)
            if rec.their:
                self.report.id_map[rec.their] = rec.ours
        if numbers is None and any(r.their for r in records):
            self.report.note(f"{prefix} ids renumbered by time ({prefix}_NN numbering was missing or repeated)")

    def _add_super(self, rec: _Rec) -> None:
        raw = rec.raw
        description = val.text(raw.get("description") or raw.get("summary"))
        label = val.text(raw.get("label") or raw.get("title")) or clip(description, 80) or rec.their
        sup = SuperEvent(id=rec.ours, video_id=self.vid, ordinal=len(self.supers), label=label,
                         description=description, key_entities=val.strings(raw.get("key_entities")),
                         t_start=rec.times[0], t_end=rec.times[1])
        self.supers.append(sup)
        self.supers_by_their[rec.their] = sup
        self.kinds[sup.id] = NodeKind.SUPER

    def _add_macro(self, rec: _Rec) -> MacroEvent:
        raw = rec.raw
        parent = self.supers_by_their[rec.parent or ""]
        summary = val.text(raw.get("summary") or raw.get("description"))
        label = val.text(raw.get("label")).replace("_", " ") or clip(summary, 80) or rec.their
        key_entities = val.strings(raw.get("key_entity_names") or raw.get("key_entities"))
        macro = MacroEvent(id=rec.ours, video_id=self.vid, super_id=parent.id, ordinal=len(self.macros),
                           label=label, summary=summary, key_entities=key_entities,
                           t_start=rec.times[0], t_end=rec.times[1])
        self.macros.append(macro)
        self.kinds[macro.id] = NodeKind.MACRO
        return macro

    # --- relations ----------------------------------------------------------------------

    def _relation(self, raw: dict[str, Any], where: str) -> None:
        src = self.report.id_map.get(val.ident(raw.get("source_id")), "")
        dst = self.report.id_map.get(val.ident(raw.get("target_id")), "")
        if src not in self.kinds or dst not in self.kinds:
            self.report.drop(f"{where}: dangling endpoint")
            return
        self.add_edge(src, dst, raw, where)

    def add_edge(self, src: str, dst: str, raw: dict[str, Any], where: str) -> None:
        label = val.edge_label(raw)
        if not label:
            self.report.drop(f"{where} without relation_label")
            return
        if src == dst:
            self.report.drop(f"{where} from a node to itself")
            return
        fit = val.fit_label(label, self.kinds[src], self.kinds[dst])
        if fit is None:
            pair = f"{self.kinds[src].value}->{self.kinds[dst].value}"
            known = label in val.ALL_LABELS or label in val.SYNONYMS
            self.report.drop(f"{where}: {label} cannot join {pair}" if known else f"{where}: unknown label {label}")
            return
        category, ours, reverse = fit
        if ours != label or reverse:
            self.report.repair(f"{where}: {label} read as {ours}" + (" (reversed)" if reverse else ""))
        if reverse:
            src, dst = dst, src
        if (src, dst, ours) in self.edge_keys:
            self.report.drop(f"{where}: duplicate")
            return
        self.edge_keys.add((src, dst, ours))
        self.edges.append(Edge(source=src, target=dst, category=category, label=ours,
                               description=val.text(raw.get("reason") or raw.get("description"))))

    # --- subgraphs and keyframes --------------------------------------------------------

    def _subgraph(self, macro: MacroEvent, rec: _Rec, path: Path, sg: dict[str, Any]) -> None:
        SubgraphReader(self, macro, rec.their, rec.slot, path, sg).read()

    def _keyframes(self) -> None:
        for n, (t, ent, macro, source) in enumerate(sorted(self.pending_frames)):
            kid = keyframe_id(self.vid, n)
            name = f"{t:09.2f}_{macro.rsplit('/', 1)[-1]}_{ent.rsplit('/', 1)[-1]}.jpg"
            self.keyframes.append(Keyframe(id=kid, video_id=self.vid, t=t, macro_id=macro,
                                           path=f"{FRAMES_DIR}/{self.vid}/{name}"))
            self.edges.append(Edge(source=kid, target=ent, category=EdgeCategory.GROUNDING, label="DEPICTS"))
            self.frames.append(FrameFile(source=source, name=name))


def _order(rec: _Rec) -> tuple[float, float, int]:
    span = rec.span or (0.0, 0.0)
    return (span[0], span[1], rec.index)


def _distance(a: tuple[float, float] | None, b: tuple[float, float] | None) -> tuple[float, float]:
    """(gap, -overlap) between two time ranges: smaller is closer; unknown ranges are far."""
    if a is None or b is None:
        return (float("inf"), 0.0)
    gap = max(0.0, a[0] - b[1], b[0] - a[1])
    overlap = max(0.0, min(a[1], b[1]) - max(a[0], b[0]))
    return (gap, -overlap)
