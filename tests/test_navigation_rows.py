"""Navigation rows (``store/graph/rows.py``): the per-video outline and per-node edge rows give
exactly what the graph queries give, are replaced with their video, and ``memtools check`` /
``memtools repair`` count and rebuild them (a memory written before them keeps answering)."""

from __future__ import annotations

import sqlite3

import pyarrow as pa

from mcp_support import jpeg
from memtools.cli import main
from memtools.embed.testing import TestEmbedder
from memtools.schema import Edge, EdgeCategory, Keyframe, VideoGraph, keyframe_id
from memtools.store import Memory
from memtools.store.graph.navigation import NAVIGATION
from memtools.store.graph.rows import DERIVED, EDGES, OUTLINE, columns, rows_for
from memtools.store.integrity.checker import check
from memtools.testing import kitchen_graph, with_speech
from memtools.tools import MemoryTools


def with_keyframes(graph: VideoGraph) -> VideoGraph:
    """The graph plus a keyframe per macro event, DEPICTS the macro and its first entity."""
    keyframes, edges = [], list(graph.edges)
    for n, macro in enumerate(graph.macros):
        kf = Keyframe(id=keyframe_id(graph.video_id, n), video_id=graph.video_id, t=macro.t_start,
                      path=f"frames/{graph.video_id}/{n}.jpg", macro_id=macro.id)
        keyframes.append(kf)
        edges.append(Edge(source=kf.id, target=macro.id, category=EdgeCategory.GROUNDING, label="DEPICTS"))
        entity = next((e for e in graph.entities if e.macro_id == macro.id), None)
        if entity is not None:
            edges.append(Edge(source=kf.id, target=entity.id, category=EdgeCategory.GROUNDING, label="DEPICTS",
                              description="the cook is clearest here"))
    return graph.model_copy(update={"keyframes": keyframes, "edges": edges})


GRAPHS = (with_keyframes(kitchen_graph()), with_speech(kitchen_graph("k2")))
QUERIES = (("both", None, None), ("out", None, None), ("in", None, None), ("both", ["hierarchy"], None),
           ("both", None, ["CAUSES", "BEFORE"]), ("out", None, None, 2))


def write_all(memory: Memory) -> None:
    memory.write_videos(list(GRAPHS))
    for kf in GRAPHS[0].keyframes:  # the check looks for the images
        (memory.path / kf.path).parent.mkdir(parents=True, exist_ok=True)
        (memory.path / kf.path).write_bytes(jpeg(1))  # the check decodes them too


def everything(memory: Memory) -> dict:
    """Every graph read the navigation rows serve, over every node of both videos."""
    seen = {}
    with memory.reading() as g:
        for graph in GRAPHS:
            seen[graph.video_id] = (g.supers(graph.video_id), g.macros_of_video(graph.video_id))
            for node in graph.nodes():
                for direction, cats, labels, *limit in QUERIES:
                    seen[node.id, direction, str(cats), str(labels)] = g.edges(
                        node.id, direction, categories=cats, labels=labels, limit=limit[0] if limit else 200)
    return seen


def drop_rows(memory: Memory) -> None:
    """What a memory written before the navigation rows looks like (or a copy that left the file out)."""
    memory._release_graph()
    (memory.path / NAVIGATION).unlink()


def legacy_rows(memory: Memory) -> None:
    """What a memory written before navigation.sqlite looks like: the rows in kuzu node tables of the same names."""
    rows = rows_for(GRAPHS)
    memory._release_graph()
    (memory.path / NAVIGATION).unlink()
    with memory._writing() as kuzu:
        for name in DERIVED:
            kuzu._run(f"CREATE NODE TABLE IF NOT EXISTS {name}(" + ", ".join(f"{c} STRING" for c in columns(name))
                      + ", PRIMARY KEY(id))")
        kuzu.begin()
        for name in DERIVED:
            schema = pa.schema([(c, pa.string()) for c in columns(name)])
            kuzu._run(f"COPY {name} FROM $rows", {"rows": pa.Table.from_pylist(rows[name], schema=schema)})
        kuzu.commit()
        kuzu._present = None


def test_rows_answer_exactly_like_the_graph_queries_and_repair_rebuilds_them(tmp_path, capsys):
    path = tmp_path / "memory"
    with Memory.create(path, TestEmbedder(64)) as memory:
        write_all(memory)
        assert check(memory).ok and "2 of 2 video(s) have their navigation rows" in check(memory).render()
        with memory.reading() as g:
            assert g.edges("k2/macro_0001", "out", labels=["CONTAINS"])  # served from a NodeEdges row
            counts = g.derived_counts()
        kitchen = GRAPHS[0]
        assert counts["kitchen"] == {"MacroDetail": len(kitchen.macros), OUTLINE: 1,
                                     EDGES: len(list(kitchen.nodes()))}
        fast = everything(memory)
        relations = MemoryTools(memory).get_relations("kitchen/macro_0002").render()
        drop_rows(memory)
        memory.refresh()
        slow = everything(memory)
        assert fast == slow and any(len(v) > 3 for v in fast.values() if isinstance(v, list))
        assert MemoryTools(memory).get_relations("kitchen/macro_0002").render() == relations
        report = check(memory)
        assert not report.ok and {p.part for p in report.problems} == {"navigation"}
        assert all(p.repairable for p in report.problems)
        assert "0 of 2 video(s) have their navigation rows" in report.render()
    assert main(["repair", "--memory", str(path)]) == 0
    assert "wrote the navigation rows of 2 video(s) again from the graph" in capsys.readouterr().out
    with Memory.open(path, TestEmbedder(64)) as memory:
        assert check(memory).ok
        assert everything(memory) == fast


def test_replacing_or_deleting_a_video_replaces_its_rows(tmp_path):
    with Memory.create(tmp_path / "memory", TestEmbedder(64)) as memory:
        write_all(memory)
        smaller = GRAPHS[0].model_copy(update={"video": GRAPHS[0].video.model_copy(update={"title": "Renamed"})})
        memory.write_video(smaller)
        with memory.reading() as g:
            assert g.get("kitchen").title == "Renamed"
            video = next(e.other for e in g.edges("kitchen/super_01", "in") if e.label == "CONTAINS")
            assert video.title == "Renamed"  # the far end comes from the new outline row
        assert check(memory).ok
        memory.delete_video("k2")
        with memory.reading() as g:
            assert "k2" not in g.derived_counts() and g.edges("k2/macro_0001", "both") == []
        assert check(memory).ok


def test_rows_of_a_video_the_memory_does_not_hold_are_reported_and_removed(tmp_path):
    with Memory.create(tmp_path / "memory", TestEmbedder(64)) as memory:
        write_all(memory)
        memory._release_graph()
        with sqlite3.connect(memory.path / NAVIGATION) as conn:  # leave k2's rows behind, as a write cut short would
            for name in DERIVED:
                conn.execute(f"UPDATE {name} SET video_id = 'gone' WHERE video_id = 'k2'")
        report = check(memory)
        assert any("'gone'" in p.text for p in report.problems)
    assert main(["repair", "--memory", str(tmp_path / "memory")]) == 0
    with Memory.open(tmp_path / "memory", TestEmbedder(64)) as memory:
        assert check(memory).ok


def test_the_rows_live_in_navigation_sqlite_not_in_the_graph_transaction(tmp_path):
    with Memory.create(tmp_path / "memory", TestEmbedder(64)) as memory:
        write_all(memory)
        with memory.reading() as g:
            assert not any(g._has_rows(name) for name in DERIVED)  # no kuzu table holds them
        memory._release_graph()
        with sqlite3.connect(memory.path / NAVIGATION) as conn:
            stored = {name: conn.execute(f"SELECT count(*) FROM {name}").fetchone()[0] for name in DERIVED}
        assert stored == {name: len(rows) for name, rows in rows_for(GRAPHS).items()}


def test_a_memory_with_the_rows_in_kuzu_tables_answers_and_moves_them_as_it_writes(tmp_path):
    path = tmp_path / "memory"
    with Memory.create(path, TestEmbedder(64)) as memory:
        write_all(memory)
        fast = everything(memory)
        legacy_rows(memory)
        memory.refresh()
        assert not (path / NAVIGATION).exists()
        assert everything(memory) == fast  # served from kuzu's tables
        with memory.reading() as g:
            assert g.derived_counts()["kitchen"][OUTLINE] == 1
        assert check(memory).ok
        renamed = GRAPHS[0].model_copy(update={"video": GRAPHS[0].video.model_copy(update={"title": "Renamed"})})
        memory.write_video(renamed)  # its kuzu rows go with its old version; the new ones go to the file
        with memory.reading() as g:
            assert g.get_many(["kitchen"])["kitchen"].title == "Renamed"
            assert g._run("MATCH (o:VideoOutline) RETURN o.id") == [["k2"]]
            video = next(e.other for e in g.edges("kitchen/super_01", "in") if e.label == "CONTAINS")
            assert video.title == "Renamed"
        assert check(memory).ok


def test_an_unreadable_navigation_file_falls_back_is_reported_and_repaired(tmp_path, capsys):
    path = tmp_path / "memory"
    with Memory.create(path, TestEmbedder(64)) as memory:
        write_all(memory)
        fast = everything(memory)
        memory._release_graph()
        (path / NAVIGATION).write_bytes(b"not a database" * 100)
        memory.refresh()
        assert everything(memory) == fast  # the graph queries answer the same
        report = check(memory)
        assert [p.part for p in report.problems] == ["navigation"] and report.problems[0].repairable
        assert "navigation.sqlite cannot be read" in report.render()
    assert main(["repair", "--memory", str(path)]) == 0
    out = capsys.readouterr().out
    assert "moved the unreadable navigation.sqlite aside" in out and "of 2 video(s) again" in out
    assert (path / (NAVIGATION + ".damaged")).read_bytes().startswith(b"not a database")
    with Memory.open(path, TestEmbedder(64)) as memory:
        assert check(memory).ok and everything(memory) == fast
