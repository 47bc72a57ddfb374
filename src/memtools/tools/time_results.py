"""Results of the wall-clock tools (``tools/wallclock_tools.py``): a day or week node's summary, and
the macro events of a wall-clock window across the library. Times print as ISO 8601 with the
recording's own UTC offset."""

from __future__ import annotations

from pydantic import Field

from memtools.tools.results import Summary, TimeMatch, TimeResult
from memtools.tools.text import budgeted, clip, span

UNTIMED_HINT = ("search them by media time with video_id and start_sec/end_sec; list_videos shows which they are")


class PeriodSummary(Summary):
    """``get_summary`` of ``day/YYYY-MM-DD`` or ``week/YYYY-Www``: a ``Summary`` (one output schema for
    the front ends) whose ``video_id`` is the period's id and ``description`` its summary."""

    kind: str  # day | week
    members: list[str]  # video ids (a day) or day ids (a week)
    untimed: int = 0  # videos of the library without a recording time (in no day)

    @property
    def period_id(self) -> str:
        return self.video_id

    @property
    def summary(self) -> str:
        return self.description

    def render(self) -> str:
        lines = [f"{self.kind.title()} node {self.period_id} (summary made from the video summaries below it):",
                 *self.summary.splitlines()]
        lines = budgeted(lines, f"list_videos(recorded_from=..., recorded_to=...) lists the {self.kind}'s videos")
        if self.kind == "day":
            date = self.period_id.split("/", 1)[1]
            lines.append(f"Next: get_summary(video_id='<one of: {', '.join(self.members[:5])}>') for one video, or "
                         f"search_by_time(start_time='{date}T00:00', end_time='{date}T23:59:59') for its episodes "
                         "in clock order.")
        else:
            lines.append(f"Next: get_summary(video_id='{self.members[0]}') for one day.")
        if self.untimed:
            lines.append(f"({self.untimed} video(s) have no recording time and are in no day.)")
        return "\n".join(lines)


class WallMatch(TimeMatch):
    starts_at: str  # ISO 8601, the recording's offset
    ends_at: str


class WallTimeResult(TimeResult):
    """``search_by_time`` over a wall-clock window, across the library (or one video): a ``TimeResult``
    without ``start_sec``/``end_sec``."""

    start: str
    end: str
    matches: list[WallMatch]  # type: ignore[assignment]
    videos: int = 0  # videos recorded in the window
    untimed: int = 0  # videos without a recording time (not searched)
    as_of: str | None = None
    notes: list[str] = Field(default_factory=list)  # e.g. the zone a time without one was read in
    more: int = 0  # matches past the cap

    def render(self) -> str:
        window = f"from {self.start} to {self.end}"
        head = [*self.notes]
        if self.as_of:
            head.append(f"As of {self.as_of}: only what had ended by then.")
        if not self.matches:
            lines = [*head, f"No macro events recorded {window}"
                     + (f" ({self.videos} video(s) overlap it, nothing in them had ended by then)." if self.videos
                        else ". list_videos(recorded_from=..., recorded_to=...) shows which days have videos.")]
        else:
            videos = len({m.video_id for m in self.matches})
            lines = [*head, f"{len(self.matches) + self.more} macro event(s) in {videos} video(s) recorded "
                            f"{window} (clock time first, then the time in the video):"]
            current = ""
            for t in self.matches:
                if t.video_id != current:
                    current = t.video_id
                    lines.append(f"Video {current}:")
                m = t.macro
                end = t.ends_at[11:19] if t.ends_at[:10] == t.starts_at[:10] else t.ends_at
                lines.append(f"- {t.starts_at} to {end} {m.id} {span(m.t_start, m.t_end)} {clip(m.label, 90)}"
                             f" (super {m.super_id}: {clip(m.super_label, 50)})")
            if self.more:
                lines.append(f"… {self.more} more macro event(s); narrow the window.")
            lines = budgeted(lines, "narrow the window")
            lines.append("Next: get_subgraph(macro_id=...) for what happens inside.")
        if self.untimed:
            lines.append(f"({self.untimed} video(s) have no recording time and were not searched: {UNTIMED_HINT}.)")
        return "\n".join(lines)
