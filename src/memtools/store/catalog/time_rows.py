"""One video's row of the time index (``store.video_times``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from memtools.wallclock import WallClockError, day_of, iso, start_of, week_of


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
        """The row of a video (None: it has no recording start). Writes refuse starts the store cannot
        hold before they begin (``memtools.wallclock.check_span``); should one still arrive here, it is a
        ``WallClockError`` naming the video, never an ``OverflowError`` from date arithmetic."""
        start = start_of(recorded_at)
        if start is None:
            return None
        try:
            end = start + timedelta(seconds=max(float(duration), 0.0))
            return cls(video_id, iso(start), utc(start), utc(end), day_of(start), week_of(start), title,
                       float(duration), root)
        except (OverflowError, ValueError):  # past the year 9999 or before 1, or a NaN duration
            raise WallClockError(f"video {video_id!r}: its recording start {recorded_at!r} plus its {duration!r} s "
                                 "falls outside the dates a memory can hold (0001-01-02 to 9998-12-31, UTC): "
                                 "write the video again with a recording time in that range") from None

    def row(self) -> tuple:
        return (self.video_id, self.recorded_at, self.utc_start, self.utc_end, self.day, self.week, self.title,
                self.duration, self.root)
