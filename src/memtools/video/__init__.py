"""Video input: probe a file, sample frames by time, pick keyframes, encode them for VLMs.

    info = probe("talk.mp4")
    config = KeyframeConfig.default()
    frames = sample_frames(info.path, uniform_times(info.duration, every_sec=config.sample_every_sec))
    keyframes = select_keyframes(frames, config)
    jpegs = [(f.t, encode_jpeg(f.image)) for f in keyframes]

Everything OpenCV raises comes out as ``VideoError`` naming the file.
"""

from memtools.video._capture import ASSUMED_FPS, Capture, OpenCapture
from memtools.video.encode import decode_jpeg, encode_jpeg, fit_within
from memtools.video.keyframes import (
    AnalyzedFrame,
    BlurGate,
    DuplicateGate,
    KeyframeConfig,
    KeyframeGate,
    KeyframeSelector,
    KeyframeStats,
    StaticGate,
    analyze,
    mean_abs_diff,
    select_keyframes,
    ssim,
)
from memtools.video.probe import VideoInfo, content_hash, probe
from memtools.video.sampling import DEFAULT_SEEK_THRESHOLD, Frame, read_frame_at, sample_frames, uniform_times

__all__ = [
    "ASSUMED_FPS",
    "DEFAULT_SEEK_THRESHOLD",
    "AnalyzedFrame",
    "BlurGate",
    "Capture",
    "DuplicateGate",
    "Frame",
    "KeyframeConfig",
    "KeyframeGate",
    "KeyframeSelector",
    "KeyframeStats",
    "OpenCapture",
    "StaticGate",
    "VideoInfo",
    "analyze",
    "content_hash",
    "decode_jpeg",
    "encode_jpeg",
    "fit_within",
    "mean_abs_diff",
    "probe",
    "read_frame_at",
    "sample_frames",
    "select_keyframes",
    "ssim",
    "uniform_times",
]
