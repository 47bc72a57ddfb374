"""The memory folder: refused writes, manifest checks, versions. Write, replace, delete, rollback and
process sharing are in the conformance suite (tests/conformance), which runs on every graph engine."""

from __future__ import annotations

import json

import pytest

from memtools.embed.testing import TestEmbedder
from memtools.errors import ConfigError, IncompatibleMemory, MemoryNotFound, StoreError
from memtools.schema import Edge, EdgeCategory
from memtools.store import Memory
from memtools.testing import kitchen_graph


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
