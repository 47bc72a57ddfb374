"""A video with speech builds with its transcript in kuzu and lance, in the prompts, and with
SAYS / ABOUT edges; subtitles stand in for recognition; bad subtitles change nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from audio_video import tone, write_av_video
from build_helpers import dump_memory
from memtools.builder import BuildConfig, build_video
from memtools.builder.testing import ScriptedPerception
from memtools.cli import main
from memtools.embed import TestEmbedder
from memtools.perception import FunctionVLM
from memtools.speech import FunctionRecognizer, Utterance
from memtools.store import Memory
from memtools.tools import MemoryTools

CONFIG = BuildConfig.short().model_copy(update={"window_sec": 60.0, "frames_per_window": 6, "frames_per_macro": 3,
                                                "concurrency": 2})
WORDS = {0: "the red ball starts rolling", 1: "look, the boxes fall over", 2: "a worker picks the boxes up"}


def _say(chunk):
    """One utterance in the middle of every 30-second chunk, on the video clock."""
    n = int(chunk.t_start // 30)
    middle = chunk.t_start + min(10.0, round(chunk.duration / 2))
    return [Utterance(t_start=middle, t_end=middle + 3.0, text=WORDS.get(n, f"chunk {n}"), speaker="narrator")]


class PromptLog:
    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.script = ScriptedPerception(episode_sec=20)

    def __call__(self, request):
        self.prompts.append(request.prompt)
        return self.script(request)


@pytest.fixture(scope="module")
def talking(tmp_path_factory) -> Path:
    return write_av_video(tmp_path_factory.mktemp("av") / "talk.mp4", 70.0, audio=tone(70.0, rate=16_000),
                          rate=16_000)


def test_a_video_with_speech_has_its_transcript_in_kuzu_lance_and_the_prompts(tmp_path, talking):
    log, recognizer = PromptLog(), FunctionRecognizer(_say)
    with Memory.create(tmp_path / "memory", TestEmbedder(64)) as memory:
        report = build_video(memory, FunctionVLM(log), talking, config=CONFIG, speech=recognizer)
        tools = MemoryTools(memory)
        transcript = tools.get_transcript("talk", 0, 70).render()
        hits = tools.search_nodes("the boxes fall over", node_types=["speech"], top_k=3).hits
        with memory.reading() as graph:
            stored = graph.video_graph("talk")
        lance = memory.vectors.nodes().to_arrow().to_pylist()
        macro = next(m for m in stored.macros if m.t_start <= 40 < m.t_end)
        subgraph = tools.get_subgraph(macro.id).render()
    assert recognizer.calls == 3 and report.counts["speech"] == 3
    # kuzu: the nodes, under the macro event their middle falls in, with the speaker
    assert [(u.text, u.speaker, u.t_start) for u in stored.speech] == [
        ("the red ball starts rolling", "narrator", 10.0), ("look, the boxes fall over", "narrator", 40.0),
        ("a worker picks the boxes up", "narrator", 65.0)]
    assert all(s.macro_id == m.id for s in stored.speech for m in stored.macros
               if m.t_start <= s.t_start + 1.5 < m.t_end)
    assert "[0:00:40-0:00:43] narrator: look, the boxes fall over" in transcript
    # lance: full-text and vector searchable rows of kind "speech"
    assert sorted(r["text"] for r in lance if r["kind"] == "speech") == [
        "a worker picks the boxes up. said by narrator", "look, the boxes fall over. said by narrator",
        "the red ball starts rolling. said by narrator"]
    assert hits[0].kind == "speech" and "the boxes fall over" in hits[0].text
    # the prompts: time-stamped speech in segmentation windows, clip-local ids in extraction
    segment = next(p for p in log.prompts if "Major Story Episodes" in p)
    assert "[SPEECH IN THIS STRETCH]" in segment
    assert "- [00:00:10-00:00:13] (narrator) the red ball starts rolling" in segment
    extract = next(p for p in log.prompts if "look, the boxes fall over" in p and "[SPEECH IN THIS CLIP]" in p)
    assert "- u1 [0-3] (narrator) look, the boxes fall over" in extract
    # cross-modal edges from the model's answer
    assert "-SAYS-> utt_001" in subgraph and "utt_001 -ABOUT-> evt_001" in subgraph
    assert any(e.label == "SAYS" for e in stored.edges) and any(e.label == "ABOUT" for e in stored.edges)


def test_without_an_audio_track_nothing_is_recognised_and_the_prompts_are_unchanged(tmp_path):
    silent = write_av_video(tmp_path / "silent.mp4", 40.0, audio=None)
    log, recognizer = PromptLog(), FunctionRecognizer(_say)
    plain = PromptLog()
    with Memory.create(tmp_path / "a", TestEmbedder(64)) as memory:
        report = build_video(memory, FunctionVLM(log), silent, config=CONFIG, speech=recognizer)
    with Memory.create(tmp_path / "b", TestEmbedder(64)) as memory:
        build_video(memory, FunctionVLM(plain), silent, config=CONFIG)
    assert recognizer.calls == 0 and "speech" not in report.counts
    assert sorted(log.prompts) == sorted(plain.prompts)


SRT = """1
00:00:05,000 --> 00:00:08,500
NARRATOR: The red ball rolls in.

2
00:00:41,000 --> 00:00:44,000
And the boxes fall over.
"""


def _build(video: Path, memory: Path, *extra: str) -> int:
    return main(["build", str(video), "--memory", str(memory), "--vlm", "python:memtools.builder.testing:scripted_vlm",
                 "--embedder", "test:64", "--preset", "short", "--window-sec", "60", "-q", *extra])


def test_subtitles_replace_recognition(tmp_path, talking):
    srt = tmp_path / "talk.srt"
    srt.write_text(SRT)
    assert _build(talking, tmp_path / "memory", "--subtitles", str(srt)) == 0
    with Memory.open(tmp_path / "memory", TestEmbedder(64)) as memory:
        text = MemoryTools(memory).get_transcript("talk", 0, 70).render()
    assert "[0:00:05-0:00:08] NARRATOR: The red ball rolls in." in text
    assert "[0:00:41-0:00:44] And the boxes fall over." in text


@pytest.mark.parametrize("content, message", [
    (None, "no subtitle file at"),
    ("just some words\nwithout any cue\n", "holds no subtitle cues; is it an SRT or WebVTT file?"),
    ("1\n00:00:05,000 --> 5 seconds\nHello\n", "cannot read the time '5'"),
])
def test_bad_subtitles_fail_clearly_and_leave_the_memory_untouched(tmp_path, talking, capsys, content, message):
    memory = tmp_path / "memory"
    assert _build(talking, memory, "--speech", "none") == 0
    before = dump_memory(memory)
    manifest = (memory / "memtools.json").read_text()
    srt = tmp_path / "bad.srt"
    if content is not None:
        srt.write_text(content)
    capsys.readouterr()
    assert _build(talking, memory, "--subtitles", str(srt), "--fresh") == 1
    err = capsys.readouterr().err
    assert message in err and "bad.srt" in err
    assert dump_memory(memory) == before and (memory / "memtools.json").read_text() == manifest
    assert _build(talking, tmp_path / "new", "--subtitles", str(srt)) == 1
    assert not (tmp_path / "new").exists()


def test_one_subtitle_file_per_video(tmp_path, talking, capsys):
    srt = tmp_path / "talk.srt"
    srt.write_text(SRT)
    assert _build(talking, tmp_path / "memory", "--subtitles", str(srt), "--subtitles", str(srt)) == 1
    assert "2 --subtitles file(s) for 1 video(s)" in capsys.readouterr().err
