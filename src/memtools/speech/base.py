"""What every speech recogniser is: audio in, time-stamped utterances out.

    class Recognizer(Protocol):
        name: str            # identifies the model and settings (build checkpoints use it)
        needs_audio: bool    # False for subtitles: the build then decodes no audio
        def recognize(self, chunk: AudioChunk) -> list[Utterance]

Times in an ``Utterance`` are absolute seconds from the start of the video (the chunk's
``t_start`` is added by the recogniser). ``recognize`` blocks; the build runs it on a thread.
``FunctionRecognizer`` is the honest fake for tests: it calls your function and counts calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memtools.video.audio import AudioChunk


class Word(BaseModel):
    model_config = ConfigDict(frozen=True)

    t_start: float = Field(ge=0)
    t_end: float = Field(ge=0)
    text: str
    probability: float | None = None


class Utterance(BaseModel):
    """One stretch of speech: what was said, when, and by whom when the recogniser knows."""

    model_config = ConfigDict(frozen=True)

    t_start: float = Field(ge=0)
    t_end: float = Field(ge=0)
    text: str
    speaker: str | None = None
    words: list[Word] = Field(default_factory=list)

    @model_validator(mode="after")
    def _ordered(self) -> Utterance:
        if self.t_end < self.t_start:
            raise ValueError(f"utterance ends ({self.t_end}) before it starts ({self.t_start})")
        return self


@runtime_checkable
class Recognizer(Protocol):
    name: str
    needs_audio: bool

    def recognize(self, chunk: AudioChunk) -> list[Utterance]: ...


def clean_utterances(items: Sequence[Utterance], chunk: AudioChunk) -> list[Utterance]:
    """Drop empty texts, keep times inside the chunk, order by start."""
    low, high = chunk.t_start, max(chunk.t_start, chunk.t_end)
    out = []
    for u in items:
        text = " ".join(u.text.split())
        if not text:
            continue
        a = min(max(u.t_start, low), high)
        b = min(max(u.t_end, a), high)
        out.append(u.model_copy(update={"text": text, "t_start": round(a, 3), "t_end": round(b, 3)}))
    return sorted(out, key=lambda u: (u.t_start, u.t_end))


class FunctionRecognizer:
    """A recogniser that calls ``function(chunk)``; for tests and custom backends. Counts its calls."""

    needs_audio = True

    def __init__(self, function: Callable[[AudioChunk], Sequence[Utterance]], name: str = "function") -> None:
        self.function = function
        self.name = name
        self.calls = 0

    def recognize(self, chunk: AudioChunk) -> list[Utterance]:
        self.calls += 1
        return clean_utterances(list(self.function(chunk)), chunk)


def render_transcript(utterances: Sequence[Utterance], *, origin: float = 0.0,
                      clock: Callable[[float], str] | None = None, ids: Sequence[str] | None = None) -> str:
    """One line per utterance: ``[start-end] (speaker) text``, times relative to ``origin``."""
    def fmt(t: float) -> str:
        return clock(t - origin) if clock else f"{t - origin:.0f}"

    lines = []
    for n, u in enumerate(utterances):
        who = f" ({u.speaker})" if u.speaker else ""
        tag = f"{ids[n]} " if ids else ""
        lines.append(f"- {tag}[{fmt(u.t_start)}-{fmt(u.t_end)}]{who} {u.text}")
    return "\n".join(lines)
