"""Kill -9 a build while it recognises speech, run it again: finished chunks are not recognised twice."""

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

from audio_video import tone, write_av_video
from build_helpers import dump_memory

BUILD = textwrap.dedent('''
    """Build argv[1] into argv[2] with a recogniser that logs each chunk it recognises, slowly."""
    import os
    import sys
    import time

    from memtools.builder import BuildConfig, build_video
    from memtools.builder.testing import scripted_vlm
    from memtools.embed import TestEmbedder
    from memtools.speech import FunctionRecognizer, Utterance
    from memtools.store import Memory


    def say(chunk):
        with open(os.environ["FAKE_ASR_LOG"], "a") as log:
            log.write(f"{chunk.t_start:.0f}\\n")
        time.sleep(float(os.environ.get("FAKE_ASR_DELAY", "0")))
        return [Utterance(t_start=chunk.t_start + 2, t_end=chunk.t_start + 6, text=f"words at {chunk.t_start:.0f}")]


    config = BuildConfig.short().model_copy(update={"window_sec": 60.0, "frames_per_window": 4, "frames_per_macro": 2})
    with Memory.create(sys.argv[2], TestEmbedder(64)) as memory:
        build_video(memory, scripted_vlm(episode_sec=30), sys.argv[1], config=config,
                    speech=FunctionRecognizer(say, name="fake-asr"))
''')


def _run(script: Path, video: Path, memory: Path, log: Path, delay: float) -> subprocess.Popen:
    env = {**os.environ, "FAKE_ASR_LOG": str(log), "FAKE_ASR_DELAY": str(delay)}
    return subprocess.Popen([sys.executable, str(script), str(video), str(memory)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _chunks(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


@pytest.mark.slow
def test_kill_9_during_recognition_then_the_rerun_recognises_only_unfinished_chunks(tmp_path):
    script = tmp_path / "build_with_speech.py"
    script.write_text(BUILD)
    video = write_av_video(tmp_path / "talk.mp4", 150.0, audio=tone(150.0, rate=16_000), rate=16_000)

    reference = _run(script, video, tmp_path / "reference", tmp_path / "reference.log", 0.0)
    _, err = reference.communicate(timeout=120)
    assert reference.returncode == 0, err.decode()
    all_chunks = _chunks(tmp_path / "reference.log")
    assert all_chunks[:5] == ["0", "30", "60", "90", "120"]  # (+ the few ms of AAC padding at the end)

    memory, first_log = tmp_path / "memory", tmp_path / "first.log"
    proc = _run(script, video, memory, first_log, 0.4)
    deadline = time.monotonic() + 60
    while len(_chunks(first_log)) < 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL, err.decode()
    folder = memory / "work" / "talk" / "speech"
    finished = {f"{json.loads(p.read_text())[0]['t_start'] - 2:.0f}" for p in folder.glob("chunk_*.json")}
    assert 0 < len(finished) < len(all_chunks)
    from memtools.store.catalog.manifest import read_manifest

    listed = read_manifest(memory).videos
    assert not (memory / "vectors").exists() or "talk" not in listed or listed["talk"].status != "ready"

    second_log = tmp_path / "second.log"
    again = _run(script, video, memory, second_log, 0.0)
    _, err = again.communicate(timeout=120)
    assert again.returncode == 0, err.decode()
    second = _chunks(second_log)
    assert not set(second) & finished, "a finished chunk was recognised again"
    assert sorted(set(second) | finished, key=float) == all_chunks
    assert dump_memory(memory) == dump_memory(tmp_path / "reference")
    assert "words at 120" in dump_memory(memory)
