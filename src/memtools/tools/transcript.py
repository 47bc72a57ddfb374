"""``get_transcript``: what was said in a time window, one utterance a line, bounded.

A mixin of ``MemoryTools`` (``tools/core.py``); it uses the core's argument helpers. When
the window holds more than one page, the result ends with the exact call that gets the rest.
"""

from __future__ import annotations

from collections import defaultdict

from pydantic import BaseModel

from memtools.schema import Speech
from memtools.tools.host import ToolsHost
from memtools.tools.results import _Result
from memtools.tools.text import clip, hms, span

TRANSCRIPT_LINES = 40  # utterances per page
TRANSCRIPT_CHARS = 6000  # and about this many characters (~1.5K tokens)
NO_SPEECH = ("No speech in {window} of video {video_id!r}{as_of}. The video may have no speech there, or was "
             "built without speech recognition; search_by_time shows what happens in the window")
NO_SPEAKER = ("No speech by {speaker!r} in {window} of video {video_id!r}{as_of}. Speakers are named as the "
              "transcript shows them (voice labels S1, S2, ... or names from subtitles): call get_transcript "
              "without speaker to see who speaks there")


class Line(BaseModel):
    id: str
    t_start: float
    t_end: float
    text: str
    speaker: str | None = None


class Transcript(_Result):
    video_id: str
    start_sec: float
    end_sec: float
    lines: list[Line]
    next_start_sec: float | None = None  # where the next page starts, when the window holds more
    as_of_sec: float | None = None
    speaker: str | None = None  # only this speaker's lines were asked for

    def render(self) -> str:
        window = span(self.start_sec, self.end_sec)
        as_of = f" as of {hms(self.as_of_sec)}" if self.as_of_sec is not None else ""
        head = f"Transcript of {self.video_id} {window}{as_of}" + (f", {self.speaker} only" if self.speaker else "")
        if not self.lines:
            empty = NO_SPEAKER if self.speaker else NO_SPEECH
            return empty.format(window=window, video_id=self.video_id, as_of=as_of, speaker=self.speaker) + "."
        speakers = sorted({u.speaker for u in self.lines if u.speaker})
        out = [f"{head}: {len(self.lines)} utterance(s)" + (f" by {', '.join(speakers)}" if speakers else "")]
        for u in self.lines:
            who = f" {u.speaker}:" if u.speaker else ""
            out.append(f"- {span(u.t_start, u.t_end)}{who} {clip(u.text, 400)} ({u.id.split('/', 1)[-1]})")
        if self.next_start_sec is not None:
            more = (f", as_of_sec={self.as_of_sec:g}" if self.as_of_sec is not None else "") + (
                f", speaker={self.speaker!r}" if self.speaker else "")
            out.append(f"More speech follows. Next page: get_transcript(video_id='{self.video_id}', "
                       f"start_sec={self.next_start_sec:g}, end_sec={self.end_sec:g}{more}).")
        else:
            out.append("Next: get_subgraph(macro_id=...) for what happens while it is said.")
        return "\n".join(out)


class TranscriptTools(ToolsHost):
    """``get_transcript``; mixed into ``MemoryTools``."""

    def _said(self, video_id: str, start: float, end: float, as_of: float | None) -> dict[str, list[Speech]]:
        """Utterances overlapping the window, by macro event."""
        by_macro: dict[str, list[Speech]] = defaultdict(list)
        with self._reading() as g:
            for u in g.speech(video_id, start, end, as_of=as_of):
                by_macro[u.macro_id].append(u)
        return by_macro

    def get_transcript(self, video_id: str | None, start_sec: float, end_sec: float,
                       as_of_sec: float | None = None, speaker: str | None = None) -> Transcript:
        """What was said between ``start_sec`` and ``end_sec`` (utterances overlapping the window), bounded;
        only ``speaker``'s lines (a voice label such as ``S2`` or a subtitle's name, any case) when given."""
        vid, as_of = self._time_window(start_sec, end_sec, video_id, as_of_sec)
        speaker = (speaker or "").strip() or None
        with self._reading() as g:
            found = g.speech(vid, start_sec, end_sec, as_of=as_of, limit=TRANSCRIPT_LINES + 1, speaker=speaker)
        # a page continues at the next utterance's start (the store keeps utterances that end after it)
        lines: list[Line] = []
        used = 0
        next_start = None
        for n, u in enumerate(found):
            cost = len(u.text) + 40
            if n >= TRANSCRIPT_LINES or (lines and used + cost > TRANSCRIPT_CHARS):
                next_start = u.t_start
                break
            used += cost
            lines.append(Line(id=u.id, t_start=u.t_start, t_end=u.t_end, text=u.text, speaker=u.speaker))
        if next_start is not None and next_start <= start_sec:  # never hand out a page that cannot advance
            next_start = max(start_sec, lines[-1].t_start) + 0.001 if lines else None
        return Transcript(video_id=vid, start_sec=start_sec, end_sec=end_sec, lines=lines,
                          next_start_sec=next_start, as_of_sec=as_of, speaker=speaker)
