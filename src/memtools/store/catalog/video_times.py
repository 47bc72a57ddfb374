"""The time index of ``videos.sqlite``: each video's recording start, and the day and week nodes above.

Two tables beside ``videos`` (created by the first write that needs them; a catalog made before
has neither, and reads treat that as "no video has a recording time"):

* ``video_times``: one row per video with a recording start: the start as stored (ISO 8601 with
  its offset), its start and end in UTC (for range queries across zones), its day and ISO week
  (``day/2026-11-20``, ``week/2026-W47``: the calendar day in the video's own offset), title,
  duration, and ``root``, the description of its video root.
* ``periods``: the day and week nodes: id, kind (``day``/``week``), first and last recording
  instants, the video ids (a day) or day ids (a week) below, and the summary.

Both are **derived** from the videos' roots: ``sync`` rewrites the rows of the written or deleted
videos and then every period they touch, inside the same SQLite transaction as the write's video
rows (``VideoCatalog.apply``), so the layer moves with the videos under ``kill -9`` at any instant:
a roll-forward applies the journal's entries (which carry ``recorded_at`` and ``root``) and gets the
same rows. ``memtools repair`` rebuilds both tables from the graph (``rebuild``).

A period's summary is made by extraction (``memtools.store.catalog.period_text``): deterministic, whatever
built the videos.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from memtools.store.catalog.period_text import day_summary, week_summary
from memtools.store.catalog.time_rows import VideoTime, utc
from memtools.wallclock import start_of


class VideoCatalog(Protocol):
    """What the reads need of ``store.video_catalog.VideoCatalog``."""

    def times(self, query: str, params: dict[str, Any] | tuple = ()) -> list[tuple]: ...
    def count(self, generation: int) -> int: ...

TIMES_DDL = (
    "CREATE TABLE IF NOT EXISTS video_times (id TEXT PRIMARY KEY, recorded_at TEXT NOT NULL, utc_start TEXT NOT NULL, "
    "utc_end TEXT NOT NULL, day TEXT NOT NULL, week TEXT NOT NULL, title TEXT NOT NULL, duration REAL NOT NULL, "
    "root TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS video_times_start ON video_times(utc_start)",
    "CREATE INDEX IF NOT EXISTS video_times_day ON video_times(day)",
    "CREATE INDEX IF NOT EXISTS video_times_week ON video_times(week)",
    "CREATE TABLE IF NOT EXISTS periods (id TEXT PRIMARY KEY, kind TEXT NOT NULL, first TEXT NOT NULL, "
    "last TEXT NOT NULL, members TEXT NOT NULL, summary TEXT NOT NULL)",
)
TIME_COLUMNS = "id, recorded_at, utc_start, utc_end, day, week, title, duration, root"


@dataclass(frozen=True)
class Period:
    """A day or week node: ``members`` are video ids (a day) or day ids (a week)."""

    id: str
    kind: str
    first: str
    last: str
    members: list[str]
    summary: str


def time_of_entry(video_id: str, entry: Mapping) -> VideoTime | None:
    """The time row a journal entry (``VideoEntry`` fields plus ``recorded_at`` and ``root``) carries."""
    return VideoTime.of(video_id, entry.get("recorded_at"), str(entry.get("title") or ""),
                        float(entry.get("duration") or 0.0), str(entry.get("root") or ""))


def ensure_tables(conn: sqlite3.Connection) -> None:
    for statement in TIMES_DDL:
        conn.execute(statement)


def sync(conn: sqlite3.Connection, times: Mapping[str, VideoTime | None], gone: Iterable[str]) -> None:
    """Inside the caller's transaction: the time rows of ``times`` (None: the video has no recording
    start) and of the deleted videos ``gone``, then every day and week they touch, made again."""
    touched = [*times, *gone]
    if not touched:
        return
    ensure_tables(conn)
    days: set[str] = set()
    weeks: set[str] = set()
    for vid in touched:
        old = conn.execute("SELECT day, week FROM video_times WHERE id = ?", (vid,)).fetchone()
        if old is not None:
            days.add(old[0])
            weeks.add(old[1])
        conn.execute("DELETE FROM video_times WHERE id = ?", (vid,))
    for time in times.values():
        if time is not None:
            conn.execute(f"INSERT INTO video_times ({TIME_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)", time.row())
            days.add(time.day)
            weeks.add(time.week)
    _remake(conn, days, weeks)


def _remake(conn: sqlite3.Connection, days: Iterable[str], weeks: Iterable[str]) -> None:
    for day in sorted(days):
        rows = [VideoTime(*row) for row in conn.execute(
            f"SELECT {TIME_COLUMNS} FROM video_times WHERE day = ? ORDER BY utc_start, id", (day,))]
        conn.execute("DELETE FROM periods WHERE id = ?", (day,))
        if rows:
            conn.execute("INSERT INTO periods VALUES (?,?,?,?,?,?)",
                         (day, "day", rows[0].utc_start, max(r.utc_end for r in rows),
                          json.dumps([r.video_id for r in rows]), day_summary(day, rows)))
    for week in sorted(weeks):
        rows = [VideoTime(*row) for row in conn.execute(
            f"SELECT {TIME_COLUMNS} FROM video_times WHERE week = ? ORDER BY utc_start, id", (week,))]
        conn.execute("DELETE FROM periods WHERE id = ?", (week,))
        if rows:
            members = sorted({r.day for r in rows})
            conn.execute("INSERT INTO periods VALUES (?,?,?,?,?,?)",
                         (week, "week", rows[0].utc_start, max(r.utc_end for r in rows), json.dumps(members),
                          week_summary(week, rows)))


def rebuild(conn: sqlite3.Connection, times: Mapping[str, VideoTime]) -> None:
    """Both tables made again whole from every video's time (``memtools repair``)."""
    ensure_tables(conn)
    conn.execute("DELETE FROM video_times")
    conn.execute("DELETE FROM periods")
    conn.executemany(f"INSERT INTO video_times ({TIME_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)",
                     (t.row() for t in times.values()))
    _remake(conn, {t.day for t in times.values()}, {t.week for t in times.values()})


# --- reads (``VideoCatalog.times``: a catalog made before the index has no rows) ---------------

def recorded_starts(catalog: VideoCatalog, video_ids: Iterable[str] | None = None) -> dict[str, datetime]:
    """Recording starts (aware datetimes in each video's own offset) of these videos, or of every video
    that has one; a video without one is absent."""
    if video_ids is None:
        rows = catalog.times("SELECT id, recorded_at FROM video_times")
    else:
        ids = list(video_ids)
        rows = [row for chunk in range(0, len(ids), 500) for row in catalog.times(
            f"SELECT id, recorded_at FROM video_times WHERE id IN ({','.join('?' * len(ids[chunk:chunk + 500]))})",
            tuple(ids[chunk:chunk + 500]))]
    out = {}
    for vid, text in rows:
        start = start_of(text)
        if start is not None:
            out[vid] = start
    return out


def videos_between(catalog: VideoCatalog, start: datetime, end: datetime) -> list[VideoTime]:
    """Videos whose recording overlaps [start, end], in recording order."""
    rows = catalog.times(f"SELECT {TIME_COLUMNS} FROM video_times WHERE utc_start <= ? AND utc_end >= ? "
                         "ORDER BY utc_start, id", (utc(end), utc(start)))
    return [VideoTime(*row) for row in rows]


def period(catalog: VideoCatalog, period_id: str) -> Period | None:
    rows = catalog.times("SELECT id, kind, first, last, members, summary FROM periods WHERE id = ?", (period_id,))
    if not rows:
        return None
    pid, kind, first, last, members, summary = rows[0]
    return Period(pid, kind, first, last, json.loads(members), summary)


def nearest_periods(catalog: VideoCatalog, kind: str, limit: int = 5) -> list[str]:
    """The latest ids of one kind (to name some when a period is unknown)."""
    return [row[0] for row in catalog.times("SELECT id FROM periods WHERE kind = ? ORDER BY id DESC LIMIT ?",
                                            (kind, limit))]


def untimed_count(catalog: VideoCatalog, generation: int) -> int:
    """How many listed videos have no recording start."""
    timed = catalog.times("SELECT count(*) FROM video_times")
    return max(catalog.count(generation) - (int(timed[0][0]) if timed else 0), 0)
