"""Speaker embeddings on numpy (Resemblyzer's GE2E weights read without torch), clustering, and the DER.

The encoder is compared against numbers the real ``resemblyzer`` (with torch) gave for the same
signal (``golden/voice_ge2e.json``); the diarisation test speaks a conversation with espeak-ng
voices at test time (synthetic voices, nothing downloaded).
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest

from memtools.errors import ConfigError
from memtools.speech import Utterance
from memtools.speech.der import diarisation_error_rate
from memtools.speech.speakers import assign_speakers, cluster
from memtools.speech.synthetic import conversation, espeak_available
from memtools.speech.voice import VoiceEncoder, mel_spectrogram
from memtools.speech.voice_weights import available, read_torch_checkpoint

GOLDEN = Path(__file__).parent / "golden" / "voice_ge2e.json"
needs_weights = pytest.mark.skipif(not available(), reason="needs pip install --no-deps resemblyzer")
needs_espeak = pytest.mark.skipif(not espeak_available(), reason="needs espeak-ng (apt-get install espeak-ng)")


def _golden_signal() -> np.ndarray:
    """2.5 s of a voice-like buzz: 11 harmonics of a wavering 140 Hz, amplitude-modulated, a little noise."""
    rate = 16000
    t = np.arange(int(2.5 * rate)) / rate
    f0 = 140 + 25 * np.sin(2 * np.pi * 3 * t)
    phase = 2 * np.pi * np.cumsum(f0) / rate
    x = sum(np.sin(k * phase) / k for k in range(1, 12)) * (0.6 + 0.4 * np.sin(2 * np.pi * 4 * t))
    x = x + 0.05 * np.random.default_rng(0).standard_normal(len(t))
    return (0.1 * x).astype(np.float32)


def test_the_mel_spectrogram_is_librosas():
    golden = json.loads(GOLDEN.read_text())
    mel = mel_spectrogram(_golden_signal())
    assert mel.shape == (golden["mel_frames"], 40)
    np.testing.assert_allclose(mel.sum(axis=0), golden["mel_band_sums"], rtol=1e-4, atol=1e-3)


@needs_weights
def test_the_numpy_encoder_gives_resemblyzers_embedding():
    golden = np.array(json.loads(GOLDEN.read_text())["embedding"], dtype=np.float32)
    vector = VoiceEncoder().embed([_golden_signal()])[0]
    assert vector.shape == (256,) and abs(float(np.linalg.norm(vector)) - 1) < 1e-5
    np.testing.assert_allclose(vector, golden, atol=1e-4)


def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("zipped", [False, True])
def test_torch_checkpoints_read_without_torch(tmp_path, zipped):
    torch = _torch()
    w = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    state = {"model_state": {"a": w, "b_t": w.t(), "c": w[1:, 2:], "n": torch.tensor([7], dtype=torch.int64)},
             "step": 5}
    path = tmp_path / "w.pt"
    torch.save(state, path, _use_new_zipfile_serialization=zipped)
    read = read_torch_checkpoint(path)
    assert read["step"] == 5
    for key, tensor in state["model_state"].items():
        np.testing.assert_array_equal(read["model_state"][key], tensor.numpy())


class _Boom:
    def __reduce__(self):
        return (print, ("this must never run",))


def test_a_checkpoint_that_would_run_code_is_refused(tmp_path, capsys):
    path = tmp_path / "evil.pt"
    path.write_bytes(pickle.dumps(0x1950A86A20F9469CFC6C, protocol=2) + pickle.dumps(1001, protocol=2)
                     + pickle.dumps({}, protocol=2) + pickle.dumps(_Boom(), protocol=2))
    with pytest.raises(ConfigError, match="refusing to load it"):
        read_torch_checkpoint(path)
    assert "never run" not in capsys.readouterr().out


def test_missing_weights_say_how_to_get_them(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMTOOLS_VOICE_WEIGHTS", str(tmp_path / "nothing.pt"))
    with pytest.raises(ConfigError, match="pip install --no-deps resemblyzer"):
        VoiceEncoder()


def test_clusters_are_numbered_in_order_of_first_appearance():
    rng = np.random.default_rng(1)
    centres = np.eye(3)
    rows = [2, 0, 2, 1, 0, 1, 2]
    vectors = np.array([centres[r] + 0.05 * rng.standard_normal(3) for r in rows])
    assert cluster(vectors).tolist() == [0, 1, 0, 2, 1, 2, 0]
    assert cluster(vectors, threshold=1.5).tolist() == [0] * 7
    assert cluster(np.zeros((0, 3))).tolist() == []


def test_many_utterances_are_clustered_on_a_sample_and_the_rest_join_the_nearest():
    rng = np.random.default_rng(2)
    rows = rng.integers(0, 4, size=400)
    vectors = np.eye(4)[rows] + 0.05 * rng.standard_normal((400, 4))
    exact, sampled = cluster(vectors), cluster(vectors, max_rows=50)
    assert exact.tolist() == sampled.tolist() and len(set(exact.tolist())) == 4


def test_known_speakers_keep_their_names_and_the_rest_get_labels():
    said = [Utterance(t_start=i, t_end=i + 1, text=f"line {i}", speaker="Roger" if i == 1 else None)
            for i in range(4)]
    vectors = np.array([[1, 0], [0, 1], [0.99, 0.05], [0.02, 1]], dtype=np.float32)
    out, voices = assign_speakers(said, vectors)
    assert [u.speaker for u in out] == ["S1", "Roger", "S1", "S2"]
    assert [(v.label, v.utterances, v.seconds) for v in voices] == [("S1", 2, 2.0), ("S2", 1, 1.0)]
    assert abs(float(np.linalg.norm(voices[0].centroid)) - 1) < 1e-4


def test_der_counts_missed_invented_and_confused_time():
    ref = [(0.0, 10.0, "A"), (10.0, 20.0, "B")]
    assert diarisation_error_rate(ref, [(0.0, 10.0, "x"), (10.0, 20.0, "y")]) == pytest.approx(0.0)
    assert diarisation_error_rate(ref, [(0.0, 20.0, "x")]) == pytest.approx(0.5)  # one speaker: B confused
    assert diarisation_error_rate(ref, [(0.0, 10.0, "x")]) == pytest.approx(0.5)  # B missed
    assert diarisation_error_rate(ref, [(0.0, 10.0, "x"), (10.0, 20.0, "y"), (20.0, 25.0, "y")]) == \
        pytest.approx(0.25)  # 5 s invented
    assert diarisation_error_rate(ref, [(0.0, 5.0, "y"), (5.0, 20.0, "x")]) == pytest.approx(0.25)


@needs_weights
@needs_espeak
def test_a_conversation_is_diarised_better_than_the_baselines():
    order = [0, 1, 0, 2, 1, 2, 0, 1, 2]  # three synthetic voices taking turns
    audio, turns = conversation(order)
    clips = [audio[int(a * 16000):int(b * 16000)] for a, b, _ in turns]
    labels = cluster(VoiceEncoder().embed(clips))
    hypothesis = [(a, b, f"S{n}") for (a, b, _), n in zip(turns, labels, strict=True)]
    ours = diarisation_error_rate(turns, hypothesis)
    one_speaker = diarisation_error_rate(turns, [(a, b, "S1") for a, b, _ in turns])
    assert one_speaker > 0.5
    assert ours < 0.1 and len(set(labels.tolist())) == 3


def test_a_deleted_video_takes_its_voices_along(tmp_path):
    from memtools.embed import TestEmbedder
    from memtools.speech.speakers import Voice
    from memtools.store import Memory
    from memtools.store.tables.voices import load_voices, save_voices
    from memtools.testing import kitchen_graph

    with Memory.create(tmp_path / "m", TestEmbedder(16)) as memory:
        memory.write_video(kitchen_graph())
        save_voices(memory.path, "kitchen", [Voice(label="S1", centroid=[1.0, 0.0], utterances=2, seconds=3.5)])
        assert [v.label for v in load_voices(memory.path, "kitchen")] == ["S1"]
        assert memory.delete_video("kitchen")
        assert load_voices(memory.path, "kitchen") == [] and not (memory.path / "voices" / "kitchen.json").exists()


class _PitchVoices:
    """A stand-in voice encoder (the model boundary): a clip's vector is its dominant pitch on a circle."""

    name = "pitch"

    def __init__(self) -> None:
        self.clips = 0

    def embed(self, clips):
        self.clips += len(clips)
        out = []
        for c in clips:
            hz = np.argmax(np.abs(np.fft.rfft(c))) * 16000 / len(c)
            out.append([np.cos(hz / 1000), np.sin(hz / 1000)])
        return np.array(out, dtype=np.float32)


async def test_the_speaker_stage_labels_from_the_audio_and_resumes_from_its_checkpoint(tmp_path):
    from audio_video import tone, write_av_video
    from memtools.builder.checkpoint import Checkpoints
    from memtools.builder.speakers import label_speakers

    low, high, hush = tone(2.0, 220, 16000), tone(2.0, 1500, 16000), np.zeros(16000, np.float32)
    audio = np.concatenate([low, hush, high, hush, low, hush, high])  # turns at 0, 3, 6, 9 s
    video = write_av_video(tmp_path / "v.mp4", 12.0, audio=audio, rate=16000)
    said = [Utterance(t_start=t, t_end=t + 2.0, text=f"line {t:g}") for t in (0.0, 3.0, 6.0, 9.0)]
    encoder, checkpoints = _PitchVoices(), Checkpoints(tmp_path / "work")
    out, voices = await label_speakers(encoder, video, said, checkpoints)
    assert [u.speaker for u in out] == ["S1", "S2", "S1", "S2"] and [v.utterances for v in voices] == [2, 2]
    again, _ = await label_speakers(encoder, video, said, checkpoints)
    assert again == out and encoder.clips == 4  # from the checkpoint: nothing embedded twice
    named = [said[0].model_copy(update={"speaker": "Ann"}), *said[1:]]
    kept, none = await label_speakers(_PitchVoices(), video, named, Checkpoints(tmp_path / "w2"))
    assert kept == named and none == []  # a transcript that names anyone is trusted as it is
