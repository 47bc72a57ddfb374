"""One video's row of the time index (``store.video_times``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from memtools.wallclock import day_of, iso, start_of, week_of


def utc(value: datetime) -> str:
    """An instant as the index compares them: ISO 8601 in UTC, to the second."""
    return value.astimezone(timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class VideoTime:
    """One row of ``video_times``."""

    video_id: str
    recorded_at: str
    utc_start: str
    utc_end: str
    day: str
    week: str
    title: str
    duration: float
    root: str

    @classmethod
    def of(cls, video_id: str, recorded_at: str | None, title: str, duration: float, root: str) -> VideoTime | None:
        start = start_of(recorded_at)
        if start is None:
            return None
        end = start + timedelta(seconds=max(float(duration), 0.0))
        return cls(video_id, iso(start), utc(start), utc(end), day_of(start), week_of(start), title,
                   float(duration), root)

    def row(self) -> tuple:
        return (self.video_id, self.recorded_at, self.utc_start, self.utc_end, self.day, self.week, self.title,
                self.duration, self.root)
