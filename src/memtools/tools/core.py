"""The tool core: the operations over a memory, with arguments checked for an LLM caller.

``MemoryTools(memory)`` is what every front end (CLI, MCP, LangChain, the ORA loop) wraps.
Methods take plain arguments, return typed results (``render()`` for text) and raise
``ToolError`` with a message that says what to do instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memtools.errors import MemoryBusy, ToolBusy, ToolError, ToolNotFound
from memtools.schema import (
    LABELS,
    VIDEO_ID_RE,
    Keyframe,
    MacroEvent,
    NodeKind,
    SuperEvent,
    kind_of_id,
)
from memtools.store import Memory
from memtools.store.catalog.failures import build_failure
from memtools.store.outline import Outline
from memtools.tools import messages as msg
from memtools.tools.frame_results import Frames
from memtools.tools.frame_text import describe_frames
from memtools.tools.frames import inspect_window
from memtools.tools.frames_search import FrameSearchTools
from memtools.tools.items import edge_item, macro_item, node_item
from memtools.tools.people_tools import PeopleTools
from memtools.tools.results import (
    EdgeItem,
    MacroEvents,
    Relations,
    Subgraph,
    Summary,
    SuperBrief,
    SuperEvents,
    SuperItem,
    TimeMatch,
    TimeResult,
    VideoItem,
    VideoList,
)
from memtools.tools.search import SearchConfig
from memtools.tools.searching import TOP_K_MAX, SearchTools, check_as_of, reranker_from_env
from memtools.tools.text import brief, hms
from memtools.tools.transcript import TranscriptTools
from memtools.tools.wallclock_tools import WallClockTools, is_period_id

if TYPE_CHECKING:
    from memtools.rerank.base import Reranker

LIST_LIMIT, LIST_MAX = 50, 200  # list_videos page size: default, most
MAX_IDS = 50
MAX_FRAMES = 16
SPEECH_PER_MATCH = 3  # utterances search_by_time quotes per macro event
ALL_LABELS = sorted(set().union(*LABELS.values()) - {"CONTAINS"})


__all__ = ["MAX_FRAMES", "MAX_IDS", "TOP_K_MAX", "MemoryTools"]


def _range(name: str, value: float, low: float, high: float) -> None:
    if not (low <= value <= high):
        raise ToolError(msg.BAD_RANGE.format(name=name, low=low, high=high, value=value))


class MemoryTools(SearchTools, PeopleTools, TranscriptTools, FrameSearchTools, WallClockTools):
    """The tools over one ``Memory``. Thread-safe; every call is short.

    Navigation and search tools take an optional ``as_of_sec``: only what had happened by
    that second of the video (nodes that had ended) is returned, as a live memory would have
    held it then (MAGIC-Video's G<=t).
    """

    def __init__(self, memory: Memory, *, search: SearchConfig | None = None,
                 reranker: Reranker | None = None) -> None:
        """``reranker`` reorders the first ``search.rerank_candidates`` moments of every search
        (``memtools.rerank``); ``None`` takes the one ``$MEMTOOLS_RERANKER`` names, if any."""
        self.memory = memory
        self.search_config = search or SearchConfig.default()
        self.reranker = reranker if reranker is not None else reranker_from_env(memory)

    # --- helpers ------------------------------------------------------------------------

    def _reading(self):
        return _BusyAsToolError(self.memory)

    def _video_id(self, video_id: str | None) -> str:
        self.memory.refresh()
        entries = self.memory.manifest.videos  # point lookups; every id is read only to name some
        if video_id is None:
            ids = entries.ids()
            if not ids:
                raise ToolError(msg.EMPTY_MEMORY)
            if len(ids) > 1:
                raise ToolError(msg.NEED_VIDEO_ID.format(n=len(ids), some=", ".join(ids[:5])))
            video_id = ids[0]
        if video_id not in entries:
            some = ", ".join(entries.ids()[:5])
            raise ToolNotFound(msg.UNKNOWN_VIDEO.format(video_id=video_id, some=some or "(none)"))
        if entries[video_id].status == "failed":
            advice = build_failure(self.memory.path, video_id).advice(self.memory.path)
            raise ToolError(msg.VIDEO_FAILED.format(video_id=video_id, advice=advice))
        if entries[video_id].status != "ready":
            raise ToolError(msg.VIDEO_NOT_READY.format(video_id=video_id, status=entries[video_id].status))
        return video_id

    def _not_yet(self, what: str, late: Sequence, as_of: float) -> None:
        if late:
            raise ToolError(msg.NOT_YET.format(what=what, node_id=late[0].id, end=hms(late[0].t_end),
                                               as_of=hms(as_of), as_of_raw=as_of))

    def _check_window(self, start: float, end: float) -> None:
        if start < 0 or end <= start:
            raise ToolError(msg.BAD_WINDOW.format(start=start, end=end))

    def _time_window(self, start_sec: float, end_sec: float, video_id: str | None,
                     as_of_sec: float | None) -> tuple[str, float | None]:
        """The video id and as-of time of a window call, once the window is checked against both."""
        as_of = check_as_of(as_of_sec)
        self._check_window(start_sec, end_sec)
        if as_of is not None and start_sec > as_of:
            raise ToolError(msg.WINDOW_AFTER_AS_OF.format(start=hms(start_sec), as_of=hms(as_of)))
        vid = self._video_id(video_id)
        duration = self.memory.manifest.videos[vid].duration
        if duration and start_sec > duration:
            raise ToolError(msg.WINDOW_PAST_END.format(start=hms(start_sec), video_id=vid, duration=hms(duration)))
        return vid, as_of

    # --- navigation ---------------------------------------------------------------------

    def list_videos(self, offset: int = 0, limit: int = LIST_LIMIT, query: str | None = None,
                    recorded_from: str | None = None, recorded_to: str | None = None) -> VideoList:
        """A page of the videos (sorted by id, or by recording time when ``recorded_from``/``recorded_to``
        keep those recorded then); ``query`` keeps ids or titles that contain it (any case)."""
        _range("offset", offset, 0, 10**9)
        _range("limit", limit, 1, LIST_MAX)
        self.memory.refresh()
        needle = (query or "").strip().lower()
        page, total, window, untimed = self.video_page(offset, limit, needle, recorded_from, recorded_to)
        starts = self.memory.recorded_starts([vid for vid, _ in page])
        items = [VideoItem(video_id=vid, title=e.title, duration=e.duration, status=e.status, counts=e.counts,
                           recorded_at=starts[vid].isoformat() if vid in starts else None) for vid, e in page]
        from memtools.store.catalog.owed import notice
        from memtools.store.integrity.checker import damage_message, quick_problems

        problems = quick_problems(self.memory.path, self.memory.manifest)
        warning = " ".join(filter(None, [damage_message(self.memory.path, problems) if problems else "",
                                         notice(self.memory.path)]))
        return VideoList(videos=items, total=total, offset=offset, limit=limit, query=needle, recorded=window,
                         untimed=untimed, warning=warning)

    def _outline(self, video_id: str) -> Outline | None:
        try:
            return self.memory.outline(video_id)
        except MemoryBusy as exc:
            raise ToolBusy(msg.BUSY) from exc

    def _known_outline(self, video_id: str) -> Outline:
        """The outline of a video ``_video_id`` accepted; one the graph lacks reads as an unknown video."""
        outline = self._outline(video_id)
        if outline is None:
            raise ToolNotFound(msg.UNKNOWN_VIDEO.format(video_id=video_id, some=", ".join(self.memory.video_ids()[:5])))
        return outline

    def _lookup(self, node_id: str, kind: type):
        """A super or macro event by id, from its video's cached outline (None if absent)."""
        outline = self._outline(node_id.split("/", 1)[0]) if "/" in node_id else None
        node = outline.by_id.get(node_id) if outline else None
        return node if isinstance(node, kind) else None

    def get_summary(self, video_id: str | None = None, as_of_sec: float | None = None) -> Summary:
        if is_period_id(video_id):  # a day or week node: day/2026-11-20, week/2026-W47
            return self.period_summary(str(video_id))
        as_of = check_as_of(as_of_sec)
        vid = self._video_id(video_id)
        outline = self._known_outline(vid)
        video = outline.video
        counts: dict[str, int] = {}
        for m in outline.macros:
            if as_of is None or m.t_end <= as_of:
                counts[m.super_id] = counts.get(m.super_id, 0) + 1
        whole = as_of is None or (video.duration and as_of >= video.duration)
        # The root's description, themes and entities summarise the whole video: "as of t"
        # before its end they would tell the future, so the summary keeps only what had ended.
        return Summary(
            video_id=vid, title=video.title, description=video.description if whole else "",
            themes=list(video.themes) if whole else [], key_entities=list(video.key_entities) if whole else [],
            emotional_tone=video.emotional_tone if whole else "", duration=video.duration,
            supers=[SuperBrief(id=s.id, label=s.label, t_start=s.t_start, t_end=s.t_end,
                               macro_count=counts.get(s.id, 0)) for s in outline.supers
                    if as_of is None or s.t_end <= as_of or counts.get(s.id)],
            as_of_sec=None if whole else as_of, recorded_at=video.recorded_at)

    def get_super_events(self, video_id: str | None = None, super_ids: Sequence[str] | None = None,
                         as_of_sec: float | None = None) -> SuperEvents:
        as_of = check_as_of(as_of_sec)
        if super_ids:
            if len(super_ids) > MAX_IDS:
                raise ToolError(msg.TOO_MANY_IDS.format(limit=MAX_IDS, n=len(super_ids)))
            supers = [self._lookup(s, SuperEvent) for s in super_ids]
            missing = [s for s, found in zip(super_ids, supers, strict=True) if found is None]
            if missing:
                raise ToolNotFound(msg.BAD_ID.format(what="super event", node_id=missing[0],
                                                     example="<video>/super_01", hint=msg.SUPER_HINT))
            vid = supers[0].video_id
        else:
            vid = self._video_id(video_id)
            supers = list(self._known_outline(vid).supers)
        children: dict[str, list[str]] = {}
        for video in dict.fromkeys(s.video_id for s in supers):
            for m in self._known_outline(video).macros:
                if as_of is None or m.t_end <= as_of:
                    children.setdefault(m.super_id, []).append(m.id)
        if as_of is not None:
            late = [s for s in supers if s.t_end > as_of and s.id not in children]
            if super_ids and late:
                raise ToolError(msg.NOT_YET.format(what="super event", node_id=late[0].id, end=hms(late[0].t_end),
                                                   as_of=hms(as_of), as_of_raw=as_of))
            # A phase still going on at t shows only its finished macro events, not its description.
            supers = [s if s.t_end <= as_of else s.model_copy(update={"description": "", "key_entities": []})
                      for s in supers if s.t_end <= as_of or s.id in children]
        return SuperEvents(video_id=vid, supers=[
            SuperItem(id=s.id, label=s.label, t_start=s.t_start, t_end=s.t_end, description=s.description,
                      key_entities=list(s.key_entities), macro_ids=children.get(s.id, [])) for s in supers])

    def get_macro_events(self, super_id: str | None = None, macro_ids: Sequence[str] | None = None,
                         as_of_sec: float | None = None) -> MacroEvents:
        as_of = check_as_of(as_of_sec)
        if (super_id is None) == (not macro_ids):
            raise ToolError(msg.NEED_SUPER_OR_MACROS)
        if super_id is not None:
            sup = self._lookup(super_id, SuperEvent)
            if sup is None:
                raise ToolNotFound(msg.BAD_ID.format(what="super event", node_id=super_id,
                                                     example="<video>/super_01", hint=msg.SUPER_HINT))
            macros = [m for m in self._known_outline(sup.video_id).macros if m.super_id == super_id
                      and (as_of is None or m.t_end <= as_of)]
            return MacroEvents(macros=[macro_item(m, sup.label) for m in macros])
        macro_ids = list(macro_ids or [])  # given: checked above
        if len(macro_ids) > MAX_IDS:
            raise ToolError(msg.TOO_MANY_IDS.format(limit=MAX_IDS, n=len(macro_ids)))
        found = [self._lookup(m, MacroEvent) for m in macro_ids]
        macros = [m for m in found if m is not None]
        missing = [m for m, f in zip(macro_ids, found, strict=True) if f is None]
        if as_of is not None:
            self._not_yet("macro event", [m for m in macros if m.t_end > as_of], as_of)
        if not macros:
            raise ToolNotFound(msg.BAD_ID.format(what="macro event", node_id=missing[0],
                                                 example="<video>/macro_0003", hint=msg.MACRO_HINT))
        return MacroEvents(macros=[macro_item(m, getattr(self._lookup(m.super_id, SuperEvent), "label", ""))
                                   for m in macros], missing=missing)

    def get_subgraph(self, macro_id: str, as_of_sec: float | None = None) -> Subgraph:
        as_of = check_as_of(as_of_sec)
        if kind_of_id(macro_id) is NodeKind.SUPER:
            raise ToolError(msg.SUPER_NOT_MACRO.format(node_id=macro_id))
        macro = self._lookup(macro_id, MacroEvent)
        if macro is None:
            raise ToolNotFound(msg.BAD_ID.format(what="macro event", node_id=macro_id,
                                                 example="<video>/macro_0003", hint=msg.MACRO_HINT))
        if as_of is not None:
            self._not_yet("macro event", [macro] if macro.t_end > as_of else [], as_of)
        sup = self._lookup(macro.super_id, SuperEvent)
        with self._reading() as g:
            nodes, edges = g.subgraph(macro_id)
        items = [node_item(n) for n in nodes]
        events = sorted((i for i in items if i.kind == "event"), key=lambda i: (i.t_start or 0, i.id))
        ocr = sorted((i for i in items if i.kind == "ocr"), key=lambda i: (i.t_start or 0, i.id))
        speech = sorted((i for i in items if i.kind == "speech"), key=lambda i: (i.t_start or 0, i.id))
        return Subgraph(
            macro=macro_item(macro, getattr(sup, "label", "")),
            entities=[i for i in items if i.kind == "entity"], events=events, ocr=ocr, speech=speech,
            edges=[EdgeItem(source=s, target=t, category=c, label=lab, description=d) for s, t, c, lab, d in edges],
        )

    # --- search -------------------------------------------------------------------------

    def search_by_time(self, start_sec: float | None = None, end_sec: float | None = None, video_id: str | None = None,
                       as_of_sec: float | None = None, start_time: str | None = None, end_time: str | None = None,
                       as_of_time: str | None = None) -> TimeResult:
        if start_sec is None or end_sec is None:  # a clock window (start_time, end_time): across the library
            return self.search_wall_clock(start_time, end_time, video_id, as_of_time, start_sec, end_sec)
        as_of_sec = self.media_as_of(video_id, as_of_sec, as_of_time, start_time or end_time)
        vid, as_of = self._time_window(start_sec, end_sec, video_id, as_of_sec)
        outline = self._known_outline(vid)
        macros = [m for m in outline.macros if m.t_end >= start_sec and m.t_start <= end_sec
                  and (as_of is None or m.t_end <= as_of)]
        said = self._said(vid, start_sec, end_sec, as_of) if macros else {}
        return TimeResult(start_sec=start_sec, end_sec=end_sec, recorded_at=outline.video.recorded_at, matches=[
            TimeMatch(video_id=m.video_id, macro=macro_item(m, getattr(outline.by_id.get(m.super_id), "label", "")),
                      speech=[brief(u, 120) for u in said.get(m.id, [])[:SPEECH_PER_MATCH]],
                      speech_total=len(said.get(m.id, [])))
            for m in macros])

    # --- traversal ----------------------------------------------------------------------

    def get_relations(self, node_id: str, direction: str = "both",
                      relation_types: Sequence[str] | None = None) -> Relations:
        if direction not in ("out", "in", "both"):
            raise ToolError(msg.BAD_DIRECTION.format(value=direction))
        labels = [r.upper() for r in relation_types or []]
        bad = [r for r in labels if r not in ALL_LABELS and r != "CONTAINS"]
        if bad:
            raise ToolError(msg.BAD_RELATION.format(bad=bad, allowed=", ".join(ALL_LABELS)))
        with self._reading() as g:
            node = g.get(node_id) if kind_of_id(node_id) is not None else None
            if node is None:
                raise ToolNotFound(msg.BAD_ID.format(what="node", node_id=node_id,
                                                     example="<video>/macro_0003/evt_002", hint=msg.NODE_HINT))
            edges = g.edges(node_id, direction, labels=labels)
        kind = kind_of_id(node_id)
        return Relations(
            node_id=node_id, kind=kind.value if kind else "node", text=brief(node, 200),
            outgoing=[edge_item(e) for e in edges if e.source == node_id],
            incoming=[edge_item(e) for e in edges if e.target == node_id],
            identities=self._identities(node_id),
        )

    # --- inspect ------------------------------------------------------------------------

    def inspect_frames(self, video_id: str, start_sec: float, end_sec: float, max_frames: int = 6) -> Frames:
        self._check_window(start_sec, end_sec)
        _range("max_frames", max_frames, 1, MAX_FRAMES)
        vid = self._video_id(video_id)
        outline = self._known_outline(vid)
        video = outline.video
        macros = [m for m in outline.macros if m.t_end >= start_sec and m.t_start <= end_sec]
        with self._reading() as g:
            keyframes = g.keyframes(vid, start_sec, end_sec)
        if video.duration and start_sec > video.duration:
            raise ToolError(msg.WINDOW_PAST_END.format(start=hms(start_sec), video_id=vid,
                                                       duration=hms(video.duration)))
        frames = inspect_window(self.memory.path, video, keyframes, macros, start_sec, end_sec, max_frames)
        with self._reading() as g:
            describe_frames(frames.frames, macros, lambda macro_id: g.subgraph(macro_id)[0])
        return frames

    # --- keyframe images (what the MCP keyframe resources serve) ------------------------

    def keyframe(self, keyframe_id: str) -> bytes:
        """The JPEG of a stored keyframe, by id (``kitchen/kf_0001``); ``ToolNotFound`` names what is wrong."""
        video_id, _, name = keyframe_id.partition("/")
        if not VIDEO_ID_RE.match(video_id) or "/" in name or kind_of_id(keyframe_id) is not NodeKind.KEYFRAME:
            raise ToolNotFound(msg.NOT_A_KEYFRAME.format(keyframe_id=keyframe_id))
        with self._reading() as g:
            node = g.get(keyframe_id)
        if not isinstance(node, Keyframe) or node.video_id != video_id:
            raise ToolNotFound(msg.NO_KEYFRAME.format(keyframe_id=keyframe_id))
        root = self.memory.path.resolve()
        path = (root / node.path).resolve()
        if not path.is_relative_to(root) or not path.is_file():
            raise ToolNotFound(msg.KEYFRAME_FILE_MISSING.format(keyframe_id=keyframe_id))
        return path.read_bytes()


class _BusyAsToolError:
    """``memory.reading()`` with ``MemoryBusy`` turned into the model-facing ToolError."""

    def __init__(self, memory: Memory) -> None:
        self._cm = memory.reading()

    def __enter__(self):
        try:
            return self._cm.__enter__()
        except MemoryBusy as exc:
            raise ToolBusy(msg.BUSY) from exc

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)

