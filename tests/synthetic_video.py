"""Tiny synthetic videos for tests, written with OpenCV. Import freely from any test.

Frames are 160x120 BGR. ``scene(k)`` is a sharp, textured picture unique to ``k``;
``stamp(image, i)`` burns a frame number into the top rows as a barcode that survives
mp4v / MJPEG compression, and ``read_stamp`` reads it back, so a test can tell exactly
which frame a decoder returned. Writers:

- ``write_video``      mp4v ``.mp4`` or MJPG ``.avi`` (constant frame rate)
- ``write_vfr_mp4``    a variable-frame-rate ``.mp4``: written at a constant rate, then the
                       sample durations (the ``stts`` box) are rewritten
- ``write_raw_mjpeg``  concatenated JPEGs: a stream with no frame count and no real rate
- ``HidingCapture``    wraps ``cv2.VideoCapture`` and hides its fps / frame count /
                       timestamps, for containers that lack them
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from pathlib import Path

import cv2
import numpy as np

WIDTH, HEIGHT = 160, 120
_BITS = 8
_CELL_W, _CELL_H = WIDTH // _BITS, 16


def scene(k: int, *, width: int = WIDTH, height: int = HEIGHT) -> np.ndarray:
    """A sharp picture unique to ``k``: random filled rectangles and circles on a tinted ground."""
    rng = np.random.default_rng(1000 + k)
    image = np.empty((height, width, 3), np.uint8)
    image[:] = rng.integers(30, 220, size=3, dtype=np.uint8)
    for _ in range(14):
        color = tuple(int(c) for c in rng.integers(0, 256, size=3))
        x, y = int(rng.integers(0, width)), int(rng.integers(0, height))
        if rng.random() < 0.5:
            cv2.rectangle(image, (x, y), (x + int(rng.integers(8, 60)), y + int(rng.integers(8, 45))), color, -1)
        else:
            cv2.circle(image, (x, y), int(rng.integers(5, 25)), color, -1)
    return image


def pan(k: int, offset: int) -> np.ndarray:
    """Scene ``k`` seen through a window shifted ``offset`` px right over a wider canvas."""
    canvas = scene(k, width=WIDTH * 3)
    return np.ascontiguousarray(canvas[:, offset : offset + WIDTH])


def blurred(image: np.ndarray, ksize: int = 21) -> np.ndarray:
    """Heavy Gaussian blur: a frame the blur gate must drop."""
    return cv2.GaussianBlur(image, (ksize, ksize), 0)


def stamp(image: np.ndarray, index: int) -> np.ndarray:
    """A copy of ``image`` with ``index`` (0-255) burnt into the top rows as a barcode."""
    out = image.copy()
    for bit in range(_BITS):
        on = (index >> bit) & 1
        x = bit * _CELL_W
        out[0:_CELL_H, x : x + _CELL_W] = 255 if on else 0
    return out


def read_stamp(image: np.ndarray) -> int:
    """The frame number ``stamp`` burnt into ``image``."""
    gray = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    value = 0
    for bit in range(_BITS):
        x = bit * _CELL_W
        cell = gray[3 : _CELL_H - 3, x + 3 : x + _CELL_W - 3]
        value |= int(cell.mean() > 127) << bit
    return value


def stamped_frames(n: int, scenes_every: int = 10) -> list[np.ndarray]:
    """``n`` stamped frames, the background changing scene every ``scenes_every`` frames."""
    return [stamp(scene(i // scenes_every), i) for i in range(n)]


def noisy(image: np.ndarray, seed: int, amplitude: int = 3) -> np.ndarray:
    """``image`` with mild sensor noise: a static shot that is not bit-identical."""
    noise = np.random.default_rng(seed).integers(-amplitude, amplitude + 1, size=image.shape)
    return np.clip(image.astype(np.int16) + noise, 0, 255).astype(np.uint8)


STORY_FPS = 10.0
STORY = (
    # (start s, end s, what the keyframe gates should do there)
    (0.0, 3.0, "static shot of scene 0 with sensor noise: one keyframe, the rest static"),
    (3.0, 4.0, "scene 1 heavily blurred: dropped as blurry"),
    (4.0, 6.0, "scene 1 sharp: one keyframe"),
    (6.0, 8.0, "camera pans over scene 2, 5 px per frame: a keyframe every few samples"),
    (8.0, 10.0, "cut back to scene 0: a near-duplicate of the first keyframe"),
    (10.0, 20.0, "scene 3, identical frames for 10 s: only max-gap keyframes"),
)


def story_frames() -> list[np.ndarray]:
    """20 s at ``STORY_FPS`` following ``STORY``: every case of keyframe selection once."""
    frames = []
    for i in range(int(20 * STORY_FPS)):
        t = i / STORY_FPS
        if t < 3.0:
            frames.append(noisy(scene(0), i))
        elif t < 4.0:
            frames.append(blurred(scene(1)))
        elif t < 6.0:
            frames.append(noisy(scene(1), i))
        elif t < 8.0:
            frames.append(pan(2, round((t - 6.0) * STORY_FPS) * 5))
        elif t < 10.0:
            frames.append(noisy(scene(0), i))
        else:
            frames.append(scene(3))
    return frames


def write_video(path: Path, frames: Iterable[np.ndarray], fps: float = 10.0) -> Path:
    """mp4v for ``.mp4``/``.mov``, MJPG for ``.avi``/``.mkv``; constant frame rate."""
    fourcc = "mp4v" if path.suffix in (".mp4", ".mov") else "MJPG"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*fourcc), fps, (WIDTH, HEIGHT))
    assert writer.isOpened(), f"OpenCV cannot write {path}"
    for frame in frames:
        writer.write(frame)
    writer.release()
    return path


def write_raw_mjpeg(path: Path, frames: Iterable[np.ndarray]) -> Path:
    """Concatenated JPEGs: FFmpeg reads them as a stream with no count and an assumed rate."""
    with path.open("wb") as f:
        for frame in frames:
            ok, buf = cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, 90])
            assert ok
            f.write(buf.tobytes())
    return path


# --- variable frame rate: rewrite the sample durations of an OpenCV-written mp4 ------------

_CONTAINERS = {b"moov", b"trak", b"mdia", b"minf", b"stbl", b"edts"}


def _boxes(buf: bytes | bytearray, start: int, end: int) -> Iterable[tuple[int, int, bytes]]:
    while start < end:
        size, kind = struct.unpack(">I4s", buf[start : start + 8])
        yield start, size, kind
        start += size


def _find(buf: bytearray, start: int, end: int, kind: bytes) -> list[tuple[int, int]]:
    """(offset, size) of every box from the top down to the first ``kind`` box."""
    for off, size, k in _boxes(buf, start, end):
        if k == kind:
            return [(off, size)]
        if k in _CONTAINERS:
            found = _find(buf, off + 8, off + size, kind)
            if found:
                return [(off, size), *found]
    return []


def write_vfr_mp4(path: Path, frames: Sequence[np.ndarray], durations: Sequence[float]) -> Path:
    """An mp4 whose frame ``i`` lasts ``durations[i]`` seconds.

    OpenCV writes constant-rate mp4 with the ``moov`` box after the media data, so the
    ``stts`` box can grow without moving any chunk offset; the durations in ``mdhd``,
    ``mvhd``, ``tkhd`` and ``elst`` are updated to match.
    """
    assert len(frames) == len(durations)
    write_video(path, frames, fps=10.0)
    buf = bytearray(path.read_bytes())
    (mdhd_off, _), = _find(buf, 0, len(buf), b"mdhd")[-1:]
    timescale = struct.unpack_from(">I", buf, mdhd_off + 20)[0]
    deltas = [max(1, round(d * timescale)) for d in durations]
    runs: list[list[int]] = []
    for d in deltas:
        if runs and runs[-1][1] == d:
            runs[-1][0] += 1
        else:
            runs.append([1, d])
    body = struct.pack(">II", 0, len(runs)) + b"".join(struct.pack(">II", n, d) for n, d in runs)
    stts = struct.pack(">I4s", 8 + len(body), b"stts") + body
    *parents, (stts_off, stts_size) = _find(buf, 0, len(buf), b"stts")
    buf[stts_off : stts_off + stts_size] = stts
    for off, size in parents:
        struct.pack_into(">I", buf, off, size + len(stts) - stts_size)
    media_units = sum(deltas)
    mdhd_off = _find(buf, 0, len(buf), b"mdhd")[-1][0]
    struct.pack_into(">I", buf, mdhd_off + 24, media_units)
    mvhd_off = _find(buf, 0, len(buf), b"mvhd")[-1][0]
    movie_units = round(media_units / timescale * struct.unpack_from(">I", buf, mvhd_off + 20)[0])
    struct.pack_into(">I", buf, mvhd_off + 24, movie_units)
    struct.pack_into(">I", buf, _find(buf, 0, len(buf), b"tkhd")[-1][0] + 28, movie_units)
    elst = _find(buf, 0, len(buf), b"elst")
    if elst:
        struct.pack_into(">I", buf, elst[-1][0] + 16, movie_units)
    path.write_bytes(bytes(buf))
    return path


# --- a capture that hides what some containers lack -----------------------------------------


class HidingCapture:
    """``cv2.VideoCapture`` with some properties reported as unknown (0), like containers
    without a frame rate, a frame count or timestamps. Use as ``open_capture=``::

        probe(path, open_capture=HidingCapture.factory(fps=True, count=True))
    """

    def __init__(self, path: str, *, fps: bool = False, count: bool = False, timestamps: bool = False) -> None:
        self._cap = cv2.VideoCapture(path, cv2.CAP_FFMPEG)
        self._hidden = set()
        if fps:
            self._hidden.add(cv2.CAP_PROP_FPS)
        if count:
            self._hidden.add(cv2.CAP_PROP_FRAME_COUNT)
        if timestamps:
            self._hidden.add(cv2.CAP_PROP_POS_MSEC)

    @classmethod
    def factory(cls, **hide: bool):  # noqa: ANN206 - a callable for open_capture=
        return lambda path: cls(path, **hide)

    def isOpened(self) -> bool:  # noqa: N802 - OpenCV's spelling
        return self._cap.isOpened()

    def grab(self) -> bool:
        return self._cap.grab()

    def retrieve(self) -> tuple[bool, np.ndarray | None]:
        return self._cap.retrieve()

    def get(self, prop_id: int) -> float:
        return 0.0 if prop_id in self._hidden else self._cap.get(prop_id)

    def set(self, prop_id: int, value: float) -> bool:
        return self._cap.set(prop_id, value)

    def release(self) -> None:
        self._cap.release()
