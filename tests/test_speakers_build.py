"""Speakers in a build and in ``memtools repair --speakers``: a video whose audio is a conversation of
two synthetic espeak-ng voices (spoken at test time), recognised by a FunctionRecognizer that knows
the turns' times but not who speaks; the voice encoder (real GE2E weights) tells them apart."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from audio_video import write_av_video
from build_helpers import dump_memory
from memtools.builder import BuildConfig, build_video
from memtools.builder.testing import ScriptedPerception
from memtools.cli import main
from memtools.embed import TestEmbedder
from memtools.perception import FunctionVLM
from memtools.speech import FunctionRecognizer, Utterance
from memtools.speech.synthetic import RATE, conversation, espeak_available
from memtools.speech.voice import VoiceEncoder
from memtools.speech.voice_weights import available
from memtools.store import Memory
from memtools.store.tables.voices import load_voices
from memtools.tools import MemoryTools

pytestmark = [pytest.mark.skipif(not available(), reason="needs pip install --no-deps resemblyzer"),
              pytest.mark.skipif(not espeak_available(), reason="needs espeak-ng (apt-get install espeak-ng)")]
CONFIG = BuildConfig.short().model_copy(update={"window_sec": 60.0, "frames_per_window": 6, "frames_per_macro": 3,
                                                "concurrency": 2})
ORDER = [0, 1, 0, 1, 1, 0]


@pytest.fixture(scope="module")
def talk(tmp_path_factory) -> tuple[Path, list[tuple[float, float, str]]]:
    audio, turns = conversation(ORDER, gap=1.0)
    path = write_av_video(tmp_path_factory.mktemp("talk") / "talk.mp4", len(audio) / RATE + 1, audio=audio,
                          rate=RATE)
    return path, turns


def _recognizer(turns):
    def hear(chunk):
        return [Utterance(t_start=a, t_end=b, text=f"sentence {n}") for n, (a, b, _) in enumerate(turns)
                if chunk.t_start <= a < chunk.t_end]
    return FunctionRecognizer(hear, name="turns")


def _speakers(memory_path: Path) -> list[str | None]:
    with Memory.open(memory_path, TestEmbedder(64)) as memory, memory.reading() as graph:
        stored = graph.video_graph("talk")
    assert stored is not None
    return [s.speaker for s in sorted(stored.speech, key=lambda s: s.t_start)]


def _truth(turns) -> list[str]:
    first: dict[str, str] = {}
    return [first.setdefault(who, f"S{len(first) + 1}") for _, _, who in turns]


def test_a_build_with_speakers_labels_each_voice(tmp_path, talk):
    video, turns = talk
    with Memory.create(tmp_path / "memory", TestEmbedder(64)) as memory:
        report = build_video(memory, FunctionVLM(ScriptedPerception(episode_sec=20)), video, config=CONFIG,
                             speech=_recognizer(turns), speakers=VoiceEncoder())
        tools = MemoryTools(memory)
        transcript = tools.get_transcript("talk", 0, 60).render()
        hits = tools.search_nodes("sentence 1", node_types=["speech"], top_k=3).render()
    assert report.counts["speech"] == len(turns)
    assert _speakers(tmp_path / "memory") == _truth(turns) == ["S1", "S2", "S1", "S2", "S2", "S1"]
    assert re.search(r"\] S2: sentence 1 ", transcript) and re.search(r"\] S1: sentence 0 ", transcript)
    assert "S2" in hits
    voices = load_voices(tmp_path / "memory", "talk")
    assert [(v.label, v.utterances) for v in voices] == [("S1", 3), ("S2", 3)]
    assert len(voices[0].centroid) == 256


def test_an_old_memory_gains_speakers_on_repair_and_loses_nothing(tmp_path, talk, capsys):
    video, turns = talk
    memory_path = tmp_path / "memory"
    with Memory.create(memory_path, TestEmbedder(64)) as memory:  # built as before speakers existed
        build_video(memory, FunctionVLM(ScriptedPerception(episode_sec=20)), video, config=CONFIG,
                    speech=_recognizer(turns))
    before = dump_memory(memory_path)
    assert _speakers(memory_path) == [None] * len(turns) and not (memory_path / "voices").exists()
    assert main(["repair", "--speakers", "--memory", str(memory_path)]) == 0
    assert "talk: 6 utterance(s) labelled with 2 speaker(s)" in capsys.readouterr().out
    assert _speakers(memory_path) == _truth(turns)
    after = dump_memory(memory_path)
    # the same memory, with who said each utterance: strip the speakers and the dumps agree
    assert after != before
    # (and get_relations names each voice's identity: people, docs/people.md)
    assert "Identity: talk " in after
    after = re.sub(r"(?m)^Identity: .*\n", "", after)
    assert re.sub(r" ?\(?\bS[12]\b\)?:?", "", after) == re.sub(r" ?\(?\bS[12]\b\)?:?", "", before)
    assert main(["check", "--memory", str(memory_path)]) == 0
    # a second repair leaves it as it is
    assert main(["repair", "--speakers", "--memory", str(memory_path)]) == 0
    assert "already names speakers" in capsys.readouterr().out
    assert json.loads((memory_path / "voices" / "talk.json").read_text())["video_id"] == "talk"
