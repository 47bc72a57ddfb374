"""Frames by timestamp, decoded only where asked.

``sample_frames`` walks the file once. Between requested times that are close together it
``grab``s forward (demux and decode, no colour conversion) and ``retrieve``s only the
frames it returns; across a gap longer than ``seek_threshold`` seconds it seeks instead.
Timestamps come from the container, so variable-frame-rate files are sampled by time, not
by ``index / fps``; where a seek lands elsewhere than asked (OpenCV converts times through
the average rate) it aims again, and where the backend cannot seek at all it reads on.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Iterable
from contextlib import closing
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

import numpy as np

from memtools.errors import VideoError
from memtools.video._capture import Cursor, OpenCapture, check_file

DEFAULT_SEEK_THRESHOLD = 4.0
"""Seconds between two requested times above which seeking beats decoding forward.

A seek decodes from the previous keyframe (typically 0.5-10 s of video earlier), so
below a few seconds reading on is as cheap and never lands in the wrong place."""

_SEEK_ATTEMPTS = 3


@dataclass(frozen=True, eq=False)
class Frame:
    """One decoded frame: ``t`` seconds from the start, its ``index`` and a BGR image.

    ``index`` is the decoder's frame number: exact when the file was read sequentially,
    the container's estimate after a seek in a variable-frame-rate file. ``t`` is always
    the frame's own timestamp, not the time that was asked for.
    """

    t: float
    index: int
    image: np.ndarray = field(repr=False)

    @property
    def height(self) -> int:
        return int(self.image.shape[0])

    @property
    def width(self) -> int:
        return int(self.image.shape[1])


def uniform_times(
    duration: float, *, every_sec: float | None = None, n: int | None = None, start: float = 0.0
) -> list[float]:
    """Evenly spaced sample times over ``[start, start + duration)``: the centres of equal bins.

    Give exactly one of ``every_sec`` (at least one sample per that many seconds) or
    ``n`` (that many samples). Bin centres avoid the very first and last frame, which are
    often black, and always give at least one time for a positive duration.
    """
    if (every_sec is None) == (n is None):
        raise ValueError("give exactly one of every_sec or n")
    if not math.isfinite(duration) or duration <= 0:
        return []
    if every_sec is not None:
        if not every_sec > 0:
            raise ValueError(f"every_sec must be positive, not {every_sec}")
        count = max(1, math.ceil(duration / every_sec - 1e-9))
    else:
        assert n is not None
        if n < 0:
            raise ValueError(f"n must be >= 0, not {n}")
        count = n
    step = duration / count if count else 0.0
    return [start + (i + 0.5) * step for i in range(count)]


def sample_frames(
    path: str | Path,
    times: Iterable[float],
    *,
    seek_threshold: float = DEFAULT_SEEK_THRESHOLD,
    open_capture: OpenCapture | None = None,
) -> Generator[Frame, None, None]:
    """Yield the frames at ``times`` (seconds), in time order.

    For each time ``t`` the frame is the first one whose timestamp is at least ``t`` minus
    half a frame interval, i.e. the frame nearest ``t`` from the right; a time within one
    frame after the last frame gets the last frame, later times get nothing. A frame
    serves every time that maps to it but is yielded once, so times closer together than
    a frame interval yield fewer frames than asked.

    The file is checked at once (``VideoError`` if missing or empty); it is opened on the
    first ``next()``. Close the iterator (or exhaust it) to release the file early.
    """
    targets = sorted({_check_time(t) for t in times})
    p = check_file(path)
    if seek_threshold < 0:
        raise ValueError(f"seek_threshold must be >= 0, not {seek_threshold}")
    return _sample(p, targets, seek_threshold, open_capture)


def read_frame_at(path: str | Path, t: float, *, open_capture: OpenCapture | None = None) -> Frame:
    """The frame shown at ``t`` seconds (see ``sample_frames``); ``VideoError`` past the end."""
    with closing(sample_frames(path, [t], open_capture=open_capture)) as frames:
        frame = next(frames, None)
    if frame is None:
        raise VideoError(f"{path} has no frame at {t:.3f}s: that is past its end; probe() gives the duration")
    return frame


def _check_time(t: float) -> float:
    t = float(t)
    if not math.isfinite(t) or t < 0:
        raise ValueError(f"sample times must be finite seconds >= 0, got {t}")
    return t


class _Landed(Enum):
    ON_FRAME = "on_frame"  # the cursor holds a grabbed frame before the target
    AT_START = "at_start"  # the file was reopened; nothing grabbed yet
    PAST_END = "past_end"  # the target lies beyond the end of the video


def _sample(path: Path, targets: list[float], seek_threshold: float,
            open_capture: OpenCapture | None) -> Generator[Frame, None, None]:
    if not targets:
        return
    with Cursor(path, open_capture) as cur:
        tol = cur.interval / 2
        last_yielded = -math.inf
        candidate: Frame | None = None  # kept in case the video ends before the target
        fresh = False  # whether cur holds a grabbed frame not yet looked at
        for target in targets:
            if last_yielded >= target - tol:
                continue  # the frame just yielded serves this time too
            if cur.can_seek and target - max(cur.t, 0.0) > seek_threshold:
                landed = _seek_before(cur, target)
                if landed is _Landed.PAST_END:
                    return
                fresh = landed is _Landed.ON_FRAME
                candidate = None
            while True:
                if not fresh and not cur.grab():
                    if (
                        candidate is not None
                        and candidate.t > last_yielded
                        and target - candidate.t <= 1.5 * cur.interval
                    ):
                        yield candidate
                    return
                fresh = False
                if cur.t >= target - tol:
                    yield Frame(t=cur.t, index=cur.index, image=cur.retrieve())
                    last_yielded, candidate = cur.t, None
                    break
                if cur.t >= target - 1.5 * cur.interval:
                    candidate = Frame(t=cur.t, index=cur.index, image=cur.retrieve())


def _seek_before(cur: Cursor, target: float) -> _Landed:
    """Put the cursor on a frame shortly before ``target``, by seeking."""
    aim = max(0.0, target - 2 * cur.interval)
    for _ in range(_SEEK_ATTEMPTS):
        if not (cur.seek(aim) and cur.grab()):
            break
        if cur.t < target - cur.interval / 2:
            return _Landed.ON_FRAME
        if aim == 0.0:
            break
        # landed late (variable frame rate): aim earlier by the error, plus a margin
        aim = max(0.0, aim - (cur.t - aim) - 2 * cur.interval)
    else:
        cur.restart()  # kept landing late: read on from the start instead
        cur.can_seek = False
        return _Landed.AT_START
    end = cur.claimed_end
    if end is not None and target > end + cur.interval:
        return _Landed.PAST_END
    cur.restart()  # the backend refused or broke: read on from the start, never seek again
    cur.can_seek = False
    return _Landed.AT_START
