"""sample_frames / read_frame_at / uniform_times against stamped frames, so every returned
image is checked to be the frame its timestamp claims."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from memtools.errors import VideoError
from memtools.video import Frame, read_frame_at, sample_frames, uniform_times
from synthetic_video import HidingCapture, read_stamp, stamped_frames, write_raw_mjpeg, write_vfr_mp4, write_video

SEQUENTIAL, SEEKING = math.inf, 0.0  # seek_threshold values forcing one strategy
VFR_DURATIONS = [0.2] * 20 + [0.05] * 20  # frame i starts at VFR_STARTS[i]
VFR_STARTS = [sum(VFR_DURATIONS[:i]) for i in range(40)]


@pytest.fixture(scope="module")
def videos(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("sampling")
    frames = stamped_frames(60)
    return {
        # 60 frames at 10 fps (6 s), mp4v with a keyframe every 12 frames
        "mp4": write_video(d / "cfr.mp4", frames, fps=10.0),
        # the same in MJPG/AVI: every frame is a keyframe
        "avi": write_video(d / "cfr.avi", frames, fps=10.0),
        # 40 frames: 20 x 0.2 s then 20 x 0.05 s; seeks by time land elsewhere
        "vfr": write_vfr_mp4(d / "vfr.mp4", frames[:40], VFR_DURATIONS),
        # no frame count, so no seeking at all
        "mjpeg": write_raw_mjpeg(d / "raw.mjpeg", frames[:40]),
    }


def _checked(frames: list[Frame], fps: float = 10.0) -> list[tuple[float, int]]:
    """(t, index) of each frame, after checking the image is that frame."""
    for f in frames:
        assert isinstance(f.image, np.ndarray) and f.image.shape == (120, 160, 3) and f.image.dtype == np.uint8
        assert read_stamp(f.image) == f.index
        assert f.t == pytest.approx(f.index / fps)
    return [(round(f.t, 3), f.index) for f in frames]


@pytest.mark.parametrize("case", ["mp4", "avi"])
@pytest.mark.parametrize("threshold", [SEQUENTIAL, SEEKING, 1.0])
def test_frames_at_requested_times(videos, case, threshold):
    times = [0.0, 0.3, 0.34, 1.0, 2.56, 4.0, 5.9]
    frames = list(sample_frames(videos[case], times, seek_threshold=threshold))
    assert _checked(frames) == [(0.0, 0), (0.3, 3), (1.0, 10), (2.6, 26), (4.0, 40), (5.9, 59)]


@pytest.mark.parametrize("threshold", [SEQUENTIAL, SEEKING])
def test_order_duplicates_and_the_end(videos, threshold):
    # unsorted, repeated, within one frame after the end (-> last frame), and past it
    times = [5.95, 2.0, 2.0, 2.02, 6.04, 30.0]
    frames = list(sample_frames(videos["mp4"], times, seek_threshold=threshold))
    assert _checked(frames) == [(2.0, 20), (5.9, 59)]


@pytest.mark.parametrize("threshold", [SEQUENTIAL, SEEKING])
def test_variable_frame_rate_is_sampled_by_timestamp(videos, threshold):
    times = [0.5, 1.0, 3.9, 4.2, 4.61, 4.9]
    frames = list(sample_frames(videos["vfr"], times, seek_threshold=threshold))
    for f in frames:
        stamp = read_stamp(f.image)
        assert f.t == pytest.approx(VFR_STARTS[stamp], abs=1e-3), "timestamp must belong to the image"
    # each time gets the first frame starting at or after it (less half the average interval)
    assert [read_stamp(f.image) for f in frames] == [3, 5, 20, 23, 31, 37]


def test_raw_stream_without_frame_count_reads_on(videos):
    frames = list(sample_frames(videos["mjpeg"], [0.0, 0.4, 1.0], seek_threshold=SEEKING))
    assert _checked(frames, fps=25.0) == [(0.0, 0), (0.4, 10), (1.0, 25)]


def test_missing_timestamps_fall_back_to_index_over_fps(videos):
    no_msec = HidingCapture.factory(timestamps=True)
    frames = list(sample_frames(videos["mp4"], [0.0, 1.5, 4.0], seek_threshold=SEQUENTIAL, open_capture=no_msec))
    assert _checked(frames) == [(0.0, 0), (1.5, 15), (4.0, 40)]


def test_truncated_file_yields_what_is_left(tmp_path, videos):
    data = videos["avi"].read_bytes()
    cut = tmp_path / "cut.avi"
    cut.write_bytes(data[: len(data) // 2])
    frames = list(sample_frames(cut, [0.5, 1.0, 5.5], seek_threshold=SEEKING))
    assert _checked(frames) == [(0.5, 5), (1.0, 10)]


def test_read_frame_at(videos):
    frame = read_frame_at(videos["mp4"], 3.3)
    assert (frame.index, read_stamp(frame.image)) == (33, 33)
    assert read_frame_at(videos["mp4"], 6.0).index == 59  # the end of the video shows the last frame
    with pytest.raises(VideoError, match="past its end"):
        read_frame_at(videos["mp4"], 60.0)


def test_frame_is_typed_and_light_to_print(videos):
    frame = read_frame_at(videos["avi"], 0.0)
    assert (frame.width, frame.height) == (160, 120)
    assert "image" not in repr(frame)
    with pytest.raises(AttributeError):
        frame.t = 1.0  # type: ignore[misc]


def test_bad_arguments(videos, tmp_path):
    with pytest.raises(ValueError, match="finite"):
        sample_frames(videos["mp4"], [-1.0])
    with pytest.raises(ValueError, match="finite"):
        sample_frames(videos["mp4"], [math.nan])
    with pytest.raises(VideoError, match="not found"):
        sample_frames(tmp_path / "gone.mp4", [0.0])  # checked before iteration starts
    assert list(sample_frames(videos["mp4"], [])) == []


# --- uniform_times ---------------------------------------------------------------------------


def test_uniform_times_every_sec_takes_bin_centres():
    assert uniform_times(10.0, every_sec=2.0) == pytest.approx([1.0, 3.0, 5.0, 7.0, 9.0])
    # never sparser than asked: 11 s at every 2 s needs 6 bins
    times = uniform_times(11.0, every_sec=2.0)
    assert len(times) == 6 and max(np.diff(times)) <= 2.0
    assert uniform_times(0.5, every_sec=2.0) == [0.25]  # at least one for any positive duration


def test_uniform_times_n_and_start():
    assert uniform_times(6.0, n=3, start=10.0) == pytest.approx([11.0, 13.0, 15.0])
    assert uniform_times(6.0, n=0) == []
    assert uniform_times(0.0, n=4) == []


@pytest.mark.parametrize("kwargs", [{}, {"every_sec": 1.0, "n": 2}, {"every_sec": 0.0}, {"n": -1}])
def test_uniform_times_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        uniform_times(5.0, **kwargs)
