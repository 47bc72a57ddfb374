"""``memtools build``: backends, settings from file / environment / flags, progress, bad inputs."""

from __future__ import annotations

import io
import json

import pytest

from build_helpers import dump_memory, scenes_video
from memtools.builder import TextProgress
from memtools.builder.progress import Progress
from memtools.builder.settings import resolve_settings, vlm_from_settings
from memtools.cli import main
from memtools.errors import ConfigError
from memtools.perception import OpenAIVLM, RecordingVLM, ReplayVLM
from memtools.store.catalog.manifest import read_manifest

SCRIPTED = "python:memtools.builder.testing:scripted_vlm"


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    return scenes_video(tmp_path_factory.mktemp("video") / "clip.mp4", seconds=60)


def _build(*args: str) -> int:
    return main(["build", *args, "--embedder", "test:64", "--preset", "short", "--window-sec", "40"])


def test_build_records_and_replays(tmp_path, video, capsys):
    recording = tmp_path / "answers.jsonl"
    assert _build(str(video), "--memory", str(tmp_path / "a"), "--vlm", SCRIPTED, "--record", str(recording)) == 0
    out, err = capsys.readouterr()
    assert "Built 1 video(s)" in out and "model calls" in err and "\r" not in err  # plain lines off a terminal
    assert "memtools tool get_summary --memory" in out and "clip: " in out
    assert _build(str(video), "--memory", str(tmp_path / "b"), "--replay", str(recording), "--quiet",
                  "--video-id", "clip") == 0
    out, err = capsys.readouterr()
    assert err == "" and "0 reused from checkpoints" in out
    assert dump_memory(tmp_path / "a") == dump_memory(tmp_path / "b")
    # the same command again: nothing to do
    assert _build(str(video), "--memory", str(tmp_path / "b"), "--replay", str(recording), "-q") == 0
    assert "already built" in capsys.readouterr().out


def test_a_replay_without_the_answer_fails_clearly_and_keeps_checkpoints(tmp_path, video, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert _build(str(video), "--memory", str(tmp_path / "m"), "--replay", str(empty), "-q") == 1
    err = capsys.readouterr().err
    assert "holds no answer" in err and "with or without --fresh, asks the same question" in err
    assert "to resume" not in err  # resuming asks the same question: the message says what helps instead
    assert read_manifest(tmp_path / "m").videos["clip"].status == "failed"


@pytest.mark.parametrize("make,message", [
    (lambda p: None, "not found"),
    (lambda p: p.write_bytes(b""), "empty"),
    (lambda p: p.write_text("this is not a video"), "cannot read"),
    (lambda p: p.write_bytes(bytes(range(256)) * 40), "cannot read"),
])
def test_unreadable_videos_fail_with_the_file_named_and_the_memory_untouched(tmp_path, video, capsys, make,
                                                                              message):
    bad = tmp_path / "bad.mp4"
    make(bad)
    # a new memory is not even created
    assert _build(str(bad), "--memory", str(tmp_path / "new"), "--vlm", SCRIPTED) == 1
    err = capsys.readouterr().err
    assert "memtools build: error:" in err and str(bad) in err and message in err
    assert not (tmp_path / "new").exists()
    # an existing memory stays exactly as it was, also when the bad file comes second
    assert _build(str(video), "--memory", str(tmp_path / "old"), "--vlm", SCRIPTED, "-q") == 0
    before = {p.relative_to(tmp_path): p.read_bytes() for p in (tmp_path / "old").rglob("*") if p.is_file()}
    assert _build(str(video), str(bad), "--memory", str(tmp_path / "old"), "--vlm", SCRIPTED, "--fresh") == 1
    after = {p.relative_to(tmp_path): p.read_bytes() for p in (tmp_path / "old").rglob("*") if p.is_file()}
    assert after == before


def test_misuse_is_a_clear_error(tmp_path, video, capsys, monkeypatch):
    monkeypatch.delenv("MEMTOOLS_VLM", raising=False)
    assert _build(str(video), "--memory", str(tmp_path / "m")) == 1
    assert "no perception model: pass --vlm" in capsys.readouterr().err
    assert _build(str(video), str(video), "--memory", str(tmp_path / "m"), "--vlm", SCRIPTED, "--video-id", "x") == 1
    assert "--video-id names one video" in capsys.readouterr().err
    assert _build(str(video), "--memory", str(tmp_path / "m"), "--vlm", "python:nowhere.at_all:make") == 1
    assert "cannot load the perception backend" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def test_settings_come_from_flags_then_environment_then_config_file(tmp_path):
    toml = tmp_path / "memtools.toml"
    toml.write_text('[build]\nvlm = "openai:file-model"\nbase_url = "http://file:8000/v1"\npreset = "short"\n'
                    "concurrency = 2\nframes_per_macro = 7\n\n[build.keyframes]\nsample_every_sec = 3.0\n")
    env = {"MEMTOOLS_CONFIG": str(toml), "MEMTOOLS_VLM": "openai:env-model", "MEMTOOLS_CONCURRENCY": "5"}
    s = resolve_settings({"concurrency": 9, "window_sec": None}, env)
    assert s.vlm == "openai:env-model" and s.base_url == "http://file:8000/v1"
    assert s.config.concurrency == 9 and s.config.frames_per_macro == 7
    assert s.config.window_sec == 120.0  # from the short preset
    assert s.config.keyframes.sample_every_sec == 3.0 and s.config.keyframes.max_gap_sec == 10.0
    s = resolve_settings({}, {"MEMTOOLS_CONFIG": str(toml)})
    assert (s.vlm, s.config.concurrency) == ("openai:file-model", 2)

    js = tmp_path / "memtools.json"
    js.write_text(json.dumps({"replay": "answers.jsonl", "window_sec": 300}))
    s = resolve_settings({"config": js}, {})
    assert s.replay == "answers.jsonl" and s.config.window_sec == 300

    js.write_text(json.dumps({"window_secs": 300}))
    with pytest.raises(ConfigError, match="unknown build setting"):
        resolve_settings({"config": js}, {})
    with pytest.raises(ConfigError, match="window_sec"):
        resolve_settings({"window_sec": -1}, {})
    with pytest.raises(ConfigError, match="unknown build preset"):
        resolve_settings({"preset": "huge"}, {})


def test_backends_from_settings(tmp_path):
    recording = tmp_path / "r.jsonl"
    recording.write_text("")
    vlm = vlm_from_settings(resolve_settings({"replay": str(recording), "record": str(tmp_path / "out.jsonl")}, {}))
    assert isinstance(vlm, RecordingVLM) and isinstance(vlm.inner, ReplayVLM)
    vlm = vlm_from_settings(resolve_settings({"vlm": "openai:qwen2.5-vl", "base_url": "http://localhost:8000/v1",
                                              "api_key_env": "MY_KEY", "concurrency": 6}, {}))
    assert isinstance(vlm, OpenAIVLM)
    assert (vlm.model_name, vlm.base_url, vlm.api_key_env, vlm.concurrency) == (
        "qwen2.5-vl", "http://localhost:8000/v1", "MY_KEY", 6)
    with pytest.raises(ConfigError, match="not both"):
        vlm_from_settings(resolve_settings({"replay": str(recording), "vlm": "openai:m"}, {}))


def test_progress_on_a_terminal_rewrites_one_line():
    stream = io.StringIO()
    progress = Progress(TextProgress(stream, tty=True))
    progress.start_video("clip", 0, None)
    progress.begin("extract", 4)
    progress.advance("extract")
    progress.finish("extract")
    progress.close()
    text = stream.getvalue()
    assert text.startswith("\r") and text.endswith("\n") and "extract done" in text and "[1/1 clip]" in text
