"""Where ``memtools build --follow`` reads frames from, as they arrive.

Three kinds of source, told apart by ``open_source(spec)``:

* a **folder** that receives chunk files (``segment_000.mp4``, ``segment_001.mp4`` ... as
  ffmpeg's segment muxer or a camera writes them). Chunks are read in name order and placed
  end to end on one stream clock (each chunk's probed duration). A chunk is read once a later
  one exists, because the newest may still be being written, or at the end of the stream.
  Hidden files (``.name``) and ``*.tmp``/``*.part`` files are ignored, so a writer can
  write a chunk under a temporary name and rename it when it is done. A chunk that cannot be
  read as a video is skipped with a warning (and takes no time on the stream clock);
* a **growing file** (a recording in progress, best in an appendable container such as
  MPEG-TS). At its current end the file is reopened after ``poll`` seconds and read on from
  the last frame seen;
* a **stream URL** OpenCV opens (``rtsp://``, ``http(s)://``, ``udp://``, ...). A read that
  fails means a reconnect after ``poll`` seconds. A stream's own clock restarts with each
  connection, so each connection is placed right after what was read before (or after the
  landed part of the memory, on a resumed build): the memory's clock has no gaps and no
  overlaps, and what was broadcast while nothing was reading is simply not in it.

Every source yields frames on the build's time grid (``(i + 0.5) * step`` seconds): for grid
point ``i``, the first frame at or after it, at most once each. What a source yields depends
only on the media and the start time, so a resumed build is shown the same frames. The end
of the stream is ``idle_timeout`` seconds without a new frame (or, for a folder, without a new
chunk); ``None`` (or 0) follows forever, until the ``stop`` event is set.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from memtools.errors import ConfigError, VideoError
from memtools.video import Frame, probe
from memtools.video._capture import Cursor, check_file

log = logging.getLogger(__name__)

URL_SCHEMES = ("rtsp://", "rtsps://", "rtmp://", "http://", "https://", "udp://", "tcp://", "srt://")
IGNORED_SUFFIXES = (".tmp", ".part", ".partial", ".crdownload")


@dataclass(frozen=True)
class Grid:
    """The build's frame grid on the stream clock."""

    step: float

    def time(self, index: int) -> float:
        return (index + 0.5) * self.step

    def first_at(self, t: float) -> int:
        """The first grid index whose time is at least ``t``."""
        return max(0, math.ceil(t / self.step - 0.5 - 1e-9))


class LiveSource(Protocol):
    """Frames as they arrive: ``(grid index, frame on the stream clock)``; ``None`` each
    ``poll`` interval without a new frame. The iterator ends at the end of the stream."""

    description: str

    def read(self, start: float, grid: Grid, stop: threading.Event) -> Iterator[tuple[int, Frame] | None]: ...


def open_source(spec: str, *, poll: float = 0.5, idle_timeout: float | None = 60.0) -> LiveSource:
    """The source ``spec`` names: a URL, a folder of chunk files, or a (growing) video file."""
    idle = idle_timeout if idle_timeout else None
    if spec.lower().startswith(URL_SCHEMES):
        return CaptureSource(spec, growing=False, poll=poll, idle_timeout=idle)
    path = Path(spec).expanduser()
    if path.is_dir():
        return ChunkFolder(path, poll=poll, idle_timeout=idle)
    if not path.exists():
        raise ConfigError(f"--follow {spec}: no such file or folder; name a video file that is being recorded, "
                          "a folder that receives chunk files, or a stream URL (rtsp://, http://...)")
    return CaptureSource(str(path), growing=True, poll=poll, idle_timeout=idle)


def _grid_frames(cursor: Cursor, offset: float, grid: Grid, next_index: int, *,
                 after: float = -math.inf) -> Iterator[tuple[int, Frame]]:
    """Read ``cursor`` on; yield ``(i, frame)`` for grid points from ``next_index`` (frame times
    shifted by ``offset`` onto the stream clock; frames at or before ``after`` are skipped)."""
    tol = cursor.interval / 2
    while cursor.grab():
        t = offset + cursor.t
        if t <= after or t < grid.time(next_index) - tol:
            continue
        index = next_index
        while grid.time(next_index) - tol <= t:
            next_index += 1
        yield index, Frame(t=round(t, 3), index=index, image=cursor.retrieve())


class CaptureSource:
    """A growing file or a stream URL, read through OpenCV."""

    def __init__(self, spec: str, *, growing: bool, poll: float = 0.5, idle_timeout: float | None = 60.0) -> None:
        self.spec, self.growing, self.poll, self.idle_timeout = spec, growing, poll, idle_timeout
        self.description = f"{'growing file' if growing else 'stream'} {spec}"

    def _open(self) -> Cursor | None:
        try:
            if self.growing:
                check_file(self.spec)
            return Cursor(Path(self.spec))
        except VideoError:
            return None  # not (yet) readable: a recording that has not written its header, a stream that is down

    def read(self, start: float, grid: Grid, stop: threading.Event) -> Iterator[tuple[int, Frame] | None]:
        next_index, last_t = grid.first_at(start), -math.inf
        idle_since = time.monotonic()
        while not stop.is_set():
            cursor = self._open()
            if cursor is not None:
                try:
                    offset = 0.0
                    if self.growing and last_t > 0 and cursor.can_seek:
                        cursor.seek(max(0.0, last_t - 2.0))
                    elif not self.growing and cursor.grab():
                        # a stream's clock restarts at each (re)connection: continue the memory's clock
                        offset = max(start, last_t + grid.step) - cursor.t
                    for index, frame in _grid_frames(cursor, offset, grid, next_index, after=last_t):
                        next_index, last_t = index + 1, frame.t
                        idle_since = time.monotonic()
                        yield index, frame
                        if stop.is_set():
                            return
                finally:
                    cursor.release()
            if self.idle_timeout is not None and time.monotonic() - idle_since >= self.idle_timeout:
                return
            yield None
            stop.wait(self.poll)


class ChunkFolder:
    """A folder that receives chunk files, read in name order as one stream."""

    def __init__(self, folder: Path, *, poll: float = 0.5, idle_timeout: float | None = 60.0) -> None:
        self.folder, self.poll, self.idle_timeout = folder, poll, idle_timeout
        self.description = f"chunk folder {folder}"
        self._durations: dict[str, float] = {}

    def chunks(self) -> list[Path]:
        return sorted(p for p in self.folder.iterdir()
                      if p.is_file() and not p.name.startswith(".") and not p.name.endswith(IGNORED_SUFFIXES))

    def duration(self, chunk: Path) -> float:
        if chunk.name not in self._durations:
            self._durations[chunk.name] = probe(chunk).duration
        return self._durations[chunk.name]

    def read(self, start: float, grid: Grid, stop: threading.Event) -> Iterator[tuple[int, Frame] | None]:
        next_index, offset, done = grid.first_at(start), 0.0, 0
        idle_since, seen = time.monotonic(), 0
        while not stop.is_set():
            chunks = self.chunks()
            if len(chunks) != seen:
                seen, idle_since = len(chunks), time.monotonic()
            ended = self.idle_timeout is not None and time.monotonic() - idle_since >= self.idle_timeout
            ready = chunks if ended else chunks[:-1]  # the newest may still be being written
            for chunk in ready[done:]:
                done += 1
                try:
                    length = self.duration(chunk)
                except VideoError as exc:  # one broken chunk must not end a live build
                    log.warning("skipped chunk %s: %s", chunk.name, exc)
                    continue
                if offset + length > grid.time(next_index) - 1e-6:
                    with Cursor(chunk) as cursor:
                        for index, frame in _grid_frames(cursor, offset, grid, next_index):
                            next_index = index + 1
                            yield index, frame
                            if stop.is_set():
                                return
                offset += length
                next_index = max(next_index, grid.first_at(offset))
            if ended:
                return
            yield None
            stop.wait(self.poll)
