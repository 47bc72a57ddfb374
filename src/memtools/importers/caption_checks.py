"""What an import changed in its input, said out loud.

Caption files written by people and scripts hold negative times, cues that end before they
start, captions past the video's end, empty sentences, sentences that are numbers or lists and,
from Python's ``json.dump``, non-finite numbers. An import never changes such data silently:
``clean_captions`` applies the few repairs that keep a caption usable (each counted, with the
first examples naming file, video and caption index) and rejects what cannot be repaired (a NaN,
infinite or absurd time; the readers reject values of the wrong type). A video left with no
caption is not imported (counted too). The CLI prints ``ImportNotes.render()`` in the import summary.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from memtools.errors import ImportFormatError
from memtools.schema import EntityType

EXAMPLES = 3

# The kinds of note, worded for the summary (a count goes in front).
NEGATIVE_START = "caption(s) started before 0: start set to 0"
END_BEFORE_START = "caption(s) ended before they started: made zero-length at their start"
PAST_DURATION = "video(s) had captions past their duration: duration extended to the last caption's end"
BAD_DURATION = ("video(s) had a duration that is not a usable number (negative, NaN, infinite, over "
                "10,000,000 s or not a number): taken from the captions")
EMPTY = "empty caption(s) dropped (blank, or only zero-width or control characters)"
NON_FINITE = "caption(s) rejected: a NaN or infinite time (not imported)"
ABSURD_TIME = ("caption(s) rejected: a time beyond 10,000,000 s or far past the video's duration "
               "(not imported)")
NOT_TEXT = "caption(s) rejected: the sentence is not text (not imported)"
BAD_TIMES = "caption(s) rejected: the timestamp is not [start, end] in numbers (not imported)"
TITLE_NOT_TEXT = "video(s) had a title that is not text: the video id is the title"
BAD_ID = "video(s) refused: the id is not a valid video id (not imported; ids are never rewritten)"
NO_CAPTIONS = "video(s) had no usable caption left: not imported"
RENAMED = "subtitle file name(s) are not valid video ids: the id was made from the name (or pass --video-id)"
DECODED = "subtitle file(s) were not UTF-8: decoded as"

LAYOUT_HELP = "each entry needs duration, timestamps [[start, end], ...] and sentences [...]"
MAX_SECONDS = 1e7
"""No caption time may pass this (about 115 days): larger numbers are typing or unit errors."""
PAST_END_SLACK = (30.0, 0.1)
"""A caption may end past the video's given duration by up to max(30 s, 10 % of it): the duration is
then extended (and noted). A caption ending later than that is rejected."""

_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")


def visible(text: str) -> str:
    """``text`` without whitespace, zero-width, direction and control characters at its ends, or
    ``""`` when nothing else is in it: what decides whether a caption is empty."""
    if not _INVISIBLE.sub("", text).strip():
        return ""
    if all(unicodedata.category(c)[0] in "CZ" for c in text):  # control, format, separators only
        return ""
    return text.strip()


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
        """Captions and videos left out (not repaired)."""
        return sum(self.counts[k] for k in (NON_FINITE, ABSURD_TIME, NOT_TEXT, BAD_TIMES, BAD_ID, NO_CAPTIONS))

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
    n: int = 0  # its place in the source (1-based) when readers left some out; 0: its place in the list
    voice: str | None = None  # a subtitle cue's WebVTT voice (``<v Roger Bingham>``), when it names one


@dataclass(frozen=True)
class CaptionedVideo:
    """One video's captions, plus optional entities known for the whole video (e.g. objects, scene).
    ``spoken``: the captions are what was said (subtitles), so each is also a Speech node of the transcript."""

    video_id: str
    captions: Sequence[Caption]
    duration: float = 0.0
    title: str = ""
    entities: Sequence[tuple[str, EntityType]] = ()
    recorded_at: str | None = None  # recording start, ISO 8601 with offset (memtools.wallclock)
    spoken: bool = False


def clean_captions(video: CaptionedVideo, source: str, notes: ImportNotes) -> CaptionedVideo:
    """The video with every caption usable, each change noted (``source`` names the file)."""
    duration = video.duration
    if not (math.isfinite(duration) and 0 <= duration <= MAX_SECONDS):
        notes.add(BAD_DURATION, f"{source}, video {video.video_id}: {duration!r}")
        duration = 0.0
    latest = duration + max(PAST_END_SLACK[0], PAST_END_SLACK[1] * duration) if duration else MAX_SECONDS
    kept: list[Caption] = []
    for position, c in enumerate(video.captions, 1):
        where = f"{source}, video {video.video_id}, caption {c.n or position}"
        if not (math.isfinite(c.start) and math.isfinite(c.end)):
            notes.add(NON_FINITE, where)
            continue
        if max(abs(c.start), abs(c.end)) > MAX_SECONDS or max(c.start, c.end) > latest:
            notes.add(ABSURD_TIME, f"{where}: {c.start:g}-{c.end:g} s"
                                   + (f" in a {duration:g} s video" if duration else ""))
            continue
        text = visible(c.text)
        if not text:
            notes.add(EMPTY, where)
            continue
        start, end = c.start, c.end
        if start < 0:
            notes.add(NEGATIVE_START, where)
            start, end = 0.0, max(end, 0.0)
        if end < start:
            notes.add(END_BEFORE_START, where)
            end = start
        kept.append(Caption(start, end, text, c.n, c.voice))
    last = max((c.end for c in kept), default=0.0)
    if duration and last > duration:
        notes.add(PAST_DURATION, f"{source}, video {video.video_id}: {duration:g} s -> {last:g} s")
        duration = last
    return replace(video, captions=kept, duration=duration)


# --- one video of a dense-caption file -----------------------------------------------------


def dense_video(path: Path, key: str, entry: Any, notes: ImportNotes) -> CaptionedVideo:
    """One video of a dense-caption file as parsed, its values type-checked: a sentence that is not
    text or a timestamp that is not two numbers is left out (noted with its index), never converted."""
    def malformed(why: str) -> ImportFormatError:
        return ImportFormatError(f"{path}: video {key!r} is malformed ({why}); {LAYOUT_HELP}")

    if not isinstance(entry, dict):
        raise malformed(f"it is {_kind(entry)}, not an object")
    missing = [k for k in ("timestamps", "sentences") if k not in entry]
    if missing:
        raise malformed(f"no {' or '.join(missing)}")
    stamps, sentences = entry["timestamps"], entry["sentences"]
    for name, value in (("timestamps", stamps), ("sentences", sentences)):
        if not isinstance(value, list):
            raise malformed(f"{name} is {_kind(value)}, not a list")
    if len(stamps) != len(sentences):
        raise malformed(f"{len(stamps)} timestamps but {len(sentences)} sentences")
    captions = []
    for n, (stamp, sentence) in enumerate(zip(stamps, sentences, strict=True), 1):
        where = f"{path}, video {key}, caption {n}"
        if not isinstance(sentence, str):
            notes.add(NOT_TEXT, f"{where}: {_kind(sentence)}")
        elif not (isinstance(stamp, list) and len(stamp) == 2 and all(_is_number(t) for t in stamp)):
            notes.add(BAD_TIMES, f"{where}: {_short(stamp)}")
        else:
            captions.append(Caption(float(stamp[0]), float(stamp[1]), sentence, n))
    duration = entry.get("duration")
    if duration is None:
        duration = 0.0
    elif not _is_number(duration):
        notes.add(BAD_DURATION, f"{path}, video {key}: {_short(duration)}")
        duration = 0.0
    title = entry.get("title")
    if title is not None and not isinstance(title, str):
        notes.add(TITLE_NOT_TEXT, f"{path}, video {key}: {_kind(title)}")
        title = None
    return CaptionedVideo(video_id=key, captions=captions, duration=float(duration), title=(title or "").strip() or key,
                          recorded_at=_recorded_at(entry.get("recorded_at"), f"{path}, video {key}", float(duration)))


def _recorded_at(value: Any, where: str, duration: float) -> str | None:
    """A dense-caption entry's ``"recorded_at"`` (ISO 8601; one without a zone is refused: the
    ``--timezone`` flag is for file names), as stored; refused here, while the file is read, when the
    store cannot hold it with the entry's ``duration`` (a duration ``clean_captions`` will replace
    counts as 0 s; the write checks the final one again)."""
    if value is None:
        return None
    from memtools.wallclock import WallClockError, check_span, iso, parse_time

    if not isinstance(value, str) or not re.search(r"(Z|[+-]\d{2}:?\d{2})$", value.strip()):
        raise ImportFormatError(f"{where}: \"recorded_at\" must be an ISO 8601 time with its zone, e.g. "
                                f"\"2026-11-20T14:03:00+01:00\"; it is {_short(value)}")
    usable = duration if math.isfinite(duration) and 0 <= duration <= MAX_SECONDS else 0.0
    try:
        start = parse_time(value)
    except WallClockError as exc:
        raise ImportFormatError(f"{where}: \"recorded_at\": {exc}") from None
    try:
        return iso(check_span(start, usable, f"\"recorded_at\" {value!r}"))
    except WallClockError as exc:
        raise ImportFormatError(f"{where}: {exc}") from None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool)


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return f"a list {_short(value)}"
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    return f"text {_short(value)}" if isinstance(value, str) else f"the number {value:g}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
