"""Shared by the ``test_jobs_*`` files: the bundled sample video, a gated fake model, a server over stdio.

``gated_vlm`` is ``ScriptedPerception`` (the package's honest fake) behind a gate, for tests that
need a build to stand still at a known point: calls past ``$JOBS_TEST_OPEN_CALLS`` wait until the
file ``$JOBS_TEST_GATE`` exists; every answered call appends a line to ``$JOBS_TEST_CALL_LOG``, so
a test can count the model calls of several server processes. Servers import it as
``--vlm python:jobs_support:gated_vlm`` (``server_command`` puts this folder on their path).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
from pathlib import Path

import memtools
from memtools.builder.testing import ScriptedPerception
from memtools.costs import estimate_tokens
from memtools.perception import FunctionVLM, PerceptionRequest
from memtools.perception.base import PerceptionResponse, Usage

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples"
SCRIPTED = "python:memtools.builder.testing:scripted_vlm"
GATED = "python:jobs_support:gated_vlm"


def make_sample_video(path: Path) -> Path:
    """The README quickstart's sample (``examples/make_sample_video.py``): 3 minutes, four scenes."""
    spec = importlib.util.spec_from_file_location("make_sample_video", EXAMPLES / "make_sample_video.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_sample_video(path)


def counting_perception(episode_sec: float = 30.0):
    """``ScriptedPerception`` answering with usage counted the way memtools estimates tokens (4 characters a token,
    ``IMAGE_TOKENS`` a frame), as a server that reports no usage would be counted."""
    scripted = ScriptedPerception(episode_sec=episode_sec)

    def answer(request: PerceptionRequest) -> PerceptionResponse:
        text = scripted(request)
        return PerceptionResponse(text=text, model="scripted", finish_reason="stop", usage=Usage(
            prompt_tokens=estimate_tokens((request.system or "") + request.prompt, len(request.frames)),
            completion_tokens=estimate_tokens(text)))

    return answer


def gated_vlm() -> FunctionVLM:
    scripted = ScriptedPerception()
    gate = os.environ.get("JOBS_TEST_GATE")
    open_calls = int(os.environ.get("JOBS_TEST_OPEN_CALLS", "1000000"))
    log = os.environ.get("JOBS_TEST_CALL_LOG")
    state = {"asked": 0}

    async def answer(request: PerceptionRequest) -> str:
        state["asked"] += 1
        if state["asked"] > open_calls and gate:
            while not Path(gate).exists():
                await asyncio.sleep(0.05)
        text = scripted(request)
        if log:
            with open(log, "a", encoding="utf-8") as out:
                out.write(request.system[:20].replace("\n", " ") + "\n")
        return text

    return FunctionVLM(answer, model_name="scripted")


def server_command(memory: Path, *extra: str) -> tuple[str, list[str]]:
    """``memtools-mcp --memory DIR ...`` run by this Python, with memtools' sources and this folder on its path."""
    src = str(Path(memtools.__file__).resolve().parents[1])
    entry = (f"import sys; sys.path[:0] = [{src!r}, {str(HERE)!r}]; from memtools.mcp import main; "
             "sys.exit(main())")
    return sys.executable, ["-c", entry, "--memory", str(memory), *extra]


def server_env(**extra: str) -> dict[str, str]:
    """The environment of a server subprocess: this one's, this folder importable, plus ``extra``."""
    path = os.pathsep.join(p for p in (str(Path(memtools.__file__).resolve().parents[1]), str(HERE),
                                       os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}
