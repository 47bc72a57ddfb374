"""A video's sound track, decoded with PyAV (the ``av`` package ships its own FFmpeg libraries).

    if has_audio("talk.mp4"):
        for chunk in iter_audio("talk.mp4", chunk_sec=30):
            recognise(chunk.samples, offset=chunk.t_start)      # 16 kHz mono float32 in [-1, 1]

Audio is resampled to ``SAMPLE_RATE`` (16 kHz, what speech recognisers expect) mono float32
and handed out in chunks of ``chunk_sec`` seconds, so a ten-hour video never sits in memory.
A file without an audio track is normal: ``iter_audio`` yields nothing. A file whose audio
cannot be decoded raises ``VideoError`` naming the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memtools.errors import VideoError

SAMPLE_RATE = 16_000


@dataclass(frozen=True)
class AudioChunk:
    """``samples`` (mono float32 at ``sample_rate``) starting ``t_start`` seconds into the video.

    ``span`` overrides the length the samples give: a stretch of time without samples, for
    recognisers that need no audio (subtitles)."""

    t_start: float
    samples: np.ndarray
    sample_rate: int = SAMPLE_RATE
    span: float | None = None

    @property
    def duration(self) -> float:
        return self.span if self.span is not None else len(self.samples) / self.sample_rate

    @property
    def t_end(self) -> float:
        return self.t_start + self.duration


def _av():
    try:
        import av
    except ImportError as exc:  # pragma: no cover - av is a core dependency
        raise VideoError("decoding audio needs PyAV: pip install av") from exc
    return av


def _open(path: Path):
    av = _av()
    if not path.is_file():
        raise VideoError(f"no such video file: {path}")
    try:
        return av.open(str(path))
    except (av.FFmpegError, OSError, ValueError) as exc:
        raise VideoError(f"cannot open {path} to read its audio: {exc}") from exc


def has_audio(path: str | Path) -> bool:
    """Whether the file has an audio track (without decoding it)."""
    with _open(Path(path)) as container:
        return bool(container.streams.audio)


def audio_duration(path: str | Path) -> float:
    """Seconds of the first audio track as the container states them (0.0 without audio)."""
    with _open(Path(path)) as container:
        if not container.streams.audio:
            return 0.0
        stream = container.streams.audio[0]
        if stream.duration is not None and stream.time_base is not None:
            return float(stream.duration * stream.time_base)
        return float(container.duration or 0) / 1_000_000


def iter_audio(path: str | Path, *, chunk_sec: float = 30.0, start_sec: float = 0.0,
               end_sec: float | None = None) -> Iterator[AudioChunk]:
    """Chunks of ``chunk_sec`` seconds (the last may be shorter) of the first audio track.

    ``start_sec`` / ``end_sec`` bound the stretch decoded (a seek, then decoding up to it).
    Times are seconds from the start of the track; nothing is yielded without an audio track.
    """
    if chunk_sec <= 0:
        raise ValueError(f"chunk_sec must be > 0, not {chunk_sec}")
    path = Path(path)
    av = _av()
    chunk_len = int(round(chunk_sec * SAMPLE_RATE))
    first = int(round(start_sec * SAMPLE_RATE))
    last = None if end_sec is None else int(round(end_sec * SAMPLE_RATE))
    with _open(path) as container:
        if not container.streams.audio:
            return
        stream = container.streams.audio[0]
        stream.thread_type = "AUTO"
        buffer = _Buffer(first, last, chunk_len)
        resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
        try:
            if start_sec > 0 and stream.time_base is not None:
                container.seek(int(start_sec / stream.time_base), stream=stream, backward=True)
            for frame in container.decode(stream):
                if buffer.position is None:  # where decoding really starts (after a seek, or 0)
                    buffer.position = max(0, int(round(float(frame.time or 0.0) * SAMPLE_RATE)))
                for out in resampler.resample(frame):
                    buffer.add(out.to_ndarray().reshape(-1))
                yield from buffer.full_chunks()
                if buffer.done:
                    return
            for out in resampler.resample(None):
                buffer.add(out.to_ndarray().reshape(-1))
        except av.FFmpegError as exc:
            raise VideoError(f"cannot decode the audio of {path} near {buffer.seconds:.1f}s: {exc}") from exc
        yield from buffer.full_chunks()
        yield from buffer.rest()


class _Buffer:
    """Resampled samples waiting to be cut into chunks; ``position`` is the absolute index of
    the first one held."""

    def __init__(self, first: int, last: int | None, chunk_len: int) -> None:
        self.first, self.last, self.chunk_len = first, last, chunk_len
        self.position: int | None = None
        self.parts: list[np.ndarray] = []
        self.held = 0
        self.done = False

    @property
    def seconds(self) -> float:
        return (self.position or 0) / SAMPLE_RATE

    def add(self, samples: np.ndarray) -> None:
        self.parts.append(samples.astype(np.float32, copy=False))
        self.held += len(samples)

    def _take(self, whole_only: bool) -> Iterator[AudioChunk]:
        data = np.concatenate(self.parts) if len(self.parts) > 1 else (self.parts[0] if self.parts else
                                                                       np.empty(0, np.float32))
        pos = self.position or 0
        i = max(0, self.first - pos)
        while i < len(data):
            end = i + self.chunk_len
            if self.last is not None:
                end = min(end, self.last - pos)
            if end <= i or (whole_only and end > len(data)):
                break
            part = data[i:end]
            if len(part):
                yield AudioChunk(t_start=(pos + i) / SAMPLE_RATE, samples=np.ascontiguousarray(part))
            i = end
            if self.last is not None and pos + i >= self.last:
                self.done = True
                break
        rest = data[i:] if i < len(data) else np.empty(0, np.float32)
        self.parts, self.held, self.position = [rest], len(rest), pos + min(i, len(data))

    def full_chunks(self) -> Iterator[AudioChunk]:
        """Every whole chunk held (a chunk cut short by ``last`` counts as whole)."""
        pos = self.position or 0
        needed = max(0, self.first - pos) + self.chunk_len
        if self.last is not None:
            needed = min(needed, self.last - pos)
        if self.held >= needed:  # joining the parts only when a chunk is complete keeps decoding linear
            yield from self._take(True)

    def rest(self) -> Iterator[AudioChunk]:
        """What is left at the end of the track."""
        if not self.done:
            yield from self._take(False)


def read_audio(path: str | Path, start_sec: float = 0.0, end_sec: float | None = None) -> AudioChunk:
    """One stretch of the track as a single chunk (empty samples without an audio track)."""
    parts = list(iter_audio(path, chunk_sec=3600.0, start_sec=start_sec, end_sec=end_sec))
    if not parts:
        return AudioChunk(t_start=start_sec, samples=np.empty(0, np.float32))
    return AudioChunk(t_start=parts[0].t_start, samples=np.concatenate([p.samples for p in parts]))
