"""What a video is: frame rate, length, size and a content hash, measured rather than trusted.

Containers lie or stay silent: raw MJPEG has no frame count, a truncated AVI claims frames it
no longer has, a variable-frame-rate phone video has no single rate. ``probe`` therefore
checks the container's claims against decoded timestamps: it seeks to the claimed last
frame and reads on to the real end, and when the container knows no length it reads the
whole file through (``grab`` only, nothing is converted).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import cv2
from pydantic import BaseModel, ConfigDict, Field

from memtools.errors import VideoError
from memtools.video._capture import ASSUMED_FPS, Cursor, OpenCapture, check_file

_HASH_CHUNK = 1 << 20  # 1 MiB from each end


class VideoInfo(BaseModel):
    """A probed video. Times are seconds; ``duration`` runs to the end of the last frame."""

    model_config = ConfigDict(frozen=True)

    path: Path
    fps: float = Field(gt=0, description="Nominal (container) or measured frames per second.")
    frame_count: int = Field(ge=1, description="Decodable frames.")
    duration: float = Field(gt=0, description="Seconds from the first frame to the end of the last.")
    width: int = Field(ge=1)
    height: int = Field(ge=1)
    content_hash: str = Field(description="sha256 of the size and the first and last MiB.")

    @property
    def size(self) -> tuple[int, int]:
        """``(width, height)``, the order OpenCV's ``resize`` wants."""
        return (self.width, self.height)


def content_hash(path: str | Path) -> str:
    """A fast fingerprint: sha256 over the file size and its first and last MiB.

    Enough to tell a re-encoded or different file from the one a memory was built from
    without reading gigabytes.
    """
    p = Path(path)
    size = p.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with p.open("rb") as f:
        digest.update(f.read(_HASH_CHUNK))
        if size > _HASH_CHUNK:
            f.seek(max(_HASH_CHUNK, size - _HASH_CHUNK))
            digest.update(f.read(_HASH_CHUNK))
    return digest.hexdigest()


def probe(path: str | Path, *, open_capture: OpenCapture | None = None) -> VideoInfo:
    """Measure a video file.

    Raises ``VideoError`` naming the file when it is missing, empty, not a video, or has
    no decodable frame. ``open_capture`` replaces ``cv2.VideoCapture`` (tests, other
    backends).
    """
    p = check_file(path)
    try:
        fingerprint = content_hash(p)
    except OSError as exc:
        raise VideoError(f"cannot read {p}: {exc}") from exc
    with Cursor(p, open_capture) as cursor:
        if not cursor.grab():
            raise VideoError(
                f"{p} contains no decodable video frame (an audio-only file, or the video stream"
                " is corrupt); check that it plays, or re-encode it"
            )
        width, height = _frame_size(cursor)
        first_t = cursor.t
        count, last_t = _measure_end(cursor)
    span = max(last_t - first_t, 0.0)
    fps = _rate(cursor, count, span)
    return VideoInfo(
        path=p,
        fps=fps,
        frame_count=count,
        # the last frame shows for one nominal interval; a VFR file offers no better guess
        duration=span + 1.0 / fps,
        width=width,
        height=height,
        content_hash=fingerprint,
    )


def _frame_size(cursor: Cursor) -> tuple[int, int]:
    width = int(cursor.get(cv2.CAP_PROP_FRAME_WIDTH))
    height = int(cursor.get(cv2.CAP_PROP_FRAME_HEIGHT))
    if width <= 0 or height <= 0:  # some backends only know after converting a frame
        height, width = cursor.retrieve().shape[:2]
    return width, height


def _measure_end(cursor: Cursor) -> tuple[int, float]:
    """(frame count, timestamp of the last frame), from a cursor on the first frame."""
    claimed = cursor.container_frames
    if cursor.can_seek and claimed is not None and claimed > 2:
        # aim a little before the claimed end, then read on to the real one
        if cursor.seek((claimed - 2) / cursor.fps) and cursor.grab():
            last_index, last_t = cursor.index, cursor.t
            while cursor.grab():
                last_index, last_t = cursor.index, max(last_t, cursor.t)
            # after a seek OpenCV derives frame numbers from timestamps and the average
            # rate; believe them only where they agree (constant frame rate)
            if abs(last_t * cursor.fps - last_index) < 1.5:
                return last_index + 1, last_t
            return claimed, last_t
        cursor.restart()  # the claimed end is not there (truncated file, broken index)
        if not cursor.grab():
            raise VideoError(f"{cursor.path} stopped decoding after a seek; re-encode it")
    count, last_t = cursor.index + 1, cursor.t
    while cursor.grab():
        count, last_t = count + 1, max(last_t, cursor.t)
    return count, last_t


def _rate(cursor: Cursor, count: int, span: float) -> float:
    if cursor.container_fps is not None:
        return cursor.container_fps
    if cursor.has_timestamps and count > 1 and span > 0:
        return (count - 1) / span  # measured from the decoded timestamps
    return ASSUMED_FPS
