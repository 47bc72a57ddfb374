"""Library-level answers (issue 31): library entities linked across videos, their biographies, and
activity chains across days, read from the library layer (``memtools.store.library.layer``).

``search_entities`` and ``get_entity_timeline`` (``memtools.tools.entities``) answer at library
level through these helpers whenever no ``video_id`` is given and the layer matches the memory;
``get_event_chain`` is the activity chain. A mixin of ``MemoryTools`` (through ``EntityTools``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from datetime import datetime

from memtools.errors import ToolError
from memtools.store.library import meaning
from memtools.store.library.link_rules import LOCATION, places_of
from memtools.store.library.reads import LibraryReads, Occurrence, match_activities, recording_order
from memtools.store.tables.entity_index import EntityRow
from memtools.tools.entity_results import EntityItem, LibraryAppearance, LibraryTimelineItem, Seen
from memtools.tools.host import ToolsHost
from memtools.tools.library_results import ChainItem, EventChain

LIB_ID = re.compile(r"^lib/entity_\d{4,}$")
NOT_LINKED = ("(The library layer, which links entities across videos, is not computed for this memory yet: "
              "answered per video. `memtools repair --memory M`, or the next write, computes it.)")
NO_LAYER = ("this memory's library layer (activities across videos) is not computed yet; run `memtools repair "
            "--memory M` (or write any video), meanwhile use search_nodes(node_types=['event'])")


def _as_rows(rows: Sequence[EntityRow]) -> list[dict]:
    return [{"id": r.id, "entity_type": r.entity_type, "timeline": r.timeline, "t_first": r.t_first} for r in rows]


class LibraryTools(ToolsHost):
    """The library-level helpers and ``get_event_chain``."""

    def _library(self) -> LibraryReads | None:
        with self._reading():
            self.memory.refresh()
            return LibraryReads.open(self.memory.path, self.memory.manifest.generation)

    def _linked(self) -> LibraryReads | None:
        """The layer, for answers that default to library level: a library of one video answers per video
        (the same entities, with their episodes and roles)."""
        self.memory.refresh()
        return self._library() if len(self.memory.manifest.videos) > 1 else None

    def _starts(self, video_ids: set[str]) -> dict[str, datetime | None]:
        """Each video's recording start (wall clock), None where it has none."""
        starts = self.memory.recorded_starts(sorted(video_ids))
        return {v: starts.get(v) for v in video_ids}

    def _places(self, reads: LibraryReads, video_ids: set[str], rows: list[EntityRow] | None = None):
        """Per video: macro -> place id, the video's first place; and each place's (name, library id) (``rows``:
        the videos' LOCATION entities, when read already)."""
        rows = self.memory.entities.places(sorted(video_ids)) if rows is None else rows
        by_video: dict[str, list[EntityRow]] = {}
        for r in rows:
            by_video.setdefault(r.video_id, []).append(r)
        layout = {v: places_of(_as_rows(rs)) for v, rs in by_video.items()}
        links = reads.links_of([r.id for r in rows])
        first = {lib: ms[0].name for lib, ms in reads.members(sorted({k.lib_id for k in links.values()})).items()
                 if ms}  # a place goes by its library entity's name, so "Kitchen" and "kitchen" are one
        names = {r.id: (first.get(links[r.id].lib_id, r.name), links[r.id].lib_id) if r.id in links else (r.name, "")
                 for r in rows}
        return layout, names

    def _library_items(self, reads: LibraryReads, lib_ids: Sequence[str], appearances_of,
                       scores: dict[str, float] | None = None) -> list[LibraryTimelineItem]:
        """Each library entity with its appearances across videos in recording order."""
        members = reads.members(list(lib_ids))
        videos = {m.video_id for ms in members.values() for m in ms}
        found, place_rows = self.memory.entities.with_places([m.canonical_id for ms in members.values() for m in ms],
                                                             sorted(videos))
        rows = {r.id: r for r in found}
        starts = self._starts(videos)
        order = {v: i for i, v in enumerate(recording_order(videos, starts))}
        layout, place_names = self._places(reads, videos, place_rows)
        present = reads.at_places([m.canonical_id for ms in members.values() for m in ms
                                   if m.entity_type == LOCATION])
        out = []
        for lib_id in lib_ids:
            apps: list[LibraryAppearance] = []
            for link in members.get(lib_id, []):
                row = rows.get(link.canonical_id)
                if row is None:
                    continue
                by_macro, first_place = layout.get(link.video_id, ({}, None))
                start = starts.get(link.video_id)
                here = [x.name for x in present.get(link.canonical_id, [])]
                for a in appearances_of(row):
                    place = row.id if row.entity_type == LOCATION else by_macro.get(a.macro_id, first_place)
                    name, place_lib = place_names.get(place or "", ("", ""))
                    apps.append(LibraryAppearance(
                        video_id=link.video_id, entity_id=row.id, recorded_at=start.isoformat() if start else None,
                        t_start=a.t_start, t_end=a.t_end, macro_id=a.macro_id, macro_label=a.macro_label,
                        place=name, place_id=place_lib, evidence=link.evidence, confidence=link.confidence,
                        doing=[f"{r.label} {r.text}".strip() for r in a.roles], present=here))
            if not apps:
                continue
            apps.sort(key=lambda a: (order[a.video_id], a.t_start, a.entity_id))
            first_row = rows[apps[0].entity_id]
            names = [n for c in dict.fromkeys(a.entity_id for a in apps) for n in (rows[c].name, *rows[c].aliases)]
            dates = [starts[a.video_id] for a in apps]
            days = None if any(d is None for d in dates) else len({d.date() for d in dates if d is not None})
            seen = [Seen(video_id=a.video_id, t_start=a.t_start, t_end=a.t_end, recorded_at=a.recorded_at,
                         place=a.place) for a in (apps[0], apps[-1])]
            item = EntityItem(
                id=lib_id, video_id=apps[0].video_id, name=first_row.name, entity_type=first_row.entity_type,
                aliases=[n for n in dict.fromkeys(names) if n.rstrip(".") != first_row.name.rstrip(".")][:12],
                description=max((rows[a.entity_id].description for a in apps), key=len, default=""),
                t_first=apps[0].t_start, t_last=apps[-1].t_end, appearances=len(apps),
                score=(scores or {}).get(lib_id), videos=len({a.video_id for a in apps}), days=days,
                first_seen=seen[0], last_seen=seen[1])
            out.append(LibraryTimelineItem(entity=item, appearances=apps))
        return out

    def get_event_chain(self, activity: str, video_id: str | None = None) -> EventChain:
        """Every occurrence of an activity (a micro-event's action) across the library, in recording order."""
        query = (activity or "").strip()
        if not query:
            raise ToolError("pass activity: the action to follow across days, e.g. 'cooking on a stove'")
        if video_id is not None:
            video_id = self._video_id(video_id)
        reads = self._library()
        if reads is None:
            raise ToolError(NO_LAYER.replace(" M`", f" {self.memory.path}`"))
        embedder = self.memory.embedder
        matches = match_activities(reads, query, embedder.embed_query, embedder.embed_documents)
        sure = {m.activity: m.probability for m in matches if m.probability >= meaning.MATCH}
        near = {m.activity: m.probability for m in matches if m.probability < meaning.MATCH}
        occurrences = reads.occurrences(list(sure), video_id) if sure else []
        doubtful = sorted(reads.occurrences(list(near), video_id) if near else [],
                          key=lambda o: (-near[o.activity], o.video_id, o.t_start))[:meaning.DOUBTFUL_SHOWN]
        videos = {o.video_id for o in occurrences}
        starts = self._starts(videos | {o.video_id for o in doubtful})
        order = {v: i for i, v in enumerate(recording_order(starts.keys(), starts))}
        _, place_names = self._places(reads, videos)

        def item(o: Occurrence, score: float) -> ChainItem:
            start = starts[o.video_id]
            name, place_lib = place_names.get(o.place or "", ("", ""))
            return ChainItem(video_id=o.video_id, recorded_at=start.isoformat() if start else None,
                             event_id=o.event_id, action=o.label, t_start=o.t_start, t_end=o.t_end,
                             macro_id=o.macro_id, place=name, place_id=place_lib, score=round(score, 3),
                             sure=score >= meaning.SURE)

        def when(o: Occurrence) -> tuple[int, float, str]:
            return order[o.video_id], o.t_start, o.event_id

        chain = [item(o, sure[o.activity]) for o in sorted(occurrences, key=when)]
        near_items = [item(o, near[o.activity]) for o in sorted(doubtful, key=when)]
        dates = [starts[v] for v in videos]
        days = None if any(d is None for d in dates) else len({d.date() for d in dates if d is not None})
        places = [p for p, _ in Counter(p for _, p in dict.fromkeys((c.video_id, c.place) for c in chain if c.place))
                  .most_common()]  # by the number of videos (days) it happens there, then first seen
        note = "" if days is not None or not chain else (
            "No recording dates for these videos: each video is counted, in library order.")
        day_of = self._day_names(starts)
        counted = list(dict.fromkeys(day_of[c.video_id] for c in chain))
        unsure = [d for d in counted if not any(c.sure for c in chain if day_of[c.video_id] == d)]
        maybe = [d for d in dict.fromkeys(day_of[c.video_id] for c in near_items) if d not in counted]
        groups = list(dict.fromkeys(m.group_label for m in matches if m.activity in sure))
        return EventChain(query=query, activities=groups, videos=len(videos), days=days, places=places, chain=chain,
                          day_list=counted, unsure_days=unsure, doubtful=near_items, doubtful_days=maybe, note=note)

    @staticmethod
    def _day_names(starts: dict[str, datetime | None]) -> dict[str, str]:
        """Each video's day as an answer names it: its recording date, else the video itself."""
        return {v: start.date().isoformat() if start is not None else v for v, start in starts.items()}
