"""Audio tracks decoded with real PyAV: resampled to 16 kHz mono, in chunks; no track is normal."""

from __future__ import annotations

import numpy as np
import pytest

from audio_video import corrupt_audio, tone, write_av_video
from memtools.errors import VideoError
from memtools.video.audio import SAMPLE_RATE, audio_duration, has_audio, iter_audio, read_audio


def _pitch(samples: np.ndarray) -> float:
    spectrum = np.abs(np.fft.rfft(samples))
    return float(np.argmax(spectrum) * SAMPLE_RATE / len(samples))


def test_a_stereo_44k_track_comes_out_as_16k_mono_chunks_in_time_order(tmp_path):
    video = write_av_video(tmp_path / "tone.mp4", 5.0, audio=tone(5.0, 440.0), rate=44_100, stereo=True)
    assert has_audio(video) and audio_duration(video) == pytest.approx(5.0, abs=0.1)
    chunks = list(iter_audio(video, chunk_sec=2.0))
    assert [c.t_start for c in chunks] == [0.0, 2.0, 4.0]
    assert [len(c.samples) for c in chunks[:2]] == [2 * SAMPLE_RATE, 2 * SAMPLE_RATE]
    assert all(c.samples.dtype == np.float32 and c.samples.ndim == 1 for c in chunks)
    assert 0.9 <= chunks[-1].duration <= 1.2  # what is left, not padded
    assert _pitch(chunks[1].samples) == pytest.approx(440.0, abs=2.0)  # resampled, not sped up or slowed down
    assert 0.3 < float(np.abs(chunks[1].samples).max()) < 1.0  # both channels mixed down, not clipped


def test_a_window_is_cut_exactly(tmp_path):
    video = write_av_video(tmp_path / "tone.mp4", 6.0, audio=tone(6.0, 300.0, rate=22_050), rate=22_050)
    chunks = list(iter_audio(video, chunk_sec=1.0, start_sec=2.5, end_sec=4.2))
    assert [round(c.t_start, 3) for c in chunks] == [2.5, 3.5]
    assert sum(len(c.samples) for c in chunks) == int(round(1.7 * SAMPLE_RATE))
    whole = read_audio(video, 1.0, 2.0)
    assert whole.t_start == 1.0 and len(whole.samples) == SAMPLE_RATE


def test_a_video_without_audio_has_no_chunks(tmp_path):
    video = write_av_video(tmp_path / "silent.mp4", 3.0, audio=None)
    assert not has_audio(video)
    assert list(iter_audio(video)) == []
    assert audio_duration(video) == 0.0 and len(read_audio(video).samples) == 0


def test_corrupt_audio_is_a_video_error_naming_the_file(tmp_path):
    video = corrupt_audio(write_av_video(tmp_path / "broken.mp4", 4.0, audio=tone(4.0)))
    assert has_audio(video)  # the container itself is fine
    with pytest.raises(VideoError, match=r"cannot decode the audio of .*broken\.mp4"):
        list(iter_audio(video))


def test_missing_and_non_media_files_are_video_errors(tmp_path):
    with pytest.raises(VideoError, match="no such video file"):
        has_audio(tmp_path / "nope.mp4")
    junk = tmp_path / "notes.mp4"
    junk.write_text("this is not a video")
    with pytest.raises(VideoError, match=r"cannot open .*notes\.mp4"):
        list(iter_audio(junk))
