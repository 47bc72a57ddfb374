"""Naming and forgetting a person, killed with SIGKILL at each step: a label lands whole or not at all (like
every change), a forget that was recorded is always finished by the next writer (its deletion is done again),
and the memory checks clean afterwards."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fault_helpers import EMBEDDER, check, cli

from memtools.changes import change_log, undo_change
from memtools.store import Memory
from memtools.store.tables.voices import load_voices

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from people_support import near, people, save, talk, voice  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("people") / "memory"
    with Memory.create(path, EMBEDDER) as memory:
        for vid, centroids in (("mon", {"S1": voice(1), "S2": voice(2)}), ("tue", {"S1": near(2, 5)})):
            save(path, vid, centroids)
            memory.write_video(talk(vid))
    return path


@pytest.fixture()
def mem(template, tmp_path) -> Path:
    shutil.copytree(template, tmp_path / "memory")
    return tmp_path / "memory"


def killed(path: Path, point: str, *argv: str) -> subprocess.CompletedProcess:
    src = Path(__file__).resolve().parents[2] / "src"
    code = "import sys; from memtools.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *argv, "--memory", str(path)], capture_output=True, text=True,
                          timeout=180, env={**os.environ, "PYTHONPATH": str(src), "MEMTOOLS_FAULT_POINT": point})


def speakers(path: Path) -> list[str | None]:
    with Memory.open(path, EMBEDDER) as memory, memory.reading() as graph:
        video = graph.video_graph("mon")
        assert video is not None
        return [s.speaker for s in sorted(video.speech, key=lambda s: s.t_start)]


@pytest.mark.parametrize("point, lands", [("change-recorded:1", False), ("graph-committed:1", True),
                                          ("library-linking:1", True), ("change-written:1", True)])
def test_kill_9_while_naming_a_person(mem, capsys, point, lands):
    before = people(mem)
    done = killed(mem, point, "label-person", "mon/S2", "Ada")
    assert done.returncode == -9, done.stderr
    with Memory.open(mem, EMBEDDER) as memory:
        (change,) = change_log(memory)
    assert change.state == ("done" if lands else "abandoned")
    assert check(mem, capsys)[0] == 0
    assert speakers(mem) == (["S1", "Ada", "S1"] if lands else ["S1", "S2", "S1"])
    assert people(mem) == before  # the same people, whatever the names
    if lands:
        with Memory.open(mem, EMBEDDER) as memory:
            undo_change(memory, change.id)
        assert speakers(mem) == ["S1", "S2", "S1"]


@pytest.mark.parametrize("point", ["change-recorded:1", "forget-person-video:1", "change-written:1"])
def test_kill_9_while_forgetting_a_person_is_finished_by_the_next_writer(mem, capsys, point):
    person = people(mem)[("tue", "S1")]
    done = killed(mem, point, "forget-person", person)
    assert done.returncode == -9, done.stderr
    with Memory.open(mem, EMBEDDER) as memory:
        (change,) = change_log(memory)  # settling finishes the deletion
    assert change.action == "forget_person" and change.state == "done"
    assert [v.label for v in load_voices(mem, "mon")] == ["S1"] and load_voices(mem, "tue") == []
    assert check(mem, capsys)[0] == 0
    found = people(mem)
    assert found[("mon", "S2")] != found[("tue", "S1")]
    code, out, _ = cli("log", "--memory", str(mem), capsys=capsys)
    assert code == 0 and "(pending)" not in out
