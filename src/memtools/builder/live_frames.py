"""The frames of the open part of a live stream, for the prompts and the keyframe rules.

A reader thread pulls grid frames from a ``LiveSource`` and keeps them JPEG-encoded: every one
at the prompt size (``frame_max_side``), and every ``keyframe_stride``-th one also at keyframe
size (the bytes a keyframe file gets). The build asks for frames by time (``at``, the same call
``FrameReader`` answers in a file build) and drops what lies before the landed part of the
stream (``drop_before``). The thread waits while it is ``max_ahead_sec`` of stream ahead of
what was dropped, so a file read faster than the model keeps memory bounded.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from memtools import background
from memtools.builder.follow_source import Grid, LiveSource
from memtools.video import Frame, encode_jpeg


@dataclass(frozen=True)
class Candidate:
    """A grid frame the keyframe rules may keep: its time, grid index and keyframe JPEG."""

    t: float
    index: int
    jpeg: bytes


class LiveFrames:
    """Grid frames from ``start`` on, filled by a reader thread."""

    def __init__(self, source: LiveSource, grid: Grid, start: float, *, max_side: int, keyframe_stride: int,
                 max_ahead_sec: float) -> None:
        self.source, self.grid, self.start_at = source, grid, start
        self.max_side, self.keyframe_stride, self.max_ahead_sec = max_side, max(1, keyframe_stride), max_ahead_sec
        self._times: list[float] = []
        self._jpegs: list[bytes] = []
        self._candidates: list[Candidate] = []
        self._arrived: list[tuple[float, float]] = []  # (stream time, monotonic arrival) of recent frames
        self._low = start
        self.latest = -math.inf  # stream time of the newest frame
        self.width = self.height = 0
        self.ended = False
        self.error: BaseException | None = None
        self.stop = threading.Event()
        self._cond = threading.Condition()
        self._changed: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        """Start reading (on the event loop)."""
        self._loop = asyncio.get_running_loop()
        self._changed = asyncio.Event()
        self._thread = background.start(self._run, name="memtools-follow", stop=self.close)

    def close(self) -> None:
        self.stop.set()
        with self._cond:
            self._cond.notify_all()

    async def wait_change(self, timeout: float) -> None:
        """Until a frame arrives or the stream ends (at most ``timeout`` seconds)."""
        assert self._changed is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout)
        self._changed.clear()
        if self.error is not None:
            raise self.error

    def _wake(self) -> None:
        if self._loop is not None and self._changed is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._changed.set)

    def _run(self) -> None:
        try:
            for item in self.source.read(self.start_at, self.grid, self.stop):
                if item is not None:
                    self._add(*item)
                elif self.stop.is_set():
                    break
        except BaseException as exc:  # noqa: BLE001 - handed to the event loop, re-raised there
            self.error = exc
        finally:
            self.ended = True
            self._wake()

    def _add(self, index: int, frame: Frame) -> None:
        with self._cond:
            while not self.stop.is_set() and frame.t - self._low > self.max_ahead_sec:
                self._cond.wait(0.5)
        prompt = encode_jpeg(frame.image, max_side=self.max_side)
        candidate = None
        if index % self.keyframe_stride == 0:
            candidate = Candidate(frame.t, index, encode_jpeg(frame.image))
        with self._cond:
            self._times.append(frame.t)
            self._jpegs.append(prompt)
            if candidate is not None:
                self._candidates.append(candidate)
            self._arrived.append((frame.t, time.monotonic()))
            self.latest = frame.t
            self.height, self.width = frame.image.shape[:2]
        self._wake()

    # --- serving ------------------------------------------------------------------------

    async def at(self, times: Sequence[float], *, origin: float = 0.0, seek: bool = False) -> list[tuple[float, bytes]]:
        """``(t - origin, jpeg)`` of the stored frames nearest ``times``, in time order, each once."""
        del seek  # everything asked for is in memory already
        with self._cond:
            picked = sorted({i for i in (self._nearest(t) for t in times) if i is not None})
            return [(round(max(0.0, self._times[i] - origin), 3), self._jpegs[i]) for i in picked]

    def _nearest(self, t: float) -> int | None:
        if not self._times:
            return None
        i = bisect.bisect_left(self._times, t)
        if i == 0:
            return 0
        if i == len(self._times):
            return i - 1
        return i if self._times[i] - t < t - self._times[i - 1] else i - 1

    def hold(self, key: str, t: float) -> None:
        """Frames stay until ``drop_before``; holds are not needed (same interface as ``FrameReader``)."""

    def release(self, key: str) -> None:
        """See ``hold``."""

    def candidates(self, start: float, end: float) -> list[Candidate]:
        with self._cond:
            return [c for c in self._candidates if start <= c.t < end]

    def arrival_of(self, t: float) -> float | None:
        """When (``time.monotonic()``) the first frame at or after stream time ``t`` arrived."""
        with self._cond:
            return next((when for at, when in self._arrived if at >= t), None)

    def drop_before(self, t: float) -> None:
        """Forget frames before stream time ``t`` (landed); the reader may run on."""
        with self._cond:
            self._low = max(self._low, t)
            cut = bisect.bisect_left(self._times, t)
            del self._times[:cut], self._jpegs[:cut]
            self._candidates = [c for c in self._candidates if c.t >= t]
            self._arrived = [a for a in self._arrived if a[0] >= t]
            self._cond.notify_all()

