"""Processes end cleanly while memtools' background threads are busy in native code: each of
200 runs of ``tests/exit_child.py`` (server warm-up, a background lance read and a frame decoder
in flight at exit) exits 0 without an abort or a fatal error (``memtools.background``)."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from memtools.embed.testing import TestEmbedder
from memtools.importers.captions import graph_from_captions
from memtools.store import Memory
from synthetic_video import stamped_frames, write_video
from test_search_resident import videos

HERE = Path(__file__).parent
RUNS = 200
CRASHES = ("Fatal Python error", "terminate called", "exception not rethrown", "Segmentation fault")


def _run(args: list[str]) -> tuple[int, str, str]:
    done = subprocess.run([sys.executable, str(HERE / "exit_child.py"), *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(HERE.parent / "src")})
    return done.returncode, done.stdout, done.stderr


@pytest.mark.slow
def test_processes_exit_cleanly_while_background_threads_are_in_native_code(tmp_path):
    with Memory.create(tmp_path / "m", TestEmbedder(64)) as memory:
        memory.write_videos([graph_from_captions(v) for v in videos(30, 1)])
    video = write_video(tmp_path / "long.mp4", stamped_frames(600), fps=10.0)  # 60 s: still decoding at exit
    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = list(pool.map(_run, [[str(tmp_path / "m"), str(video)]] * RUNS))
    failed = [(rc, err[-600:]) for rc, out, err in outcomes
              if rc != 0 or "build failed" not in out or any(crash in err for crash in CRASHES)]
    assert not failed, f"{len(failed)} of {RUNS} runs did not exit cleanly, e.g. {failed[0]}"
