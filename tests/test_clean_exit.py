"""Processes end cleanly while memtools' background threads are busy in native code: each of
200 runs of ``tests/exit_child.py`` (a frame decoder in OpenCV as a build fails; a server warm-up
and a background lance read) exits 0 without an abort or a fatal error (``memtools.background``).
Before, every run of the first kind aborted (``terminate called without an active exception``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="the runs are forked children")
def test_processes_exit_cleanly_while_background_threads_are_in_native_code(tmp_path):
    with Memory.create(tmp_path / "m", TestEmbedder(64)) as memory:
        memory.write_videos([graph_from_captions(v) for v in videos(30, 1)])
    video = write_video(tmp_path / "long.mp4", stamped_frames(600), fps=10.0)  # 60 s: still decoding at exit
    done = subprocess.run([sys.executable, str(HERE / "exit_child.py"), str(tmp_path / "m"), str(video), str(RUNS),
                           "4"], capture_output=True, text=True, timeout=1800,
                          env={**os.environ, "PYTHONPATH": str(HERE.parent / "src")})
    assert done.returncode == 0, done.stderr[-3000:]
    outcomes = json.loads(done.stdout.splitlines()[-1])
    assert len(outcomes) == RUNS
    failed = [(run, rc, out[-600:]) for run, (rc, out) in enumerate(outcomes)
              if rc != 0 or ("searched" if run % 2 else "build failed") not in out
              or any(crash in out for crash in CRASHES)]
    assert not failed, f"{len(failed)} of {RUNS} runs did not exit cleanly, e.g. {failed[0]}"
