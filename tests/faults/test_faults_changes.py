"""A change killed with SIGKILL at each of its steps (before its write, inside the store's commit, after the write
before the log marks it done): the memory holds the old video or the new one, never half, the change log says
which (settled by the next reader that may write), nothing else is touched, and the change can be undone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fault_helpers import EMBEDDER, check, cli, mem, searchable, template  # noqa: F401 - fixtures

from memtools.changes import change_log, merge_entities, undo_change
from memtools.errors import ToolError
from memtools.store import Memory

MERGE = ("kitchen/entity_004", "kitchen/entity_005")


def entities(path: Path) -> dict[str, dict[str, tuple[str, list[str]]]]:
    with Memory.open(path, EMBEDDER) as memory:
        return {v: {e.id: (e.name, sorted(e.mentions)) for e in memory.entities.of_video(v)}
                for v in ("kitchen", "k2")}


def killed_merge(path: Path, point: str) -> subprocess.CompletedProcess:
    src = Path(__file__).resolve().parents[2] / "src"
    code = "import sys; from memtools.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, "merge-entities", *MERGE, "--memory", str(path)],
                          capture_output=True, text=True, timeout=180,
                          env={**os.environ, "PYTHONPATH": str(src), "MEMTOOLS_FAULT_POINT": f"{point}:1"})


@pytest.mark.slow
@pytest.mark.parametrize("point, lands", [("change-recorded", False), ("graph-committed", True),
                                          ("change-written", True)])
def test_kill_9_during_a_merge_loses_nothing(mem, capsys, point, lands):
    before = entities(mem)
    done = killed_merge(mem, point)
    assert done.returncode == -9, done.stderr
    with Memory.open(mem, EMBEDDER) as memory:
        (change,) = change_log(memory)  # a reader that may write settles the killed change
    assert change.id == "c0001" and change.state == ("done" if lands else "abandoned")
    assert check(mem, capsys)[0] == 0
    after = entities(mem)
    assert after["k2"] == before["k2"] and searchable(mem) == {"kitchen", "k2"}
    if lands:
        assert len(after["kitchen"]) == len(before["kitchen"]) - 1
        with Memory.open(mem, EMBEDDER) as memory:
            undo_change(memory, "c0001")
    else:
        assert after == before
        with Memory.open(mem, EMBEDDER) as memory:
            with pytest.raises(ToolError, match="did not land"):
                undo_change(memory, "c0001")
            merge_entities(memory, *MERGE)  # the same change, made again, lands
    assert len(entities(mem)["kitchen"]) == len(before["kitchen"]) - (0 if lands else 1)
    code, out, _ = cli("log", "--memory", str(mem), capsys=capsys)
    assert code == 0 and "c0002" in out and "(pending)" not in out, out


@pytest.mark.slow
def test_a_merge_whose_data_the_engine_dropped_puts_the_video_back(mem, capsys):
    """A kill in the checkpoint of the merge's COMMIT can leave the graph with neither version of the video (the
    store then rolls the write back by removing the video, for a resumed build to write again): settling the
    abandoned change writes back the copy the log kept, so a correction never loses the video it corrects."""
    from test_faults_commit import _engine_drops_the_data

    before = entities(mem)
    assert killed_merge(mem, "graph-committed").returncode == -9
    _engine_drops_the_data(mem, "kitchen")
    with Memory.open(mem, EMBEDDER) as memory:
        (change,) = change_log(memory)
    assert change.state == "abandoned"
    assert check(mem, capsys)[0] == 0
    assert entities(mem) == before and searchable(mem) == {"kitchen", "k2"}
    with Memory.open(mem, EMBEDDER) as memory:
        merge_entities(memory, *MERGE)  # made again, it lands
    assert len(entities(mem)["kitchen"]) == len(before["kitchen"]) - 1
