"""Cancelling a build job (issue 48, item 3): the build stops at its next safe point and the memory is exactly as
before that video, by the crash harness's comparison (``tests/faults/crash_state.describe``: videos, node ids, rows
per lance table, node texts, search results, navigation), ``memtools check`` clean, no ``work/<video>/`` left.

A memory holding the kitchen video (keyframes, image vectors) gets the bundled sample through the job runner with the
package's scripted model behind a gate: the build stands still in its Nth model call (1: the first segmentation
window, 4: an extraction, 9: the aggregation, the last call before the write), the cancel comes, the gate opens. The
cancel is asked through a second ``JobBook`` on the folder, as another process sharing ``jobs.json`` would. Each graph
engine runs in its own process (kuzu and ladybug cannot load in one): this file is also that process's script.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ENGINES = [e for e in ("kuzu", "ladybug") if importlib.util.find_spec(e) is not None]
POINTS = (1, 4, 9)
"""Model calls the build stands still in when the cancel comes (the sample takes 9 with the short preset)."""

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("engine", ENGINES)
def test_a_cancelled_build_leaves_the_memory_exactly_as_before(tmp_path, engine):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent / "src"), str(HERE), str(HERE / "faults")])}
    done = subprocess.run([sys.executable, __file__, engine, str(tmp_path)], capture_output=True, text=True,
                          timeout=900, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert [c["point"] for c in out["cases"]] == list(POINTS)
    for case in out["cases"]:
        assert case["state"] == "cancelled", case
        assert case["asked"] < POINTS[-1] or case["point"] == POINTS[-1], case  # it stopped before its last call
        assert case["differs"] == [], case  # the comparison of the crash harness: equal
        assert case["check"] == 0 and not case["work"], case
        assert "cancelled: nothing of this build was kept" in case["said"]
    assert out["queued"] == {"state": "cancelled", "runs": 0}  # a job that never ran ends at once
    assert out["late"] == {"state": "done", "cancel_requested": False}  # once written, a cancel changes nothing
    assert out["built_after"] == "done"  # the same video added again after the cancels builds whole


# --- the engine's process --------------------------------------------------------------------------------------


class Gate:
    """The scripted model, standing still in call ``point`` until ``open()``."""

    def __init__(self, point: int) -> None:
        from memtools.builder.testing import ScriptedPerception

        self.scripted, self.point, self.asked = ScriptedPerception(), point, 0
        self.opened = threading.Event()

    async def __call__(self, request) -> str:
        self.asked += 1
        if self.asked == self.point:
            while not self.opened.is_set():
                await asyncio.sleep(0.02)
        return self.scripted(request)


def _memory(path: Path, engine: str) -> None:
    from mcp_support import with_keyframes
    from memtools.embed.images import TestImageEmbedder
    from memtools.embed.testing import TestEmbedder
    from memtools.store import Memory
    from memtools.testing import kitchen_graph

    with Memory.create(path, TestEmbedder(64), image_embedder=TestImageEmbedder(), graph_engine=engine) as memory:
        memory.write_video(with_keyframes(kitchen_graph("kitchen"), path))


def _runner(memory, videos: Path, vlm):
    from memtools.builder import BuildConfig
    from memtools.builder.settings import BuildSettings
    from memtools.jobs import JobRunner, SourcePolicy
    from memtools.perception import FunctionVLM

    runner = JobRunner(memory, BuildSettings(config=BuildConfig.short()), SourcePolicy(roots=[videos]),
                       vlm=FunctionVLM(vlm, model_name="scripted"))
    runner.start()
    return runner


def _until(what, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        if time.monotonic() > deadline:
            raise TimeoutError("waited too long")
        time.sleep(0.02)


def _check(path: Path) -> int:
    import contextlib
    import io

    from memtools.cli import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(["check", "--memory", str(path)])


def run(engine: str, folder: Path) -> dict:
    from crash_state import describe

    from jobs_support import make_sample_video
    from memtools.builder.testing import ScriptedPerception
    from memtools.jobs import JobBook
    from memtools.store import Memory

    videos = folder / "videos"
    videos.mkdir()
    make_sample_video(videos / "sample.mp4")
    path = folder / "mem"
    _memory(path, engine)
    before = describe(str(path))
    out: dict = {"cases": []}
    for point in POINTS:
        gate = Gate(point)
        with Memory.open(path) as memory:
            runner = _runner(memory, videos, gate)
            job = runner.submit("sample.mp4")
            _until(lambda: gate.asked >= point)  # noqa: B023 - waited for at once
            if point == POINTS[0]:  # a second job while the first builds: queued, never run, cancelled at once
                queued = runner.submit(str(videos / "sample.mp4"), video_id="other")
                gone = JobBook(path).request_cancel(queued.job_id)
                out["queued"] = {"state": gone.state, "runs": gone.runs}
            JobBook(path).request_cancel(job.job_id)  # through the file, as another process would
            gate.opened.set()
            ended = runner.wait(job.job_id, 300)
            runner.close()
        assert ended is not None
        after = describe(str(path))
        out["cases"].append({"point": point, "state": ended.state, "error": ended.error, "asked": gate.asked,
                             "said": ended.render(), "differs": [k for k in before if after.get(k) != before[k]],
                             "check": _check(path), "work": (path / "work" / "sample").exists()})
    scripted = ScriptedPerception()

    async def answer(request) -> str:
        return scripted(request)

    with Memory.open(path) as memory:
        runner = _runner(memory, videos, answer)
        built = runner.wait(runner.submit("sample.mp4").job_id, 300)
        late = runner.cancel(built.job_id) if built is not None else None
        runner.close()
    out["built_after"] = built.state if built is not None else None
    out["late"] = {"state": late.state, "cancel_requested": late.cancel_requested} if late is not None else None
    return out


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1], Path(sys.argv[2]))))
