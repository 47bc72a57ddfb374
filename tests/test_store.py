"""The memory folder: atomic writes, replace/delete, manifest checks, and the process-sharing rule."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import pytest

from memtools.embed.testing import TestEmbedder
from memtools.errors import ConfigError, IncompatibleMemory, MemoryBusy, MemoryNotFound, StoreError
from memtools.schema import Edge, EdgeCategory
from memtools.store import Memory
from memtools.testing import kitchen_graph
from memtools.tools import MemoryTools


def _counts(memory: Memory) -> dict[str, int]:
    with memory.reading() as g:
        return g.counts()


def test_rewriting_a_video_replaces_it_without_duplicates(fresh_memory):
    fresh_memory.write_video(kitchen_graph())
    first = _counts(fresh_memory)
    graph = kitchen_graph()
    graph.macros[0].label = "Dicing onions"
    fresh_memory.write_video(graph)
    assert _counts(fresh_memory) == first
    assert fresh_memory.vectors.count() == 1 + 2 + 3 + 7 + 5 + 1  # the root's profile row, then each node
    tools = MemoryTools(fresh_memory)
    assert tools.get_macro_events(macro_ids=["kitchen/macro_0000"]).macros[0].label == "Dicing onions"
    assert [h.id for h in tools.search_nodes("Dicing", top_k=50, node_types=["macro"]).hits].count(
        "kitchen/macro_0000") == 1


def test_deleting_a_video_removes_nodes_vectors_and_frames(fresh_memory):
    fresh_memory.write_videos([kitchen_graph("a"), kitchen_graph("b")])
    frames = fresh_memory.frames_dir("a")
    frames.mkdir(parents=True)
    (frames / "kf.jpg").write_bytes(b"x")
    assert fresh_memory.delete_video("a") is True
    assert fresh_memory.delete_video("a") is False
    assert fresh_memory.video_ids() == ["b"]
    assert _counts(fresh_memory)["video"] == 1
    assert {h.video_id for h in MemoryTools(fresh_memory).search_nodes("lid", top_k=50).hits} == {"b"}
    assert not frames.exists()


def test_a_failed_write_leaves_kuzu_and_lance_as_they_were(fresh_memory, monkeypatch):
    fresh_memory.write_video(kitchen_graph("a"))
    before_counts, before_rows = _counts(fresh_memory), fresh_memory.vectors.count()

    def boom(*args, **kwargs):
        raise StoreError("disk full (simulated)")

    monkeypatch.setattr(fresh_memory.vectors, "replace_videos", boom)
    with pytest.raises(StoreError, match="disk full"):
        fresh_memory.write_video(kitchen_graph("b"))
    monkeypatch.undo()
    assert _counts(fresh_memory) == before_counts
    assert fresh_memory.vectors.count() == before_rows
    assert fresh_memory.video_ids() == ["a"]


def test_an_inconsistent_graph_is_refused_before_anything_is_written(fresh_memory):
    graph = kitchen_graph()
    graph.edges.append(Edge(source="kitchen/macro_0000/ent_001", target="kitchen/macro_0000/ent_099",
                            category=EdgeCategory.SPATIAL, label="NEXT_TO"))
    with pytest.raises(StoreError, match="dangling"):
        fresh_memory.write_video(graph)
    assert fresh_memory.video_ids() == []
    assert fresh_memory.vectors.count() == 0


def test_same_video_twice_in_one_batch_is_a_config_error(fresh_memory):
    with pytest.raises(ConfigError, match="twice"):
        fresh_memory.write_videos([kitchen_graph(), kitchen_graph()])


def test_opening_with_another_embedder_is_refused(kitchen_memory_path):
    with pytest.raises(IncompatibleMemory, match="built with embedder 'test:hash-64'.*opened with 'test:hash-32'"):
        Memory.open(kitchen_memory_path, TestEmbedder(32))


def test_a_newer_schema_is_refused(tmp_path):
    with Memory.create(tmp_path / "m", TestEmbedder(16)):
        pass
    manifest = json.loads((tmp_path / "m" / "memtools.json").read_text())
    manifest["schema_version"] = 99
    (tmp_path / "m" / "memtools.json").write_text(json.dumps(manifest))
    with pytest.raises(IncompatibleMemory, match="schema version 99.*upgrade memtools"):
        Memory.open(tmp_path / "m")


def test_missing_memory_says_how_to_make_one(tmp_path):
    with pytest.raises(MemoryNotFound, match="memtools import-captions"):
        Memory.open(tmp_path / "nothing")


def test_create_refuses_a_folder_with_other_files(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="not a memtools memory"):
        Memory.create(tmp_path, TestEmbedder(16))


def test_manifest_records_counts_and_generation(fresh_memory):
    fresh_memory.write_video(kitchen_graph())
    entry = fresh_memory.manifest.videos["kitchen"]
    assert entry.status == "ready" and entry.counts["macro"] == 3 and entry.counts["edges"] == 11
    assert fresh_memory.manifest.generation == 1


def test_lance_versions_do_not_pile_up(fresh_memory):
    for _ in range(6):
        fresh_memory.write_video(kitchen_graph())
    table = fresh_memory.vectors.nodes()
    assert table.count_rows() == 19
    assert len(table.list_indices()) == 5  # fts + 2 bitmap + 2 btree


WRITER = textwrap.dedent("""
    import sys, time
    from memtools.embed.testing import TestEmbedder
    from memtools.store import Memory
    from memtools.testing import kitchen_graph
    memory = Memory.open(sys.argv[1], TestEmbedder(64))
    for i in range(int(sys.argv[2])):
        memory.write_video(kitchen_graph(f"w{i}"))
    print("done", flush=True)
""")


@pytest.mark.slow
def test_readers_in_this_process_survive_a_writer_in_another(kitchen_memory_path, tmp_path):
    """kuzu 0.11.3: one read-write process or many read-only ones. Reads meet the writer as
    MemoryBusy at worst (never a raw kuzu error), and see its videos afterwards without reopening."""
    import shutil

    path = tmp_path / "shared"
    shutil.copytree(kitchen_memory_path, path)
    reader = Memory.open(path, TestEmbedder(64), busy_timeout=0.5, idle_release=0.2)
    tools = MemoryTools(reader)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), "4"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    answered = busy = 0
    deadline = time.monotonic() + 120
    while writer.poll() is None and time.monotonic() < deadline:
        try:
            with reader.reading() as g:
                assert g.get("kitchen").title.startswith("Cooking")
            answered += 1
        except MemoryBusy as exc:
            assert "try again" in str(exc)
            busy += 1
        time.sleep(0.02)
    out, err = writer.communicate(timeout=60)
    assert writer.returncode == 0, err
    assert "done" in out
    assert answered > 0
    assert tools.list_videos().videos[-1].video_id == "w3"
    assert set(reader.video_ids()) == {"kitchen", "w0", "w1", "w2", "w3"}
    reader.close()


@pytest.mark.slow
def test_a_second_writer_process_waits_for_the_first(kitchen_memory_path, tmp_path):
    import shutil

    path = tmp_path / "shared"
    shutil.copytree(kitchen_memory_path, path)
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), "2"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    with Memory.open(path, TestEmbedder(64)) as memory:
        assert memory.video_ids() == ["kitchen", "w0", "w1"]
        assert _counts(memory)["video"] == 3


def test_a_failed_graph_write_rolls_the_vectors_back(fresh_memory, monkeypatch):
    fresh_memory.write_video(kitchen_graph("a"))
    before_counts, before_rows = _counts(fresh_memory), fresh_memory.vectors.count()
    from memtools.store.graph import KuzuGraph

    def boom(self, graphs):
        raise StoreError("graph insert failed (simulated)")

    monkeypatch.setattr(KuzuGraph, "insert", boom)
    with pytest.raises(StoreError, match="simulated"):
        fresh_memory.write_video(kitchen_graph("b"))
    monkeypatch.undo()
    assert _counts(fresh_memory) == before_counts
    assert fresh_memory.vectors.count() == before_rows
    assert fresh_memory.video_ids() == ["a"]
