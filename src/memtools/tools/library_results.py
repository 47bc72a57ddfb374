"""Typed result of ``get_event_chain``: one activity's occurrences across videos and days."""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel, Field

from memtools.tools.results import _Result
from memtools.tools.text import budgeted, clip, span


class ChainItem(BaseModel):
    video_id: str
    recorded_at: str | None = Field(default=None, description="the video's recording start (ISO 8601) when known")
    event_id: str
    action: str
    t_start: float
    t_end: float
    macro_id: str
    place: str = Field(default="", description="the place (LOCATION entity) it happened in")
    place_id: str = Field(default="", description="that place's library entity id")
    score: float = Field(default=1.0, description=(
        "how sure it is an occurrence of what the query names (0-1: 1.0 the same words, else by meaning)"))
    sure: bool = Field(default=True, description="score >= 0.5; an unsure one is worth checking (get_subgraph)")


class EventChain(_Result):
    query: str
    activities: list[str] = Field(description=(
        "the activities (groups of micro-events alike in meaning) the query named"))
    videos: int = Field(description="how many videos the activity happens in")
    days: int | None = Field(default=None, description=(
        "on how many days (recording dates; None when a video has no recording start: count videos)"))
    places: list[str] = Field(default_factory=list, description=(
        "where it happens, the place of the most videos (days) first"))
    chain: list[ChainItem] = Field(description="every occurrence in recording order (wall clock, else library order)")
    day_list: list[str] = Field(default_factory=list, description=(
        "the days counted (recording dates; the video id where a video has no recording start), in order"))
    unsure_days: list[str] = Field(default_factory=list, description=(
        "the counted days whose occurrences are all unsure: check them before trusting the count"))
    doubtful: list[ChainItem] = Field(default_factory=list, description=(
        "near misses, not counted: moments that may be what the query names (the 10 likeliest, recording order)"))
    doubtful_days: list[str] = Field(default_factory=list, description="days only a near miss points to (not counted)")
    note: str = ""

    def render(self) -> str:
        if not self.chain:
            lines = [f"No activity in this library matches {clip(self.query, 80)!r}."]
            if self.doubtful:
                lines.append("Near misses (not counted; check them with get_subgraph):")
                lines += [_line(n, c) for n, c in enumerate(self.doubtful, 1)]
            lines.append("Try the action's words ('putting a book somewhere'), or search_nodes(node_types=['event']).")
            return "\n".join(lines)
        days = f" on {self.days} day(s)" if self.days is not None else ""
        first, last = self.chain[0], self.chain[-1]
        lines = [f"Activity {', '.join(repr(clip(a, 60)) for a in self.activities[:4])}"
                 f"{' and more' if len(self.activities) > 4 else ''}: {len(self.chain)} time(s) in "
                 f"{self.videos} video(s){days}; first {first.video_id} {span(first.t_start, first.t_end)}, "
                 f"last {last.video_id} {span(last.t_start, last.t_end)}"]
        if self.day_list:
            lines.append("Days: " + ", ".join(self.day_list[:40]) + (" ..." if len(self.day_list) > 40 else ""))
        if self.unsure_days:
            lines.append(f"Unsure (counted, worth checking): {', '.join(self.unsure_days[:20])}")
        if self.doubtful_days:
            lines.append(f"Maybe also (near misses, not counted): {', '.join(self.doubtful_days[:20])}")
        counts = Counter(p for _, p in dict.fromkeys((c.video_id, c.place) for c in self.chain if c.place))
        if counts:
            lines.append("Where (videos): " + ", ".join(f"{clip(p, 40)} ({n})" for p, n in counts.most_common(6)))
        if self.note:
            lines.append(self.note)
        lines += [_line(n, c) for n, c in enumerate(self.chain, 1)]
        if self.doubtful:
            lines.append("Near misses (not counted):")
            lines += [_line(n, c) for n, c in enumerate(self.doubtful, 1)]
        lines = budgeted(lines, "pass video_id for one video's occurrences")
        lines.append("Next: get_subgraph(macro_id=...) for an occurrence's episode, or "
                     "get_entity_timeline(name=...) for a thing or place across days.")
        return "\n".join(lines)


def _line(n: int, c: ChainItem) -> str:
    clock = f" (recorded {c.recorded_at})" if c.recorded_at else ""
    where = f" in {clip(c.place, 40)}" if c.place else ""
    how = "" if c.score >= 1.0 else f" [match {c.score:.2f}{'' if c.sure else ', unsure'}]"
    return f"{n}. {c.video_id}{clock} {span(c.t_start, c.t_end)}{where}: {clip(c.action, 90)} ({c.event_id}){how}"
