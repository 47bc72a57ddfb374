"""A write that fails after its graph commit for a reason a retry cannot cure (a value the catalog
cannot hold, a bug) is undone at once: the memory answers as before, with no journal left for a
recovery that would fail the same way forever. A failure of the disk is still finished by the next
writer (``test_faults_writes.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fault_helpers import EMBEDDER, check, cli, mem, searchable, template  # noqa: F401 - fixtures

from memtools.store import Memory
from memtools.testing import kitchen_graph

SRC = Path(__file__).resolve().parents[2] / "src"


def _titles(path: Path) -> dict[str, str]:
    from memtools.tools import MemoryTools

    with Memory.open(path, EMBEDDER) as memory:
        return {v.video_id: v.title for v in MemoryTools(memory).list_videos().videos}


def _renamed(video_id: str) -> object:
    graph = kitchen_graph(video_id)
    graph.video = graph.video.model_copy(update={"title": "the new version"})
    return graph


def _broken(*_: object, **__: object) -> None:
    raise ValueError("a value the catalog cannot hold")


@pytest.mark.parametrize("video_id", ["kitchen", "k3"])  # a replace, and a new video
@pytest.mark.parametrize("step", ["library", "catalog"])
def test_a_write_that_fails_after_its_commit_is_undone_at_once(mem, capsys, monkeypatch, video_id, step):
    import memtools.store.writes.batch as batch

    before = _titles(mem)
    if step == "library":
        monkeypatch.setattr(batch.library, "after_write", _broken)
    else:
        from memtools.store.catalog.videos import VideoCatalog

        monkeypatch.setattr(VideoCatalog, "apply", _broken)
    with Memory.open(mem, EMBEDDER) as memory, pytest.raises(ValueError, match="cannot hold"):
        memory.write_video(_renamed(video_id))
    monkeypatch.undo()
    assert not (mem / ".write-journal").exists() and not (mem / ".write-kept").exists()
    code, out = check(mem, capsys)
    assert code == 0, out
    assert _titles(mem) == before
    assert searchable(mem) == {"kitchen", "k2"}


KILLED = """
import sys
from memtools.embed.testing import TestEmbedder
from memtools.store import Memory
from memtools.testing import kitchen_graph
graph = kitchen_graph("kitchen")
graph.video = graph.video.model_copy(update={"title": "the new version"})
with Memory.open(sys.argv[1], TestEmbedder(64)) as memory:
    memory.write_video(graph)
"""


def test_a_recovery_whose_roll_forward_cannot_finish_undoes_the_write(mem, capsys, monkeypatch):
    """Killed after its commit; rolling it forward fails for good: the recovery undoes it instead of
    failing every command from then on."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "MEMTOOLS_FAULT_POINT": "library-written"}
    done = subprocess.run([sys.executable, "-c", KILLED, str(mem)], capture_output=True, text=True, timeout=120,
                          env=env)
    assert done.returncode == -9, done.stderr[-2000:]
    from memtools.store.catalog.videos import VideoCatalog

    monkeypatch.setattr(VideoCatalog, "apply", _broken)
    code, out, _ = cli("recover", "--memory", str(mem), capsys=capsys)
    monkeypatch.undo()
    assert code == 0 and "undid an interrupted write of video(s) kitchen" in out, out
    assert check(mem, capsys)[0] == 0
    assert _titles(mem)["kitchen"] != "the new version"
    assert searchable(mem) == {"kitchen", "k2"}
