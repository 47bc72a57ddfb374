"""encode_jpeg: bounded pixels, bounded bytes, honest errors."""

from __future__ import annotations

import numpy as np
import pytest

from memtools.errors import VideoError
from memtools.video import decode_jpeg, encode_jpeg, fit_within
from synthetic_video import scene


def noise_image(height: int, width: int) -> np.ndarray:
    """Incompressible content: the worst case for a byte budget."""
    return np.random.default_rng(0).integers(0, 256, size=(height, width, 3), dtype=np.uint8)


def test_downscales_keeping_aspect_and_never_upscales():
    big = np.kron(scene(0), np.ones((10, 10, 1), np.uint8))  # 1600x1200
    out = decode_jpeg(encode_jpeg(big, max_side=768))
    assert out.shape == (576, 768, 3)
    assert decode_jpeg(encode_jpeg(scene(0), max_side=768)).shape == (120, 160, 3)
    assert fit_within(scene(0), 80).shape == (60, 80, 3)


def test_lowers_quality_until_under_max_bytes():
    image = noise_image(480, 640)
    unbounded = encode_jpeg(image, max_bytes=None)
    bounded = encode_jpeg(image, max_bytes=len(unbounded) // 2)
    assert len(bounded) <= len(unbounded) // 2
    assert decode_jpeg(bounded).shape == (480, 640, 3)  # quality went down, size did not


def test_shrinks_when_quality_alone_is_not_enough():
    image = noise_image(480, 640)
    data = encode_jpeg(image, max_bytes=20_000)
    assert len(data) <= 20_000
    assert decode_jpeg(data).shape[1] < 640


def test_impossible_budget_raises_video_error():
    with pytest.raises(VideoError, match="max_bytes"):
        encode_jpeg(noise_image(120, 160), max_bytes=100)


def test_grayscale_and_bad_inputs():
    gray = scene(0)[:, :, 0]
    assert decode_jpeg(encode_jpeg(gray)).shape == (120, 160, 3)
    with pytest.raises(ValueError):
        encode_jpeg(scene(0).astype(np.float32))
    with pytest.raises(ValueError):
        encode_jpeg(np.zeros((10, 10, 4), np.uint8))
    with pytest.raises(VideoError):
        decode_jpeg(b"not an image")
    with pytest.raises(VideoError):
        decode_jpeg(b"")
