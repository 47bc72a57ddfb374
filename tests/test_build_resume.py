"""Kill -9 a real ``memtools build`` in the middle, run it again: same memory, no repeated calls."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from build_helpers import dump_memory, scenes_video
from memtools.cli import main

BACKEND = textwrap.dedent('''
    """A perception backend the test controls: logs every request key, answers after a delay."""
    import asyncio
    import os

    from memtools.builder.testing import ScriptedPerception
    from memtools.perception import FunctionVLM, request_key

    _script = ScriptedPerception(episode_sec=10)


    async def _answer(request):
        with open(os.environ["FAKE_VLM_LOG"], "a") as log:
            log.write(request_key(request) + "\\n")
        await asyncio.sleep(float(os.environ.get("FAKE_VLM_DELAY", "0")))
        return _script(request)


    def make():
        return FunctionVLM(_answer)
''')


def _args(video: Path, memory: Path, config: Path) -> list[str]:
    return ["build", str(video), "--memory", str(memory), "--vlm", "python:fake_backend:make", "--embedder",
            "test:64", "--config", str(config), "--concurrency", "2"]


def _keys(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def _saved_keys(memory: Path) -> set[str]:
    calls = memory / "work" / "clip" / "calls"
    return {json.loads(p.read_text())["key"] for p in calls.glob("*.json")} if calls.exists() else set()


@pytest.mark.parametrize("kill_after", [5, pytest.param(12, marks=pytest.mark.slow)])
def test_kill_9_then_the_same_command_finishes_the_same_memory(tmp_path, monkeypatch, kill_after):
    (tmp_path / "fake_backend.py").write_text(BACKEND)
    video = scenes_video(tmp_path / "clip.mp4")
    config = tmp_path / "memtools.toml"
    config.write_text('[build]\npreset = "short"\nwindow_sec = 60\nframes_per_window = 12\nframes_per_macro = 4\n')
    monkeypatch.syspath_prepend(str(tmp_path))

    # the reference: one uninterrupted build
    monkeypatch.setenv("FAKE_VLM_LOG", str(tmp_path / "reference.log"))
    assert main(_args(video, tmp_path / "reference", config) + ["-q"]) == 0
    reference_keys = _keys(tmp_path / "reference.log")

    # a real process, killed with SIGKILL while model calls are in flight
    first_log = tmp_path / "first.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
           "FAKE_VLM_LOG": str(first_log), "FAKE_VLM_DELAY": "0.3"}
    memory = tmp_path / "memory"
    cmd = [sys.executable, "-c", "import sys; from memtools.cli import main; sys.exit(main(sys.argv[1:]))",
           *_args(video, memory, config)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while len(_keys(first_log)) < kill_after and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL, err.decode()
    saved = _saved_keys(memory)
    assert 0 < len(saved) < len(reference_keys)

    # the same command again
    monkeypatch.setenv("FAKE_VLM_LOG", str(tmp_path / "second.log"))
    assert main(_args(video, memory, config) + ["-q"]) == 0
    second = _keys(tmp_path / "second.log")
    assert not set(second) & saved, "a finished model call was repeated"
    assert sorted(set(second) | saved) == sorted(set(reference_keys))
    assert len(second) == len(set(second))
    assert dump_memory(memory) == dump_memory(tmp_path / "reference")
    frames = sorted(p.name for p in (memory / "frames" / "clip").iterdir())
    assert frames == sorted(p.name for p in (tmp_path / "reference" / "frames" / "clip").iterdir())
