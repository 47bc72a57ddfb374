"""Frames to JPEG bytes for vision-language models: bounded in pixels and in bytes."""

from __future__ import annotations

import cv2
import numpy as np

from memtools.errors import VideoError

DEFAULT_MAX_SIDE = 768
DEFAULT_MAX_BYTES = 256_000
_QUALITY_STEP = 10
_MIN_QUALITY = 30
_MIN_SIDE = 32


def fit_within(image: np.ndarray, max_side: int) -> np.ndarray:
    """Downscale (never upscale) so the longer side is at most ``max_side``, keeping aspect."""
    height, width = image.shape[:2]
    longest = max(height, width)
    if longest <= max_side:
        return image
    scale = max_side / longest
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    return cv2.resize(image, size, interpolation=cv2.INTER_AREA)


def encode_jpeg(
    image: np.ndarray,
    max_side: int = DEFAULT_MAX_SIDE,
    max_bytes: int | None = DEFAULT_MAX_BYTES,
    quality: int = 90,
) -> bytes:
    """JPEG bytes of a BGR (or grayscale) ``uint8`` image.

    The image is first fitted within ``max_side``; then the quality is lowered in steps of
    10 (down to 30) until the result is at most ``max_bytes``; if even that is too large
    the image is shrunk further. ``VideoError`` if it cannot fit.
    """
    if not isinstance(image, np.ndarray) or image.dtype != np.uint8 or image.ndim not in (2, 3):
        raise ValueError("encode_jpeg wants a uint8 image of shape (H, W) or (H, W, 3)")
    if image.ndim == 3 and image.shape[2] not in (1, 3):
        raise ValueError(f"encode_jpeg wants 1 or 3 channels (BGR), got {image.shape[2]}")
    if max_side < 1 or not 1 <= quality <= 100:
        raise ValueError("max_side must be >= 1 and quality within 1-100")
    side = max_side
    while True:
        fitted = fit_within(image, side)
        q = quality
        while True:
            data = _imencode(fitted, q)
            if max_bytes is None or len(data) <= max_bytes:
                return data
            if q <= _MIN_QUALITY:
                break
            q = max(_MIN_QUALITY, q - _QUALITY_STEP)
        side = int(max(fitted.shape[:2]) * 0.7)
        if side < _MIN_SIDE:
            raise VideoError(f"cannot encode a frame as JPEG within {max_bytes} bytes; raise max_bytes")


def _imencode(image: np.ndarray, quality: int) -> bytes:
    try:
        ok, buf = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
    except cv2.error as exc:
        raise VideoError(f"OpenCV could not encode a frame as JPEG: {exc}") from exc
    if not ok:
        raise VideoError("OpenCV could not encode a frame as JPEG")
    return buf.tobytes()


def decode_jpeg(data: bytes) -> np.ndarray:
    """A BGR image from JPEG (or PNG) bytes; ``VideoError`` if they are not an image."""
    array = np.frombuffer(data, dtype=np.uint8)
    image = cv2.imdecode(array, cv2.IMREAD_COLOR) if array.size else None
    if image is None:
        raise VideoError("the bytes are not a JPEG or PNG image")
    return image
