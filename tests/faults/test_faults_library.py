"""kill -9 while the library layer links a write's entities (issue 31), on both graph engines.

A memory of two days gets its third day from a process killed with SIGKILL inside the layer's
SQLite transaction (``library-linking``: entities linked, nothing committed), just after it
(``library-written``: before the catalog and the manifest), or a commit earlier, and once more
while the next writer's recovery computes the layer again. Then the next process that opens the
memory recovers it: ``memtools check`` must be clean, the third day whole, and the library ids
exactly those of an uninterrupted import. Every step runs in its own process (kuzu and ladybug
cannot load in one)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
TESTS = Path(__file__).resolve().parents[1]
STEP = """
import json, sys
from library_support import day, library_ids
from memtools.cli import main
from memtools.embed.testing import TestEmbedder
from memtools.store import Memory
what, path, engine = sys.argv[1:4]
if what == "create":
    with Memory.create(path, TestEmbedder(64), graph_engine=engine) as memory:
        memory.write_videos([day("day1"), day("day2")], batch_size=1)
elif what == "write":
    with Memory.open(path, TestEmbedder(64)) as memory:
        memory.write_video(day("day3"))
else:
    with Memory.open(path, TestEmbedder(64)) as memory:  # a reader's open finishes the killed write
        videos = sorted(memory.video_ids())
    code = main(["check", "--memory", path])
    print(json.dumps({"check": code, "videos": videos, "ids": library_ids(path)}))
"""
ENGINES = [e for e in ("kuzu", "ladybug") if importlib.util.find_spec(e) is not None]


def _step(what: str, path: Path, engine: str, fault: str = "") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "MEMTOOLS_FAULT_POINT"}
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), str(TESTS)])
    if fault:
        env["MEMTOOLS_FAULT_POINT"] = fault
    return subprocess.run([sys.executable, "-c", STEP, what, str(path), engine], capture_output=True, text=True,
                          timeout=180, env=env)


def _state(path: Path, engine: str, fault: str = "") -> dict:
    done = _step("verify", path, engine, fault)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module", params=ENGINES)
def reference(request, tmp_path_factory) -> tuple[str, dict]:
    """An uninterrupted import of the three days on this engine."""
    path = tmp_path_factory.mktemp(f"reference-{request.param}") / "memory"
    assert _step("create", path, request.param).returncode == 0
    assert _step("write", path, request.param).returncode == 0
    return request.param, _state(path, request.param)


@pytest.mark.parametrize(("point", "again"), [
    ("library-linking", ""), ("library-written", ""), ("graph-committed", ""),
    ("library-linking", "library-linking"),  # killed again inside the recovery's own linking
])
def test_a_kill_while_linking_loses_nothing(reference, tmp_path, point, again):
    engine, expected = reference
    assert expected["check"] == 0 and expected["videos"] == ["day1", "day2", "day3"]
    assert expected["ids"]["day1/entity_001"] == expected["ids"]["day3/entity_001"]
    path = tmp_path / "memory"
    made = _step("create", path, engine)
    assert made.returncode == 0, made.stderr[-3000:]
    killed = _step("write", path, engine, point)
    assert killed.returncode == -9, killed.stderr[-3000:]
    if again:
        assert _step("verify", path, engine, again).returncode == -9  # the recovering reader, killed too
    assert _state(path, engine) == expected
