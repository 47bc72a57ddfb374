"""The one place memtools touches ``cv2.VideoCapture``.

``Capture`` is the seam: anything with the five methods below can stand in for OpenCV
(``probe``, ``sample_frames`` and ``read_frame_at`` take an ``open_capture`` factory).
``Cursor`` walks a capture and owns the awkward parts: timestamps that come from the
container (variable frame rate) with a fallback to ``index / fps`` when the backend has
none, seeks that land somewhere else than asked, and cv2 errors translated to
``VideoError``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import cv2
import numpy as np

from memtools.errors import VideoError

ASSUMED_FPS = 30.0
"""Frame rate assumed when neither the container nor the timestamps tell one."""

_MAX_FPS = 1000.0
_MAX_FRAMES = 10**9

_CONVERT_HINT = "convert it with e.g. `ffmpeg -i INPUT -c:v libx264 OUTPUT.mp4` and try again"


class Capture(Protocol):
    """The subset of ``cv2.VideoCapture`` memtools uses."""

    def isOpened(self) -> bool: ...  # noqa: N802 - OpenCV's spelling

    def grab(self) -> bool: ...

    def retrieve(self) -> tuple[bool, np.ndarray | None]: ...

    def get(self, prop_id: int) -> float: ...

    def set(self, prop_id: int, value: float) -> bool: ...

    def release(self) -> None: ...


OpenCapture = Callable[[str], Capture]


def open_with_ffmpeg(path: str) -> Capture:
    """OpenCV's FFmpeg backend; any backend only where OpenCV was built without FFmpeg.

    Never ``CAP_ANY`` by default: it would hand ``clip_%03d.mp4`` to the image-sequence
    backend and log a second round of errors for every unreadable file."""
    if cv2.videoio_registry.hasBackend(cv2.CAP_FFMPEG):
        return cv2.VideoCapture(path, cv2.CAP_FFMPEG)
    return cv2.VideoCapture(path)  # pragma: no cover - opencv-python always has FFmpeg


def plausible_fps(fps: float) -> bool:
    return math.isfinite(fps) and 0.0 < fps <= _MAX_FPS


def plausible_count(count: float) -> bool:
    return math.isfinite(count) and 0 < count < _MAX_FRAMES


def check_file(path: str | Path) -> Path:
    """The path as a ``Path``, or ``VideoError`` when it cannot possibly be a video."""
    p = Path(path)
    if not p.exists():
        raise VideoError(f"video file not found: {p}; check the path")
    if not p.is_file():
        raise VideoError(f"{p} is not a file; pass the path of a video file")
    if p.stat().st_size == 0:
        raise VideoError(f"video file {p} is empty (0 bytes); re-copy or re-export it")
    return p


def open_capture_checked(path: Path, open_capture: OpenCapture | None) -> Capture:
    try:
        cap = (open_capture or open_with_ffmpeg)(str(path))
        opened = cap.isOpened()
    except cv2.error as exc:
        raise VideoError(f"OpenCV could not open {path}: {exc}; {_CONVERT_HINT}") from exc
    if not opened:
        cap.release()
        raise VideoError(
            f"cannot read {path} as a video: it is not a video, is truncated, or uses a codec"
            f" OpenCV cannot decode; {_CONVERT_HINT}"
        )
    return cap


class Cursor:
    """A position in an open video: the last grabbed frame's index and time."""

    def __init__(self, path: Path, open_capture: OpenCapture | None = None) -> None:
        self.path = path
        self._open_capture = open_capture
        self.cap = open_capture_checked(path, open_capture)
        container_fps = self.get(cv2.CAP_PROP_FPS)
        self.container_fps = container_fps if plausible_fps(container_fps) else None
        self.fps = self.container_fps or ASSUMED_FPS
        count = self.get(cv2.CAP_PROP_FRAME_COUNT)
        self.container_frames = int(count) if plausible_count(count) else None
        self.can_seek = self.container_fps is not None and self.container_frames is not None
        self.index = -1  # index of the last grabbed frame
        self.t = -math.inf  # its timestamp in seconds
        self.has_timestamps = True  # until the backend proves otherwise

    @property
    def interval(self) -> float:
        """The nominal time between two frames."""
        return 1.0 / self.fps

    def get(self, prop: int) -> float:
        try:
            return float(self.cap.get(prop))
        except cv2.error as exc:
            raise VideoError(f"OpenCV failed reading {self.path}: {exc}") from exc

    def grab(self) -> bool:
        """Advance one frame without converting it; False at the end (or a broken frame)."""
        try:
            ok = bool(self.cap.grab())
        except cv2.error as exc:
            raise VideoError(f"OpenCV failed decoding {self.path}: {exc}") from exc
        if not ok:
            return False
        pos = self.get(cv2.CAP_PROP_POS_FRAMES)
        self.index = int(pos) - 1 if math.isfinite(pos) and pos >= 1 else self.index + 1
        msec = self.get(cv2.CAP_PROP_POS_MSEC)
        if self.has_timestamps and self.index > 0 and (not math.isfinite(msec) or msec <= 0):
            self.has_timestamps = False  # a backend without timing reports 0 for every frame
        self.t = msec / 1000.0 if self.has_timestamps and math.isfinite(msec) else self.index / self.fps
        return True

    def retrieve(self) -> np.ndarray:
        """The last grabbed frame as a BGR ``uint8`` array."""
        try:
            ok, image = self.cap.retrieve()
        except cv2.error as exc:
            raise VideoError(f"OpenCV failed converting a frame of {self.path} at {self.t:.3f}s: {exc}") from exc
        if not ok or image is None:
            raise VideoError(f"could not decode the frame of {self.path} at {self.t:.3f}s; {_CONVERT_HINT}")
        if image.ndim == 2:
            image = cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)
        return image

    def seek(self, t: float) -> bool:
        """Ask the backend to make the next grab return the frame near ``t``.

        Returns False when the backend refuses. Where the next grab lands is only known
        after it: in variable-frame-rate files OpenCV converts times through the average
        rate, so callers check ``self.t`` after grabbing.
        """
        try:
            ok = bool(self.cap.set(cv2.CAP_PROP_POS_MSEC, max(0.0, t) * 1000.0))
        except cv2.error:
            return False
        self.index, self.t = -1, -math.inf
        return ok

    @property
    def claimed_end(self) -> float | None:
        """Where the container says the video ends, in seconds, if it says."""
        if self.container_frames is None:
            return None
        return self.container_frames / self.fps

    def restart(self) -> None:
        """Reopen the file at its first frame, for when a seek left the capture unusable."""
        self.release()
        self.cap = open_capture_checked(self.path, self._open_capture)
        self.index, self.t = -1, -math.inf

    def __enter__(self) -> Cursor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def release(self) -> None:
        try:
            self.cap.release()
        except cv2.error:  # pragma: no cover - releasing never matters enough to fail
            pass
