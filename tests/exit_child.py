"""Processes that exit while memtools' background threads are inside native code, many times over
(``tests/test_clean_exit.py``): the server warm-up and a background read of the vector table in
lance, and the frame decoder in OpenCV as a build fails. Before these threads were stopped and
joined at exit, such processes aborted (``terminate called without an active exception``) or
crashed (SIGSEGV, ``Fatal Python error``) now and then.

    python exit_child.py MEMORY_DIR VIDEO RUNS PARALLEL

The modules are imported once, then each run is a forked child that does one risky thing (even
runs: a failing build; odd runs: reading) and ends through the interpreter's own exit (SystemExit
up to the top), so a run costs its work, not a fresh interpreter's imports. lancedb (whose import
starts a thread, which a fork would not carry over) is imported in the children only. Prints one
JSON list: ``[exit code, output]`` per run.
"""

import asyncio
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from memtools.builder.frames import FrameGrid, FrameReader
from memtools.embed.testing import TestEmbedder
from memtools.mcp.warmup import warm_up
from memtools.store import Memory
from memtools.store.base import SearchQuery
from memtools.store.tables import resident_search

CHILD_SEC = 300


def reading(memory_dir: Path) -> None:
    """A server's warm-up and a background read of the vector table, both in lance as the process ends."""
    resident_search.HOLD_AT_ONCE_BYTES = 0  # the rows are read on a background thread from the second search on
    memory = Memory.open(memory_dir, TestEmbedder(64))
    warm_up(memory)
    for text in ("dog", "cat"):
        memory.vectors.search_columns(SearchQuery("vector", 5, memory.embedder.embed_query(text), lite=True))
    print("searched", flush=True)


def building(video: Path) -> None:
    """A build that fails while its frame decoder is at work in OpenCV."""

    async def a_build_that_fails() -> None:
        reader = FrameReader(video, FrameGrid(60.0, 0.1), max_side=160, max_ahead=10_000)
        reader.hold("segment", 0.0)
        reader.start()
        await reader.at([0.05])
        raise RuntimeError("the model's answer was not recorded")

    try:
        asyncio.run(a_build_that_fails())
    except RuntimeError as exc:
        print(f"build failed: {exc}", flush=True)


def main(memory_dir: Path, video: Path, runs: int, parallel: int) -> list[tuple[int, str]]:
    folder = Path(tempfile.mkdtemp(prefix="exit-runs-"))
    running: dict[int, tuple[int, float]] = {}
    codes: dict[int, int] = {}
    for run in range(runs):
        while len(running) >= parallel:
            _reap(running, codes)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: its output to a file, the risky work, then the interpreter's own exit
            out = os.open(folder / f"{run}.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(out, 1)
            os.dup2(out, 2)
            reading(memory_dir) if run % 2 else building(video)  # odd runs import lancedb (~0.7 s): half of them
            raise SystemExit(0)
        running[pid] = (run, time.monotonic())
    while running:
        _reap(running, codes)
    outcomes = [(codes[run], (folder / f"{run}.txt").read_text(errors="replace")) for run in range(runs)]
    shutil.rmtree(folder, ignore_errors=True)
    return outcomes


def _reap(running: dict[int, tuple[int, float]], codes: dict[int, int]) -> None:
    while True:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid:
            run, _ = running.pop(pid)
            codes[run] = os.waitstatus_to_exitcode(status)
            return
        for pid, (_, started) in running.items():
            if time.monotonic() - started > CHILD_SEC:  # hung: counted as killed
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)


if __name__ == "__main__":
    outcomes = main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    print(json.dumps(outcomes))
