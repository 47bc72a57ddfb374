"""The tools in wall-clock time (``memtools.wallclock``), mixed into ``MemoryTools``: a day or week
node's summary (``get_summary(video_id='day/2026-11-20')``), ``search_by_time`` over a clock window
across the library, ``list_videos`` by recording date, and ``as_of_time`` (a clock instant, turned
into each video's own as-of second).

A time the caller writes without a zone is read in the offset of the library's recordings that day
(else their most common offset, else UTC), and the result says so. Videos without a recording time
are never guessed into a window: results count them and say how to reach them by media time.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from memtools.errors import ToolError, ToolNotFound
from memtools.store.catalog import video_times
from memtools.tools import messages as msg
from memtools.tools.host import ToolsHost
from memtools.tools.results import MacroItem, Summary, TimeResult
from memtools.tools.time_results import PeriodSummary, WallMatch, WallTimeResult
from memtools.wallclock import WallClockError, check_span, excerpt, iso

if TYPE_CHECKING:
    from memtools.store.catalog.manifest import VideoEntry

PERIOD_RE = re.compile(r"(day/\d{4}-\d{2}-\d{2}|week/\d{4}-W\d{2})")
MAX_MATCHES = 200  # macro events one wall-clock search returns
MAX_VIDEOS = 500   # videos one wall-clock search opens
_TIME_ONLY = re.compile(r"\d{1,2}:\d{2}(:\d{2})?([+-]\d{2}:?\d{2}|Z)?")
_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")
TIME_EXAMPLE = "'2026-11-20T14:00+01:00' (a date alone, '2026-11-20', means that whole day)"


def _seconds(found: video_times.Period) -> float:
    """From a period's first recording's start to its last one's end."""
    return max((datetime.fromisoformat(found.last) - datetime.fromisoformat(found.first)).total_seconds(), 0.0)


def _held(name: str, text: str, value: datetime) -> datetime:
    """A time argument within the dates a memory holds (``memtools.wallclock.LATEST``): no video is
    recorded outside them, and the window arithmetic (a whole day, the end's day) cannot overflow."""
    try:
        return check_span(value, 0.0, f"{name}={excerpt(text)}")
    except WallClockError as exc:
        open_end = f"; or leave {name} out for an open end" if name in ("recorded_from", "recorded_to") else ""
        raise ToolError(f"{exc}{open_end}") from None


def is_period_id(value: str | None) -> bool:
    return bool(value) and value.startswith(("day/", "week/"))  # type: ignore[union-attr]


class WallClockTools(ToolsHost):
    """Mixed into ``MemoryTools``."""

    # --- reading times ------------------------------------------------------------------

    def _catalog(self) -> video_times.VideoCatalog | None:
        self.memory.refresh()
        manifest = self.memory.manifest
        return None if manifest.legacy else manifest.catalog

    def _untimed(self) -> int:
        catalog = self._catalog()
        generation = self.memory.manifest.generation
        return len(self.memory.manifest.videos) if catalog is None else video_times.untimed_count(catalog, generation)

    def _zone_for(self, date: str, notes: list[str]) -> timezone:
        """The offset a time without one is read in (see the module docstring), noted once."""
        catalog = self._catalog()
        offsets: list[tuple] = []
        if catalog is not None:
            offsets = catalog.times("SELECT substr(recorded_at, 20), count(*) FROM video_times "
                                    "WHERE substr(recorded_at, 1, 10) = ? GROUP BY 1 ORDER BY 2 DESC, 1", (date,))
            offsets = offsets or catalog.times("SELECT substr(recorded_at, 20), count(*) FROM video_times "
                                               "GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1")
        text = offsets[0][0] if offsets else "+00:00"
        m = re.fullmatch(r"([+-])(\d{2}):(\d{2})", text)
        delta = timedelta(hours=int(m[2]), minutes=int(m[3])) if m else timedelta(0)
        note = f"Times without a zone were read as {text} (the recordings' offset)."
        if note not in notes:
            notes.append(note)
        return timezone(-delta if m and m[1] == "-" else delta)

    def _read_time(self, name: str, text: str, notes: list[str], *, day: datetime | None = None,
                   end_of_day: bool = False) -> datetime:
        """A tool argument as an aware instant; ``day``: the start, for an end given as a time only."""
        raw = text.strip().replace(" ", "T", 1) if _DATE_ONLY.match(text.strip()) else text.strip()
        if _TIME_ONLY.fullmatch(raw) and day is not None:
            raw = f"{day.date().isoformat()}T{raw}"
            if not re.search(r"([+-]\d{2}:?\d{2}|Z)$", raw):
                raw += day.strftime("%z")[:3] + ":" + day.strftime("%z")[3:]
        if _DATE_ONLY.fullmatch(raw) and end_of_day:
            raw += "T23:59:59"
        if raw.endswith(("Z", "z")):
            raw = raw[:-1] + "+00:00"
        try:
            value = datetime.fromisoformat(raw)
        except ValueError:
            raise ToolError(f"{name}={excerpt(text)} is not a date or time: write ISO 8601, e.g. {TIME_EXAMPLE}"
                            ) from None
        if value.tzinfo is None:
            value = value.replace(tzinfo=self._zone_for(value.date().isoformat(), notes))
        return _held(name, text, value)

    def _wall_window(self, start_time: str | None, end_time: str | None,
                     notes: list[str]) -> tuple[datetime, datetime]:
        if not start_time:
            raise ToolError(f"pass start_time with end_time (a clock window), e.g. start_time={TIME_EXAMPLE}")
        start = self._read_time("start_time", start_time, notes)
        whole_day = bool(_DATE_ONLY.fullmatch(start_time.strip()))
        end = (self._read_time("end_time", end_time, notes, day=start, end_of_day=True) if end_time
               else start + timedelta(days=1) - timedelta(seconds=1) if whole_day else None)
        if end is None:
            raise ToolError("pass end_time too (e.g. '16:00', read on start_time's day), or give start_time as a "
                            "date alone for that whole day")
        if end <= start:
            raise ToolError(f"end_time ({iso(end)}) must be after start_time ({iso(start)})")
        return start, end

    def _as_of_second(self, video_id: str, as_of_time: str) -> float:
        """``as_of_time`` as seconds into one video (its as_of_sec)."""
        notes: list[str] = []
        instant = self._read_time("as_of_time", as_of_time, notes)
        start = self.memory.recorded_starts([video_id]).get(video_id)
        if start is None:
            raise ToolError(f"video {video_id!r} has no recording time, so as_of_time cannot be placed in it; "
                            "pass as_of_sec (seconds into the video) instead")
        seconds = (instant - start).total_seconds()
        if seconds < 0:
            raise ToolError(f"as_of_time {iso(instant)} is before video {video_id!r} started ({iso(start)}): "
                            "nothing of it had happened yet")
        return seconds

    # --- the tools ----------------------------------------------------------------------

    def period_summary(self, period_id: str) -> Summary:
        """``get_summary`` of a day or week node."""
        if not PERIOD_RE.fullmatch(period_id):
            raise ToolError(f"{period_id!r} is not a day or week id: write 'day/2026-11-20' or 'week/2026-W47'")
        catalog = self._catalog()
        found = video_times.period(catalog, period_id) if catalog is not None else None
        if found is None:
            kind = period_id.split("/", 1)[0]
            some = video_times.nearest_periods(catalog, kind) if catalog is not None else []
            known = f"{kind}s with videos include: {', '.join(some)}" if some else (
                "no video of this memory has a recording time, so it has no days or weeks")
            raise ToolNotFound(f"no videos were recorded in {period_id}; {known}")
        return PeriodSummary(video_id=found.id, title=found.summary.splitlines()[0], description=found.summary,
                             themes=[], key_entities=[], emotional_tone="", duration=_seconds(found), supers=[],
                             kind=found.kind, members=found.members, untimed=self._untimed())

    def media_as_of(self, video_id: str | None, as_of_sec: float | None, as_of_time: str | None,
                    clock: str | None) -> float | None:
        """The as-of second of a media-time window (``as_of_time`` placed in its video); a clock time
        beside ``start_sec``/``end_sec`` is refused."""
        if clock:
            raise ToolError(msg.WINDOW_KINDS)
        return self._as_of_second(self._video_id(video_id), as_of_time) if as_of_time is not None else as_of_sec

    def video_page(self, offset: int, limit: int, needle: str, recorded_from: str | None,
                   recorded_to: str | None) -> tuple[list[tuple[str, VideoEntry]], int, str, int]:
        """A page of ``list_videos``: by id, or (with a date window) in recording order; with the
        window as text and how many videos have no recording time (0 without a window)."""
        entries = self.memory.manifest.videos
        if not (recorded_from or recorded_to):
            page, total = entries.page(offset, limit, needle)
            return page, total, "", 0
        ids, window, untimed = self.dated_ids(recorded_from, recorded_to)
        found = [(v, e) for v in ids if (e := entries.get(v)) is not None
                 and (not needle or needle in v.lower() or needle in e.title.lower())]
        return found[offset:offset + limit], len(found), window, untimed

    def search_wall_clock(self, start_time: str | None, end_time: str | None, video_id: str | None,
                          as_of_time: str | None, start_sec: float | None = None,
                          end_sec: float | None = None) -> TimeResult:
        """Macro events recorded in a clock window, across the library (or in one video)."""
        if start_sec is not None or end_sec is not None:
            raise ToolError(msg.WINDOW_KINDS)
        notes: list[str] = []
        start, end = self._wall_window(start_time, end_time, notes)
        as_of = self._read_time("as_of_time", as_of_time, notes) if as_of_time else None
        if as_of is not None and as_of < start:
            raise ToolError(f"the window starts at {iso(start)}, after as_of_time {iso(as_of)}: nothing in it had "
                            "happened yet")
        catalog = self._catalog()
        rows = video_times.videos_between(catalog, start, end) if catalog is not None else []
        if video_id is not None:
            vid = self._video_id(video_id)
            if vid not in self.memory.recorded_starts([vid]):
                raise ToolError(f"video {vid!r} has no recording time; search it with start_sec/end_sec (seconds "
                                "into the video)")
            rows = [r for r in rows if r.video_id == vid]
        matches: list[WallMatch] = []
        more = 0
        for row in rows[:MAX_VIDEOS]:
            entry = self.memory.manifest.videos.get(row.video_id)
            outline = self._outline(row.video_id) if entry is not None and entry.status == "ready" else None
            if outline is None:
                continue
            began = datetime.fromisoformat(row.recorded_at)
            low, high = (start - began).total_seconds(), (end - began).total_seconds()
            cut = (as_of - began).total_seconds() if as_of is not None else None
            for m in outline.macros:
                if m.t_end < low or m.t_start > high or (cut is not None and m.t_end > cut):
                    continue
                if len(matches) >= MAX_MATCHES:
                    more += 1
                    continue
                label = getattr(outline.by_id.get(m.super_id), "label", "")
                matches.append(WallMatch(
                    video_id=row.video_id, starts_at=iso(began + timedelta(seconds=m.t_start)),
                    ends_at=iso(began + timedelta(seconds=m.t_end)),
                    macro=MacroItem(id=m.id, super_id=m.super_id, super_label=label, label=m.label,
                                    t_start=m.t_start, t_end=m.t_end, key_entities=list(m.key_entities),
                                    summary=m.summary)))
        return WallTimeResult(start=iso(start), end=iso(end), matches=matches, videos=len(rows),
                              untimed=0 if video_id is not None else self._untimed(),
                              as_of=iso(as_of) if as_of is not None else None, notes=notes, more=more)

    def dated_ids(self, recorded_from: str | None, recorded_to: str | None) -> tuple[list[str], str, int]:
        """The ids of videos recorded (overlapping) between the two dates or times, in recording order;
        the window as text; how many videos have no recording time."""
        notes: list[str] = []
        try:
            start = (self._read_time("recorded_from", recorded_from, notes) if recorded_from
                     else datetime(1, 1, 2, tzinfo=timezone.utc))
            end = (self._read_time("recorded_to", recorded_to, notes, day=start, end_of_day=True) if recorded_to
                   else datetime(9999, 12, 30, tzinfo=timezone.utc))
        except WallClockError as exc:
            raise ToolError(str(exc)) from None
        if end < start:
            raise ToolError(f"recorded_to ({iso(end)}) is before recorded_from ({iso(start)})")
        catalog = self._catalog()
        rows = video_times.videos_between(catalog, start, end) if catalog is not None else []
        window = (f"recorded {'from ' + iso(start) if recorded_from else ''}"
                  f"{' ' if recorded_from and recorded_to else ''}{'to ' + iso(end) if recorded_to else ''}")
        return [r.video_id for r in rows], window, self._untimed()
