"""Speech recognition over any OpenAI-compatible ``POST {base_url}/audio/transcriptions``.

Works with OpenAI (``whisper-1``), vLLM, the whisper.cpp server and faster-whisper servers
(speaches, faster-whisper-server). Each chunk is sent as a 16 kHz mono WAV file with
``response_format=verbose_json``; the answer's ``segments`` become utterances (a plain
``text`` answer becomes one utterance spanning the chunk). Failures are retried exactly like
the vision client's (``memtools.perception.openai.send_with_retries``).

Speakers: a segment's ``speaker`` is kept. ``diarize=True`` asks an OpenAI-compatible diarising
model (``gpt-4o-transcribe-diarize``) for ``response_format=diarized_json`` with
``chunking_strategy=auto``; WhisperX / pyannote servers that add ``speaker`` to verbose_json
segments need nothing more. Such labels ("A", "SPEAKER_00") are the server's, per request:
memtools sends 30-second chunks, so the same label in two chunks need not be the same voice.
"""

from __future__ import annotations

import asyncio
import io
import os
import random
import wave
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import numpy as np

from memtools.errors import SpeechError
from memtools.perception.base import check_model_requests_allowed, run_sync
from memtools.perception.openai import DEFAULT_BASE_URL, RetryPolicy, send_with_retries
from memtools.speech.base import Utterance, Word, clean_utterances
from memtools.video.audio import AudioChunk


def wav_bytes(chunk: AudioChunk) -> bytes:
    """The chunk as a 16-bit PCM WAV file."""
    pcm = (np.clip(chunk.samples, -1.0, 1.0) * 32767).astype("<i2").tobytes()
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(chunk.sample_rate)
        w.writeframes(pcm)
    return out.getvalue()


class OpenAIRecognizer:
    """An OpenAI-compatible transcription endpoint; ``transport`` replaces the network in tests."""

    needs_audio = True

    def __init__(self, model: str = "whisper-1", *, base_url: str = DEFAULT_BASE_URL, api_key: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", language: str | None = None, timeout: float = 300.0,
                 retry: RetryPolicy | None = None, transport: httpx.AsyncBaseTransport | None = None,
                 diarize: bool = False,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/audio/transcriptions"
        self.language, self.timeout = language, timeout
        self.retry = retry or RetryPolicy()
        self.api_key_env = api_key_env
        key = api_key if api_key is not None else os.environ.get(api_key_env)
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._transport, self._sleep = transport, sleep
        self.diarize = diarize
        self.name = f"openai:{model}" + (":diarized" if diarize else "")

    def __repr__(self) -> str:
        return f"OpenAIRecognizer(model={self.model!r}, base_url={self.base_url!r})"

    def recognize(self, chunk: AudioChunk) -> list[Utterance]:
        return run_sync(lambda: self.arecognize(chunk))

    async def arecognize(self, chunk: AudioChunk) -> list[Utterance]:
        if len(chunk.samples) == 0:
            return []
        if self._transport is None:
            check_model_requests_allowed(f"{self.model} at {self.url}")
        data = {"model": self.model, "response_format": "verbose_json", "timestamp_granularities[]": "segment"}
        if self.diarize:
            data = {"model": self.model, "response_format": "diarized_json", "chunking_strategy": "auto"}
        if self.language:
            data["language"] = self.language
        files = {"file": ("audio.wav", wav_bytes(chunk), "audio/wav")}
        async with httpx.AsyncClient(transport=self._transport, timeout=self.timeout) as client:
            response = await send_with_retries(
                lambda: client.post(self.url, data=data, files=files, headers=self._headers), policy=self.retry,
                what=f"{self.model} at {self.url}", timeout=self.timeout, error=SpeechError, hint=self._hint,
                sleep=self._sleep, rand=random.random, base_url=self.base_url)
        return clean_utterances(self._parse(response, chunk), chunk)

    def _parse(self, response: httpx.Response, chunk: AudioChunk) -> list[Utterance]:
        try:
            body: Any = response.json()
        except ValueError as exc:
            raise SpeechError(f"{self.model} at {self.url} answered something that is not JSON: "
                              f"{response.text[:200]!r}; does the server support response_format="
                              f"{'diarized_json' if self.diarize else 'verbose_json'}?"
                              ) from exc
        if not isinstance(body, dict) or not isinstance(body.get("segments", body.get("text")), (list, str)):
            raise SpeechError(f"{self.model} at {self.url} answered JSON without 'segments' or 'text': "
                              f"{str(body)[:200]!r}")
        origin = chunk.t_start
        segments = body.get("segments")
        if not isinstance(segments, list):
            return [Utterance(t_start=origin, t_end=chunk.t_end, text=str(body["text"]))]
        out = []
        for n, seg in enumerate(segments):
            try:
                start, end = float(seg["start"]), float(seg["end"])
                words = [Word(t_start=origin + float(w["start"]),
                              t_end=origin + max(float(w["start"]), float(w["end"])),
                              text=str(w["word"]).strip()) for w in seg.get("words") or []]
                speaker = seg.get("speaker")
                out.append(Utterance(t_start=origin + max(0.0, start), t_end=origin + max(start, end, 0.0),
                                     text=str(seg["text"]), speaker=str(speaker) if speaker else None, words=words))
            except (KeyError, TypeError, ValueError) as exc:
                raise SpeechError(f"{self.model} at {self.url}: segment {n} is not a transcription segment "
                                  f"({exc}): {str(seg)[:200]!r}") from exc
        return out

    def _hint(self, status: int) -> str:
        if status in (401, 403):
            return f"; check the API key in ${self.api_key_env}"
        if status == 404:
            return f"; check the model name {self.model!r} and base_url (most servers end in /v1)"
        return ""
