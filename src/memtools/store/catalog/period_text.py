"""The summaries of day and week nodes, by extraction from the video roots below them.

Deterministic: the same videos give the same text, whatever built them (a model build and a
caption import alike; no model is called). A day lists its videos in recording order, each with
its local start and end, id, title and the first sentences of its root's description; a week lists
its days with their videos' titles.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memtools.store.catalog.time_rows import VideoTime

ROOT_CHARS = 220   # of each video's description in a day's summary
DAY_VIDEOS = 40    # videos a day's summary names (the rest are counted)
WEEK_TITLES = 4    # titles per day in a week's summary


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit]
    sentence = max(cut.rfind(". "), cut.rfind("! "), cut.rfind("? "))
    if sentence > limit // 2:
        return cut[:sentence + 1]
    return cut[:cut.rfind(" ")].rstrip(",;:") + " ..." if " " in cut else cut + "..."


def _span(seconds: float) -> str:
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min" if minutes else f"{round(seconds)} s"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def _offset(start: datetime) -> str:
    text = start.strftime("%z")
    return f"{text[:3]}:{text[3:]}" if text else ""


def day_summary(day_id: str, rows: Sequence[VideoTime]) -> str:
    """``rows``: the day's videos in recording order."""
    day = date.fromisoformat(day_id.split("/", 1)[1])
    starts = [datetime.fromisoformat(r.recorded_at) for r in rows]
    ends = [s + timedelta(seconds=r.duration) for s, r in zip(starts, rows, strict=True)]
    zones = sorted({_offset(s) for s in starts})
    total = sum(r.duration for r in rows)
    head = (f"{day.strftime('%A')} {day.isoformat()}: {len(rows)} video{'s' if len(rows) != 1 else ''} recorded "
            f"from {starts[0]:%H:%M} to {max(ends):%H:%M} ({', '.join(zones)}), {_span(total)} in all.")
    lines = [head]
    for start, end, row in list(zip(starts, ends, rows, strict=True))[:DAY_VIDEOS]:
        title = f' "{row.title}"' if row.title and row.title != row.video_id else ""
        about = _clip(row.root, ROOT_CHARS)
        lines.append(f"- {start:%H:%M}-{end:%H:%M} {row.video_id}{title}{': ' + about if about else ''}")
    if len(rows) > DAY_VIDEOS:
        lines.append(f"- ... and {len(rows) - DAY_VIDEOS} more videos (list_videos with recorded_from/recorded_to)")
    return "\n".join(lines)


def week_summary(week_id: str, rows: Sequence[VideoTime]) -> str:
    """``rows``: the week's videos in recording order."""
    m = re.fullmatch(r"week/(\d{4})-W(\d{2})", week_id)
    monday = date.fromisocalendar(int(m[1]), int(m[2]), 1) if m else None
    by_day: dict[str, list[VideoTime]] = defaultdict(list)
    for row in rows:
        by_day[row.day].append(row)
    span = f" ({monday.isoformat()} to {(monday + timedelta(days=6)).isoformat()})" if monday else ""
    lines = [f"Week {week_id.split('/', 1)[1]}{span}: {len(rows)} video{'s' if len(rows) != 1 else ''} on "
             f"{len(by_day)} day{'s' if len(by_day) != 1 else ''}, {_span(sum(r.duration for r in rows))} in all."]
    for day in sorted(by_day):
        videos = by_day[day]
        names = [v.title or v.video_id for v in videos[:WEEK_TITLES]]
        more = f", ... (+{len(videos) - WEEK_TITLES})" if len(videos) > WEEK_TITLES else ""
        weekday = date.fromisoformat(day.split("/", 1)[1]).strftime("%a")
        lines.append(f"- {day} ({weekday}): {len(videos)} video{'s' if len(videos) != 1 else ''}: "
                     f"{'; '.join(names)}{more}")
    return "\n".join(lines)
