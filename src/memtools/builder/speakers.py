"""The speaker stage of a build: each utterance's voice vector, clustered into ``S1``, ``S2``, ... per video.

    transcript, voices = await label_speakers(encoder, source, transcript, checkpoints)

Runs after the speech stage when the build is asked for speakers (``--speakers``). The audio
is decoded once more, streaming; each utterance without a speaker is cut from it and embedded
(``memtools.speech.voice``), then the vectors are clustered (``memtools.speech.speakers``).
The labels and the voices' centroids are checkpointed as ``speakers/done`` so a resumed build
does not embed again. A transcript that names any speaker (subtitles' ``NAME:``, a diarising
server) is trusted as it is: voice labels are not mixed with names. A video without audio is left as it is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from memtools.builder.checkpoint import Checkpoints
from memtools.speech.base import Utterance
from memtools.speech.speakers import THRESHOLD, Voice, assign_speakers
from memtools.video.audio import SAMPLE_RATE, AudioChunk, has_audio, iter_audio

STAGE = "speakers/done"


class Embedder(Protocol):
    name: str

    def embed(self, clips: Sequence[np.ndarray]) -> np.ndarray: ...


def cut_utterances(chunks: Iterable[AudioChunk], utterances: Sequence[Utterance]) -> list[np.ndarray]:
    """Each utterance's samples from a stream of consecutive chunks, holding only what is still needed."""
    out: list[np.ndarray] = [np.zeros(0, np.float32)] * len(utterances)
    order = sorted(range(len(utterances)), key=lambda n: utterances[n].t_end)
    pending = 0
    held: list[AudioChunk] = []
    for chunk in chunks:
        held.append(chunk)
        end = chunk.t_end
        while pending < len(order) and utterances[order[pending]].t_end <= end + 1e-6:
            out[order[pending]] = _cut(held, utterances[order[pending]])
            pending += 1
        earliest = min((utterances[n].t_start for n in order[pending:]), default=end)
        held = [c for c in held if c.t_end > earliest]
    for n in order[pending:]:  # past the end of the audio: whatever there was
        out[n] = _cut(held, utterances[n])
    return out


def _cut(held: Sequence[AudioChunk], u: Utterance) -> np.ndarray:
    parts = []
    for c in held:
        a = max(0, int(round((u.t_start - c.t_start) * SAMPLE_RATE)))
        b = min(len(c.samples), int(round((u.t_end - c.t_start) * SAMPLE_RATE)))
        if b > a:
            parts.append(c.samples[a:b])
    return np.concatenate(parts).astype(np.float32) if parts else np.zeros(0, np.float32)


def _labelled(utterances: Sequence[Utterance], saved: dict) -> tuple[list[Utterance], list[Voice]] | None:
    labels = saved.get("labels")
    if not isinstance(labels, list) or len(labels) != len(utterances):
        return None  # the transcript changed since: label again
    out = [u.model_copy(update={"speaker": s}) if s and not u.speaker else u
           for u, s in zip(utterances, labels, strict=True)]
    return out, [Voice.model_validate(v) for v in saved.get("voices", [])]


def embed_and_cluster(encoder: Embedder, source: Path, utterances: Sequence[Utterance],
                      threshold: float = THRESHOLD) -> tuple[list[Utterance], list[Voice]]:
    """Blocking: decode, embed the unlabelled utterances, cluster."""
    todo = [n for n, u in enumerate(utterances) if not u.speaker]
    if not todo:
        return list(utterances), []
    clips = cut_utterances(iter_audio(source), [utterances[n] for n in todo])
    keep = [i for i, c in enumerate(clips) if len(c) >= SAMPLE_RATE // 4]  # under 1/4 s says nothing of a voice
    if not keep:
        return list(utterances), []
    vectors = encoder.embed([clips[i] for i in keep])
    chosen = [utterances[todo[i]] for i in keep]
    labelled, voices = assign_speakers(chosen, vectors, threshold)
    out = list(utterances)
    for i, u in zip(keep, labelled, strict=True):
        out[todo[i]] = u
    return out, voices


async def label_speakers(encoder: Embedder, source: Path, utterances: Sequence[Utterance], checkpoints: Checkpoints,
                         threshold: float = THRESHOLD) -> tuple[list[Utterance], list[Voice]]:
    """The transcript with speakers (and the voices), from the checkpoint when this stage ran before."""
    saved = checkpoints.load(STAGE)
    if isinstance(saved, dict) and saved.get("encoder") == encoder.name:
        found = _labelled(utterances, saved)
        if found is not None:
            return found
    if not utterances or any(u.speaker for u in utterances) or not await asyncio.to_thread(has_audio, source):
        return list(utterances), []
    out, voices = await asyncio.to_thread(embed_and_cluster, encoder, source, utterances, threshold)
    checkpoints.save(STAGE, {"encoder": encoder.name, "labels": [u.speaker for u in out],
                             "voices": [v.model_dump(mode="json") for v in voices]})
    return out, voices
