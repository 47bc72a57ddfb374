"""Existing subtitles (SRT / WebVTT) as a recogniser: the cues that fall in each chunk.

    recognizer = SubtitleRecognizer("talk.srt")     # read and checked at once

The file is read with the caption importer's reader (``memtools.importers.captions``), so a
bad file fails when the recogniser is made, before a build touches the memory. No audio is
decoded (``needs_audio`` is False): the build asks for the cues of each stretch of time.
Cues keep the speakers they name: a WebVTT voice span (``<v Roger Bingham>``; a cue that
changes voice becomes one utterance per voice), or a line that starts with ``NAME:`` or
``[NAME]`` (bracketed sound notes such as ``[Music]`` or ``[laughs]`` are not names).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from memtools.errors import ImportFormatError
from memtools.importers.captions import read_voiced_subtitles, spoken_line
from memtools.speech.base import Utterance
from memtools.video.audio import AudioChunk


class SubtitleRecognizer:
    """The cues of one subtitle file, handed out per chunk of time (a cue belongs to the chunk
    its start falls in, so none is given twice)."""

    needs_audio = False

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise ImportFormatError(f"no subtitle file at {self.path}; give an .srt or .vtt file")
        raw = self.path.read_bytes()
        self.utterances = sorted((_utterance(*cue) for cue in read_voiced_subtitles(self.path)),
                                 key=lambda u: (u.t_start, u.t_end))
        self.name = f"subtitles:{hashlib.sha256(raw).hexdigest()[:16]}"

    def __repr__(self) -> str:
        return f"SubtitleRecognizer({str(self.path)!r})"

    @property
    def duration(self) -> float:
        return max((u.t_end for u in self.utterances), default=0.0)

    def recognize(self, chunk: AudioChunk) -> list[Utterance]:
        end = chunk.t_start + chunk.duration
        return [u for u in self.utterances if chunk.t_start <= u.t_start < end]


def _utterance(start: float, end: float, text: str, voice: str | None = None) -> Utterance:
    said, speaker = spoken_line(text, voice)  # the caption importer reads a cue's speaker the same way
    return Utterance(t_start=start, t_end=end, text=said, speaker=speaker)
