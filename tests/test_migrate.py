"""``memtools migrate``: a memory copied kuzu -> ladybug -> kuzu answers every tool exactly as before.

The command runs its export and import in child processes (kuzu and ladybug cannot share one),
so this test process (kuzu) only ever opens the kuzu copies.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from memtools.cli import main
from memtools.embed import TestEmbedder, TestImageEmbedder
from memtools.errors import ConfigError
from memtools.store import Memory
from memtools.testing import kitchen_graph, with_speech
from memtools.tools import TOOL_SPECS, MemoryTools
from memtools.tools.snapshot import differences, snapshot
from visual_support import coloured_graph

needs_ladybug = pytest.mark.skipif(importlib.util.find_spec("ladybug") is None,
                                   reason="ladybug is not installed: pip install 'memtools[ladybug]'")


@pytest.fixture()
def memory_path(tmp_path):
    path = tmp_path / "memory"
    with Memory.create(path, TestEmbedder(64), image_embedder=TestImageEmbedder()) as memory:
        memory.write_video(with_speech(kitchen_graph()))
        memory.write_video(coloured_graph(path, "garden", ("yellow", "blue", "orange")))
    return path


def _snapshot(path):
    with Memory.open(path) as memory:
        return snapshot(MemoryTools(memory))


@needs_ladybug
@pytest.mark.slow
def test_kuzu_to_ladybug_and_back_answers_every_tool_the_same(memory_path, tmp_path, capsys):
    before = _snapshot(memory_path)
    assert {call["tool"] for call in before} == set(TOOL_SPECS)
    assert sum(call["error"] is None for call in before) >= 0.8 * len(before)  # mostly answers, not errors
    assert any(call["images"] for call in before)  # inspect_frames served real frames
    lady = tmp_path / "lady"
    assert main(["migrate", "--memory", str(memory_path), "--engine", "ladybug", "--to", str(lady)]) == 0
    assert f"{len(before)} tool call(s) answered identically" in capsys.readouterr().out
    assert json.loads((lady / "memtools.json").read_text())["graph_engine"] == "ladybug"
    assert (lady / "graph.lbug").exists() and not (lady / "graph.kuzu").exists()
    assert (lady / "frames" / "garden").is_dir()
    assert _snapshot(memory_path) == before  # the source is untouched
    assert main(["migrate", "--memory", str(lady), "--engine", "kuzu"]) == 0  # in place, back to kuzu
    assert (lady / "graph.kuzu").exists() and (lady / "graph.lbug.pre-migrate").exists()
    after = _snapshot(lady)
    assert differences(before, after) == [] and after == before


def test_differences_name_each_call_that_changed(memory_path):
    before = _snapshot(memory_path)
    changed = [dict(call) for call in before]
    changed[3] = {**changed[3], "text": changed[3]["text"] + " (changed)"}
    call = f"{before[3]['tool']}({json.dumps(before[3]['arguments'], sort_keys=True)})"
    assert differences(before, changed) == [f"{call} differs"]
    assert "different calls" in differences(before, before[:-1])[0]


def test_migrating_to_the_same_engine_or_into_a_used_folder_is_refused(memory_path, tmp_path, capsys):
    assert main(["migrate", "--memory", str(memory_path), "--engine", "kuzu"]) == 1
    assert "already uses the kuzu graph engine" in capsys.readouterr().err
    used = tmp_path / "used"
    used.mkdir()
    (used / "notes.txt").write_text("mine")
    assert main(["migrate", "--memory", str(memory_path), "--engine", "ladybug", "--to", str(used)]) == 1
    assert "not empty" in capsys.readouterr().err and (used / "notes.txt").exists()


def test_a_memory_of_another_engine_is_not_opened_with_this_one(memory_path):
    from memtools.store.engines import graph_engine

    with pytest.raises(ConfigError, match="uses the kuzu graph engine, not ladybug.*memtools migrate"):
        Memory.open(memory_path, graph=graph_engine("ladybug"))
