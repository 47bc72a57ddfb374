"""The speech stage of a build: the video's audio -> time-stamped utterances, chunk by chunk.

    transcript = await transcribe(recognizer, Path("talk.mp4"), checkpoints)

The audio is decoded once, streaming, in chunks of ``CHUNK_SEC`` seconds; each chunk's
utterances are checkpointed as ``speech/chunk_0003`` before the next chunk is recognised, so
a build killed during recognition resumes without recognising a finished chunk again
(decoding is cheap; recognition is not). A recogniser that needs no audio (subtitles) gets
one stretch spanning the whole video. A video without an audio track has no speech.

The utterances then reach the prompts (``transcript_for``: those of a window or a macro
event) and the memory (``speech_nodes``: Speech nodes of one macro event, each utterance in
the macro event its middle falls in).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from memtools.builder.checkpoint import Checkpoints
from memtools.speech.base import Recognizer, Utterance
from memtools.video.audio import AudioChunk, has_audio, iter_audio

CHUNK_SEC = 30.0
STAGE = "speech"


def _name(index: int) -> str:
    return f"{STAGE}/chunk_{index:04d}"


async def transcribe(recognizer: Recognizer, source: Path, checkpoints: Checkpoints, *,
                     chunk_sec: float = CHUNK_SEC,
                     on_chunk: Callable[[int, bool], None] | None = None) -> list[Utterance]:
    """Every utterance of the video in time order; ``on_chunk(index, reused)`` after each chunk."""
    if not recognizer.needs_audio:
        chunks = [AudioChunk(t_start=0.0, samples=np.empty(0, np.float32), span=math.inf)]
        return await _recognise_all(recognizer, iter(chunks), checkpoints, on_chunk)
    if not await asyncio.to_thread(has_audio, source):
        return []
    done = _finished(checkpoints)
    if done is not None:  # every chunk is checkpointed: no need to decode at all
        return done
    return await _recognise_all(recognizer, iter_audio(source, chunk_sec=chunk_sec), checkpoints, on_chunk)


def _finished(checkpoints: Checkpoints) -> list[Utterance] | None:
    """All utterances when the stage finished before (``speech/done`` saved), else None."""
    done = checkpoints.load(f"{STAGE}/done")
    if done is None:
        return None
    found: list[Utterance] = []
    for index in range(int(done.get("chunks", 0))):
        cached = checkpoints.load(_name(index))
        if cached is None:
            return None
        found += [Utterance.model_validate(u) for u in cached]
    return found


async def _recognise_all(recognizer: Recognizer, chunks, checkpoints: Checkpoints,
                         on_chunk: Callable[[int, bool], None] | None) -> list[Utterance]:
    found: list[Utterance] = []
    index = 0
    iterator = iter(chunks)
    while True:
        chunk = await asyncio.to_thread(next, iterator, None)  # decoding runs off the event loop
        if chunk is None:
            break
        cached = checkpoints.load(_name(index))
        if cached is None:
            utterances = await asyncio.to_thread(recognizer.recognize, chunk)
            checkpoints.save(_name(index), [u.model_dump(mode="json") for u in utterances])
        else:
            utterances = [Utterance.model_validate(u) for u in cached]
        found += utterances
        if on_chunk is not None:
            on_chunk(index, cached is not None)
        index += 1
    checkpoints.save(f"{STAGE}/done", {"chunks": index})
    return sorted(found, key=lambda u: (u.t_start, u.t_end))


def overlapping(utterances: Sequence[Utterance], start: float, end: float) -> list[Utterance]:
    """The utterances that overlap ``[start, end)``."""
    return [u for u in utterances if u.t_end > start and u.t_start < end]


def owned_by(utterances: Sequence[Utterance], start: float, end: float, *, last: bool) -> list[Utterance]:
    """The utterances whose middle falls in ``[start, end)`` (the last macro event takes the rest)."""
    def mid(u: Utterance) -> float:
        return (u.t_start + u.t_end) / 2

    return [u for u in utterances if start <= mid(u) and (mid(u) < end or last)]


def window_transcript(utterances: Sequence[Utterance], start: float, end: float) -> str:
    """The segmentation prompt's speech lines for the window ``[start, end)``."""
    from memtools.builder.prompts import speech_lines

    return speech_lines(overlapping(utterances, start, end))


def macro_speech(utterances: Sequence[Utterance], start: float, end: float, duration: float
                 ) -> tuple[list[Utterance], str]:
    """A macro event's utterances and the extraction prompt's speech lines (ids ``u1``, ... on the clip clock)."""
    from memtools.builder.extract import speech_ids
    from memtools.builder.prompts import speech_lines

    own = owned_by(utterances, start, end, last=end >= duration - 1e-3)
    return own, speech_lines(own, origin=start, ids=speech_ids(own), clip_clock=True)
