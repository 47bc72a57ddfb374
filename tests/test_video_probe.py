"""probe(): real files written by the tests, including the awkward ones."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

import memtools.video as video
from memtools.errors import VideoError
from memtools.video import VideoInfo, content_hash, probe
from synthetic_video import HidingCapture, stamped_frames, write_raw_mjpeg, write_vfr_mp4, write_video

EXPORTED = {
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
}


def test_public_api_is_pinned():
    assert set(video.__all__) == EXPORTED
    for name in EXPORTED - {"OpenCapture"}:  # defined in memtools.video (not a stray re-export of something else)
        obj = getattr(video, name)
        assert getattr(obj, "__module__", "memtools.video").startswith("memtools.video"), name
    assert callable(video.OpenCapture)  # a type alias of a callable


@pytest.fixture(scope="module")
def videos(tmp_path_factory) -> dict[str, Path]:
    """One file per container case, 40 stamped frames each."""
    d = tmp_path_factory.mktemp("probe")
    frames = stamped_frames(40)
    return {
        # constant 10 fps mp4v: the common case
        "mp4": write_video(d / "cfr.mp4", frames, fps=10.0),
        # MJPG in AVI at 25 fps: another container and codec
        "avi": write_video(d / "cfr.avi", frames, fps=25.0),
        # variable frame rate: 20 frames of 0.2 s, then 20 frames of 0.05 s (5 s in all)
        "vfr": write_vfr_mp4(d / "vfr.mp4", frames, [0.2] * 20 + [0.05] * 20),
        # raw MJPEG: no frame count, FFmpeg assumes 25 fps
        "mjpeg": write_raw_mjpeg(d / "raw.mjpeg", frames),
    }


@pytest.mark.parametrize(("case", "fps", "duration"), [("mp4", 10.0, 4.0), ("avi", 25.0, 1.6)])
def test_probe_constant_frame_rate(videos, case, fps, duration):
    info = probe(videos[case])
    assert info.fps == pytest.approx(fps)
    assert info.frame_count == 40
    assert info.duration == pytest.approx(duration)
    assert (info.width, info.height) == (160, 120) == info.size
    assert info.path == videos[case]
    assert len(info.content_hash) == 64


def test_probe_variable_frame_rate_uses_timestamps(videos):
    info = probe(videos["vfr"])
    assert info.frame_count == 40
    # the last frame starts at 4.95 s; it lasts one average interval (40 frames / 5 s)
    assert info.duration == pytest.approx(4.95 + 1 / info.fps, abs=1e-3)
    assert info.fps == pytest.approx(8.0)


def test_probe_raw_mjpeg_without_frame_count_reads_through(videos):
    info = probe(videos["mjpeg"])
    assert info.frame_count == 40
    assert info.duration == pytest.approx(info.frame_count / info.fps)


def test_probe_without_fps_measures_it_from_timestamps(videos):
    info = probe(videos["mp4"], open_capture=HidingCapture.factory(fps=True, count=True))
    assert info.frame_count == 40
    assert info.fps == pytest.approx(10.0)
    assert info.duration == pytest.approx(4.0)


def test_probe_without_any_timing_assumes_30_fps(videos):
    hide_all = HidingCapture.factory(fps=True, count=True, timestamps=True)
    info = probe(videos["mp4"], open_capture=hide_all)
    assert info.fps == video.ASSUMED_FPS == 30.0
    assert info.frame_count == 40
    assert info.duration == pytest.approx(40 / 30)


def test_probe_truncated_avi_counts_the_frames_that_are_left(tmp_path, videos):
    data = videos["avi"].read_bytes()
    cut = tmp_path / "cut.avi"
    cut.write_bytes(data[: len(data) // 2])  # the header still claims 40 frames
    info = probe(cut)
    assert 10 < info.frame_count < 40
    assert info.duration == pytest.approx(info.frame_count / 25.0)


def test_video_info_is_frozen_and_serialisable(videos):
    info = probe(videos["mp4"])
    with pytest.raises(ValidationError, match="frozen"):
        info.fps = 1.0  # type: ignore[misc]
    assert VideoInfo.model_validate_json(info.model_dump_json()) == info


def test_content_hash_is_stable_and_sees_changes(tmp_path, videos):
    assert content_hash(videos["mp4"]) == content_hash(videos["mp4"]) == probe(videos["mp4"]).content_hash
    big = tmp_path / "big.bin"
    big.write_bytes(b"a" * (3 << 20))
    before = content_hash(big)
    big.write_bytes(b"a" * (3 << 20) + b"b")  # only the tail and size change
    assert content_hash(big) != before


# --- files that are not (or no longer) videos ------------------------------------------------


def _bad_files(tmp_path: Path, videos: dict[str, Path]) -> dict[str, Path]:
    text = tmp_path / "notes.mp4"
    text.write_text("this is a shopping list, not a video\n" * 20)
    empty = tmp_path / "empty.mp4"
    empty.touch()
    data = videos["mp4"].read_bytes()
    truncated = tmp_path / "truncated.mp4"
    truncated.write_bytes(data[: len(data) // 2])  # mp4v puts the index (moov) at the end
    return {
        "missing": tmp_path / "nowhere.mp4",
        "directory": tmp_path,
        "empty": empty,
        "text": text,
        "truncated": truncated,
    }


@pytest.mark.parametrize(
    ("case", "says"),
    [
        ("missing", "not found"),
        ("directory", "not a file"),
        ("empty", "empty"),
        ("text", "cannot read"),
        ("truncated", "cannot read"),
    ],
)
def test_unreadable_files_raise_video_error_naming_the_file(tmp_path, videos, case, says):
    path = _bad_files(tmp_path, videos)[case]
    with pytest.raises(VideoError) as err:
        probe(path)
    message = str(err.value)
    assert str(path) in message
    assert says in message


def test_errors_say_what_to_do(tmp_path, videos):
    with pytest.raises(VideoError, match="ffmpeg"):
        probe(_bad_files(tmp_path, videos)["text"])
