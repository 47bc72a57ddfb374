"""Canonical entities (issue 8): mentions merged across macro events, dated timelines with
roles, entity search, and the ToolError paths for bad ids, names and ``as_of_sec``."""

from __future__ import annotations

import pytest

from memtools.embed.testing import TestEmbedder
from memtools.errors import ToolError
from memtools.schema import Edge, EdgeCategory, Entity, EntityType
from memtools.store import Memory
from memtools.store.tables.entities import canonicalize, entity_rows
from memtools.store.tables.entity_index import TABLE
from memtools.testing import kitchen_graph
from memtools.tools import MemoryTools


def test_mentions_of_one_referent_merge_across_episodes():
    groups = canonicalize(kitchen_graph())
    cook = next(g for g in groups if g[0].description == "a cook in a blue apron")
    assert [e.macro_id for e in cook] == ["kitchen/macro_0000", "kitchen/macro_0001", "kitchen/macro_0002"]
    assert sum(len(g) for g in groups) == len(kitchen_graph().entities)


def test_conflicting_attributes_and_same_episode_never_merge():
    graph = kitchen_graph()
    m0, m1 = graph.macros[0].id, graph.macros[1].id
    graph.entities += [
        Entity(id=f"{m0}/ent_010", video_id="kitchen", macro_id=m0, entity_type=EntityType.OBJECT,
               description="a ball", attributes={"color": "red"}),
        Entity(id=f"{m0}/ent_011", video_id="kitchen", macro_id=m0, entity_type=EntityType.OBJECT,
               description="a ball", attributes={"color": "red"}),  # a second red ball in the same episode
        Entity(id=f"{m1}/ent_010", video_id="kitchen", macro_id=m1, entity_type=EntityType.OBJECT,
               description="the ball", attributes={"color": "white"}),
    ]
    balls = [g for g in canonicalize(graph) if "ball" in g[0].description]
    assert sorted(len(g) for g in balls) == [1, 1, 1]


def test_is_same_as_edges_merge_even_different_words():
    graph = kitchen_graph()
    m2 = graph.macros[2].id
    graph.entities.append(Entity(id=f"{m2}/ent_010", video_id="kitchen", macro_id=m2, entity_type=EntityType.PERSON,
                                 name="Chef Ana"))
    graph.edges.append(Edge(source=f"{m2}/ent_010", target=f"{m2}/ent_001", category=EdgeCategory.SPATIAL,
                            label="IS_SAME_AS"))
    rows = entity_rows([graph])
    ana = next(r for r in rows if r["name"] == "Chef Ana")
    assert "a cook in a blue apron" in ana["aliases"]


def test_timeline_lists_roles_in_time_order(kitchen_tools):
    timeline = kitchen_tools.get_entity_timeline(name="cook").timelines
    assert len(timeline) == 1
    apps = timeline[0].appearances
    assert [a.t_start for a in apps] == sorted(a.t_start for a in apps)
    assert [r.label for a in apps for r in a.roles] == ["PERFORMS"] * 3
    assert apps[0].roles[0].text == "slices onions" and apps[0].roles[0].t_start == 10


def test_entity_search_finds_by_name_and_by_meaning(kitchen_tools):
    found = kitchen_tools.search_entities("lid", top_k=3).entities
    assert found[0].name == "Lodge"  # alias match on "a metal pot lid with a Lodge logo"
    assert kitchen_tools.search_entities("apron", top_k=1).entities[0].id == "kitchen/entity_001"
    early = kitchen_tools.search_entities("lid", top_k=3, as_of_sec=200).entities
    assert all(e.t_last <= 200 for e in early) and "Lodge" not in [e.name for e in early]


@pytest.mark.parametrize("kwargs, message", [
    ({}, "pass entity_id"),
    ({"entity_id": "kitchen/entity_001", "name": "cook"}, "pass entity_id"),
    ({"entity_id": "kitchen/entity_999"}, "no entity 'kitchen/entity_999'"),
    ({"entity_id": "kitchen/macro_0000/ent_001"}, "entity ids look like '<video>/entity_003'"),
    ({"entity_id": "x') RETURN 1 //"}, "no entity"),
    ({"name": "unicorn"}, "no entity named like 'unicorn'"),
    ({"name": "   "}, "pass entity_id"),
    ({"name": "cook", "video_id": "nope"}, "no video 'nope'"),
    ({"name": "cook", "as_of_sec": -5}, "as_of_sec must be"),
    ({"name": "cook", "as_of_sec": float("nan")}, "as_of_sec must be"),
])
def test_entity_timeline_errors(kitchen_tools, kwargs, message):
    with pytest.raises(ToolError, match=message.replace("(", r"\(").replace(")", r"\)")):
        kitchen_tools.get_entity_timeline(**kwargs)


def test_search_entities_errors(kitchen_tools):
    with pytest.raises(ToolError, match="query is empty"):
        kitchen_tools.search_entities("  ")
    with pytest.raises(ToolError, match="top_k must be between 1 and 50"):
        kitchen_tools.search_entities("cook", top_k=0)


def test_memory_without_entity_profiles_says_what_to_do(tmp_path):
    """The manifest counts the video's entities, so a lost entities table is damage that `memtools repair`
    derives again (issue 22), not a memory that predates entity profiles."""
    with Memory.create(tmp_path / "m", TestEmbedder(64)) as memory:
        memory.write_video(kitchen_graph())
        memory.vectors._db.drop_table(TABLE)
        memory.entities._table = None
        with pytest.raises(ToolError, match=r"entities.lance is missing.*memtools repair"):
            MemoryTools(memory).get_entity_timeline(name="cook")


def test_rewrite_and_delete_keep_entities_in_step(tmp_path):
    with Memory.create(tmp_path / "m", TestEmbedder(64)) as memory:
        memory.write_video(kitchen_graph())
        memory.write_video(kitchen_graph("other"))
        memory.write_video(kitchen_graph())  # replaced, not duplicated
        n = len(memory.entities.of_video("kitchen"))
        assert n == len(canonicalize(kitchen_graph())) and len(memory.entities.of_video("other")) == n
        memory.delete_video("other")
        assert memory.entities.of_video("other") == []
        assert len(memory.entities.of_video("kitchen")) == n


def test_a_memory_from_before_profiles_is_refused_and_repair_adds_them(tmp_path):
    """Memories written by the previous release have no video profile rows and no entity table:
    reads say so and name `memtools repair`, which derives both from the graph."""
    from memtools.errors import MemoryDamaged
    from memtools.store.integrity.repair import repair

    path = tmp_path / "m"
    with Memory.create(path, TestEmbedder(64)) as memory:
        memory.write_video(kitchen_graph())
        memory.vectors.nodes().delete("kind = 'video'")
        memory.vectors._db.drop_table(TABLE)
    with Memory.open(path, TestEmbedder(64)) as memory, pytest.raises(MemoryDamaged, match="memtools repair"):
        MemoryTools(memory).search_nodes("pan")
    with Memory.open(path, TestEmbedder(64)) as memory:
        repair(memory)
    with Memory.open(path, TestEmbedder(64)) as memory:
        tools = MemoryTools(memory)
        assert tools.search_nodes("pan").hits
        assert tools.get_entity_timeline(name="cook").timelines[0].entity.appearances == 3


def test_entity_table_drops_old_versions_after_a_write(tmp_path, monkeypatch):
    """Lance keeps a table's old versions for a week unless told; an import of thousands of batches
    then holds every one on disk (2.9 GB for 0.63 GB of rows at 3,000 h)."""
    from datetime import timedelta

    from memtools.store.tables import lance_fold

    monkeypatch.setattr(lance_fold, "KEEP_VERSIONS_FOR", timedelta(0))
    with Memory.create(tmp_path / "m", TestEmbedder(64)) as memory:
        for vid in ("a", "b", "c", "d"):
            memory.write_video(kitchen_graph(vid))
        table = memory.entities.table()
        assert table is not None and len(table.list_versions()) <= 2
        assert {r["video_id"] for r in table.search().select(["video_id"]).limit(None).to_list()} == set("abcd")
