"""One decoding pass per build: every frame the prompts need, and keyframe selection on the way.

Decoding dominates the video stage, so the video is read once, front to back, on a thread.
Frames are taken on a fixed time grid (``grid_step``: fine enough for the densest prompt
and the keyframe rules); grid frames are JPEG-encoded and kept until no pending step needs
them, and every ``stride``-th one goes through the keyframe rules. A prompt asking for
frames at some times gets the grid frames nearest them, so what a model is shown depends
only on the video and the settings: a resumed build sends byte-identical requests.

Memory stays bounded: steps *hold* the earliest time they still need (the segmentation
front, each macro event until its frames are taken); frames before the earliest hold are
dropped, and the reader waits when it gets ``max_ahead`` frames past it. Sparse frames far
ahead (a segmentation window's) are decoded by seeking instead, and so is anything asked
for that the pass has already dropped: decoding is deterministic, so either way a step gets
the same bytes.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import math
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from memtools import background
from memtools.builder.config import BuildConfig
from memtools.builder.keyframes import KeyframeWriter
from memtools.video import Frame, KeyframeSelector, encode_jpeg, sample_frames


def grid_step(config: BuildConfig, fps: float) -> float:
    """Seconds between grid frames: dense enough for windows, the shortest macro events and
    the keyframe rules; never denser than the video's own frames."""
    wanted = min(config.keyframes.sample_every_sec, config.window_sec / config.frames_per_window,
                 max(config.min_episode_sec, 1.0) / config.frames_per_macro)
    return max(wanted, 1.0 / fps, 0.05)


class FrameGrid:
    """Bin centres every ``step`` seconds over ``[0, duration)``."""

    def __init__(self, duration: float, step: float) -> None:
        self.step = step
        self.count = max(1, math.ceil(duration / step - 1e-9))
        self.times = [(i + 0.5) * step for i in range(self.count)]

    def index(self, t: float) -> int:
        """The grid frame nearest ``t``."""
        return min(max(int(round(t / self.step - 0.5)), 0), self.count - 1)


HANDOFF_BYTES = 256 * 1024 * 1024
"""Decoded frames waiting for the keyframe rules, at most (the decoder runs ahead by this much)."""


class _Handoff:
    """A queue of frames bounded by their size in bytes; iterating it ends at ``close()``."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._items: collections.deque[Frame] = collections.deque()
        self._bytes = 0
        self._closed = self._abandoned = False
        self._cond = threading.Condition()

    def put(self, frame: Frame) -> None:
        with self._cond:
            while self._items and self._bytes + frame.image.nbytes > self.max_bytes and not self._abandoned:
                self._cond.wait()
            if not self._abandoned:
                self._items.append(frame)
                self._bytes += frame.image.nbytes
                self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def abandon(self) -> None:
        """The consumer is gone: drop everything, never block the producer again."""
        with self._cond:
            self._abandoned = True
            self._items.clear()
            self._cond.notify_all()

    def __iter__(self) -> Iterator[Frame]:
        while True:
            with self._cond:
                while not self._items and not self._closed:
                    self._cond.wait()
                if not self._items:
                    return
                frame = self._items.popleft()
                self._bytes -= frame.image.nbytes
                self._cond.notify_all()
            yield frame


class FrameReader:
    """Serves JPEG frames of one video to async callers from a single decoding thread."""

    def __init__(self, path: Path, grid: FrameGrid, *, max_side: int, keyframes: KeyframeWriter | None = None,
                 keyframe_stride: int = 1, max_ahead: int = 2000) -> None:
        self.path, self.grid, self.max_side = path, grid, max_side
        self.keyframes, self.keyframe_stride, self.max_ahead = keyframes, max(1, keyframe_stride), max_ahead
        self._frames: dict[int, tuple[float, bytes]] = {}
        self._holds: dict[str, int] = {}
        self._low = 0  # grid index below which nothing is needed any more
        self._produced = -1  # highest grid index decoded so far
        self._done = False
        self._error: BaseException | None = None
        self._stop = False
        self._cond = threading.Condition()
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        """Start decoding (idempotent). Called on the event loop."""
        if self._thread is None:
            self._loop = asyncio.get_running_loop()
            self._thread = background.start(self._run, name="memtools-frames", stop=self.stop)

    async def finish(self) -> None:
        """Wait for the pass to end (keyframes written); re-raise its error."""
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)
        if self._error is not None:
            raise self._error

    def stop(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()

    # --- what is still needed ----------------------------------------------------------------

    def hold(self, key: str, t: float) -> None:
        """Keep frames from ``t`` on until ``release(key)``; moving a hold forward frees frames."""
        with self._cond:
            self._holds[key] = self.grid.index(t)
            self._update_low()

    def release(self, key: str) -> None:
        with self._cond:
            self._holds.pop(key, None)
            self._update_low()

    def _update_low(self) -> None:
        low = min(self._holds.values()) if self._holds else self.grid.count
        if low != self._low:
            self._low = low
            for index in [i for i in self._frames if i < low]:
                del self._frames[index]
            self._cond.notify_all()

    # --- serving ------------------------------------------------------------------------------

    async def at(self, times: Sequence[float], *, origin: float = 0.0, seek: bool = False) -> list[tuple[float, bytes]]:
        """``(t - origin, jpeg)`` of the grid frames nearest ``times``, in time order, each once.

        ``seek``: decode just these frames now, on another thread, instead of waiting for the
        front-to-back pass to reach them (for sparse frames far ahead, like a segmentation
        window's). Either way the frames are the same grid frames.
        """
        indexes = sorted({self.grid.index(t) for t in times})
        if not indexes:
            return []
        with self._cond:
            # past what the pass may decode while earlier frames are held: it would wait forever
            seek = seek or indexes[-1] - self._low > self.max_ahead
        if seek:
            return await asyncio.to_thread(self._decode_now, indexes, origin)
        self.start()
        await self._until(indexes[-1])
        with self._cond:
            found = {i: self._frames[i] for i in indexes if i in self._frames}
            missing = [i for i in indexes if i not in found and i <= self._produced]
        if missing:  # no hold kept them: decode them again (the same frames)
            found.update(await asyncio.to_thread(self._decode_indexes, missing))
        return [(round(max(0.0, t - origin), 3), data) for t, data in (found[i] for i in sorted(found))]

    def _decode_indexes(self, indexes: list[int]) -> dict[int, tuple[float, bytes]]:
        with contextlib.closing(sample_frames(self.path, [self.grid.times[i] for i in indexes])) as frames:
            return {self.grid.index(f.t): (f.t, encode_jpeg(f.image, max_side=self.max_side)) for f in frames}

    def _decode_now(self, indexes: list[int], origin: float) -> list[tuple[float, bytes]]:
        found = self._decode_indexes(indexes)
        return [(round(max(0.0, t - origin), 3), data) for t, data in (found[i] for i in sorted(found))]

    async def _until(self, index: int) -> None:
        future: asyncio.Future[None] | None = None
        with self._cond:
            if self._error is not None:
                raise self._error
            if self._produced < index and not self._done:
                future = asyncio.get_running_loop().create_future()
                self._waiters.append((index, future))
        if future is not None:
            await future

    def _notify(self) -> None:
        """On the loop: wake callers whose frames are decoded (or that will never come)."""
        with self._cond:
            ready = [(i, f) for i, f in self._waiters if i <= self._produced or self._done]
            self._waiters = [(i, f) for i, f in self._waiters if not (i <= self._produced or self._done)]
            error = self._error
        for _, future in ready:
            if not future.done():
                if error is not None:
                    future.set_exception(error)
                else:
                    future.set_result(None)

    # --- the decoding threads ------------------------------------------------------------------

    def _run(self) -> None:
        """Decode; the keyframe rules run on a second thread, so they never hold up the prompts."""
        selecting: threading.Thread | None = None
        handoff = _Handoff(HANDOFF_BYTES)
        if self.keyframes is not None:
            selecting = threading.Thread(target=self._select, args=(handoff,), name="memtools-keyframes", daemon=True)
            selecting.start()
        try:
            for frame in self._decode():
                if selecting is not None:
                    handoff.put(frame)
        except BaseException as exc:  # noqa: BLE001 - handed to the event loop, re-raised there
            self._fail(exc)
        finally:
            if selecting is not None:
                handoff.close()
                selecting.join()
            with self._cond:
                self._done = True
            self._wake_loop()

    def _select(self, handoff: _Handoff) -> None:
        assert self.keyframes is not None
        try:
            for frame in KeyframeSelector(self.keyframes.config).select(handoff):
                self.keyframes.add(frame)
            if not self._stop:
                self.keyframes.finish()
        except BaseException as exc:  # noqa: BLE001 - handed to the event loop, re-raised there
            self._fail(exc)
            handoff.abandon()

    def _fail(self, exc: BaseException) -> None:
        with self._cond:
            if self._error is None:
                self._error = exc
            self._stop = True
            self._cond.notify_all()

    def _decode(self) -> Iterator[Frame]:
        """Grid frames in order, storing the JPEGs still needed; yields those for the keyframe rules."""
        with contextlib.closing(sample_frames(self.path, self.grid.times)) as frames:
            for frame in frames:
                index = self.grid.index(frame.t)  # the grid time this frame was decoded for
                with self._cond:
                    while not self._stop and index - self._low > self.max_ahead:
                        self._cond.wait()
                    if self._stop:
                        return
                    keep = index >= self._low
                if keep:
                    data = encode_jpeg(frame.image, max_side=self.max_side)
                    with self._cond:
                        if index >= self._low:
                            self._frames[index] = (frame.t, data)
                with self._cond:
                    self._produced = max(self._produced, index)
                self._wake_loop()
                if index % self.keyframe_stride == 0:
                    yield frame

    def _wake_loop(self) -> None:
        if self._loop is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                self._loop.call_soon_threadsafe(self._notify)
