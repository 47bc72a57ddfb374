"""What an import changed in its input, said out loud.

Caption files written by people and scripts hold negative times, cues that end before they
start, captions past the video's end, empty sentences and, from Python's ``json.dump``,
non-finite numbers. An import never changes such data silently: ``clean_captions`` applies the
few repairs that keep a caption usable (each counted, with the first examples naming file,
video and caption index) and rejects what cannot be repaired (a NaN or infinite time). The
CLI prints ``ImportNotes.render()`` in the import summary.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from memtools.schema import EntityType

EXAMPLES = 3

# The kinds of note, worded for the summary (a count goes in front).
NEGATIVE_START = "caption(s) started before 0: start set to 0"
END_BEFORE_START = "caption(s) ended before they started: made zero-length at their start"
PAST_DURATION = "video(s) had captions past their duration: duration extended to the last caption's end"
BAD_DURATION = "video(s) had a negative, NaN or infinite duration: taken from the captions"
EMPTY = "empty caption(s) dropped"
NON_FINITE = "caption(s) rejected: a NaN or infinite time (not imported)"
DECODED = "subtitle file(s) were not UTF-8: decoded as"


@dataclass
class ImportNotes:
    """Counts and first examples of every repair and rejection of one import."""

    counts: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    def add(self, kind: str, where: str) -> None:
        self.counts[kind] += 1
        if len(self.examples[kind]) < EXAMPLES:
            self.examples[kind].append(where)

    @property
    def rejected(self) -> int:
        return self.counts[NON_FINITE]

    def __bool__(self) -> bool:
        return bool(+self.counts)

    def render(self) -> list[str]:
        """One line per kind: the count, what was done, the first examples."""
        lines = []
        for kind, n in self.counts.items():
            shown = "; ".join(self.examples[kind])
            more = ", ..." if n > len(self.examples[kind]) else ""
            lines.append(f"  {n} {kind} ({shown}{more})")
        return lines


@dataclass(frozen=True)
class Caption:
    start: float
    end: float
    text: str


@dataclass(frozen=True)
class CaptionedVideo:
    """One video's captions, plus optional entities known for the whole video (e.g. objects, scene)."""

    video_id: str
    captions: Sequence[Caption]
    duration: float = 0.0
    title: str = ""
    entities: Sequence[tuple[str, EntityType]] = ()


def clean_captions(video: CaptionedVideo, source: str, notes: ImportNotes) -> CaptionedVideo:
    """The video with every caption usable, each change noted (``source`` names the file)."""
    kept: list[Caption] = []
    for n, c in enumerate(video.captions, 1):
        where = f"{source}, video {video.video_id}, caption {n}"
        if not (math.isfinite(c.start) and math.isfinite(c.end)):
            notes.add(NON_FINITE, where)
            continue
        if not c.text.strip():
            notes.add(EMPTY, where)
            continue
        start, end = c.start, c.end
        if start < 0:
            notes.add(NEGATIVE_START, where)
            start, end = 0.0, max(end, 0.0)
        if end < start:
            notes.add(END_BEFORE_START, where)
            end = start
        kept.append(Caption(start, end, c.text.strip()))
    duration = video.duration
    if not (math.isfinite(duration) and duration >= 0):
        notes.add(BAD_DURATION, f"{source}, video {video.video_id}")
        duration = 0.0
    last = max((c.end for c in kept), default=0.0)
    if duration and last > duration:
        notes.add(PAST_DURATION, f"{source}, video {video.video_id}: {duration:g} s -> {last:g} s")
        duration = last
    return replace(video, captions=kept, duration=duration)
