"""benchmarks/commit_tables.py measures what it says: a part writes its own rows and no others, every
part of a caption batch is listed with the rows it writes, and a part's COMMITs are timed on a copy
(speed itself is the benchmark's, never a test's)."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import pytest

from benchmark_support import benchmarks
from memtools.importers.captions import graph_from_captions
from memtools.importers.dense_captions import read_dense_captions
from memtools.store import Memory


@pytest.fixture(scope="module")
def bench():
    with benchmarks("commit_tables", "import_bounded") as (commit_tables, _):
        yield commit_tables


def _graphs(path: Path, count: int, prefix: str):
    import import_bounded

    import_bounded.write_file(path, count / 1500, seed=2, prefix=prefix)
    return [graph_from_captions(v) for v in itertools.islice(read_dense_captions(path), count)]


def _counts(graph_file: Path) -> dict[str, int]:
    from memtools.store.graph.cypher import KuzuGraph

    graph = KuzuGraph(graph_file, read_only=True)
    try:
        tables = ("Video", "SuperEvent", "MacroEvent", "MicroEvent")
        counts = {t: graph._run(f"MATCH (n:{t}) RETURN count(n)")[0][0] for t in tables}  # noqa: SLF001
        counts["edges"] = graph._run("MATCH ()-[r:Rel]->() RETURN count(r)")[0][0]  # noqa: SLF001
    finally:
        graph.close()
    return counts


def test_parts_and_their_rows(tmp_path, bench):
    graphs = _graphs(tmp_path / "batch.json", 12, "p_")
    parts = dict(bench.parts_of(graphs))
    nodes = sum(len(list(g.nodes())) for g in graphs)
    edges = sum(len([*g.hierarchy_edges(), *g.edges]) for g in graphs)
    assert parts[bench.NODES] == nodes and parts[bench.EDGES] == edges
    assert parts[bench.EVERYTHING] == nodes + edges
    assert parts["Video"] == 12 and parts["Video > SuperEvent"] == sum(len(g.supers) for g in graphs)
    tables = [name for name in parts if name not in (bench.EVERYTHING, bench.NODES, bench.EDGES)]
    assert sum(parts[name] for name in tables) == nodes + edges  # each row in exactly one part


@pytest.mark.parametrize("part", ["Video", "MacroEvent > MicroEvent"])
def test_a_part_commits_its_rows_only(tmp_path, bench, part):
    from memtools.embed.testing import TestEmbedder
    from memtools.importers.bulk import bulk_write

    old = _graphs(tmp_path / "base.json", 6, "b_")
    memory_path = tmp_path / "memory"
    with Memory.create(memory_path, TestEmbedder(64)) as memory:
        bulk_write(memory, old, show_progress=False)
        graph_file = memory.graph_file
    copy = tmp_path / graph_file.name
    shutil.copyfile(graph_file, copy)
    new = _graphs(tmp_path / "new.json", 12, "new_")
    seconds = bench.one(part, copy, tmp_path / "new.json", batch=4, batches=2)
    assert len(seconds) == 2 and all(s > 0 for s in seconds)  # the first of three COMMITs is left out
    counts = _counts(copy)
    before = {"Video": 6, "SuperEvent": sum(len(g.supers) for g in old),
              "MacroEvent": sum(len(g.macros) for g in old), "MicroEvent": sum(len(g.events) for g in old),
              "edges": sum(len([*g.hierarchy_edges(), *g.edges]) for g in old)}
    if part == "Video":  # 12 videos' rows, nothing else
        assert counts == {**before, "Video": 6 + 12}
    else:  # every node of the batch (committed first, untimed), and of the edges that one pair only
        pair = dict(bench.parts_of(new))[part]
        assert pair > 0
        assert counts == {"Video": 18, "SuperEvent": before["SuperEvent"] + sum(len(g.supers) for g in new),
                          "MacroEvent": before["MacroEvent"] + sum(len(g.macros) for g in new),
                          "MicroEvent": before["MicroEvent"] + sum(len(g.events) for g in new),
                          "edges": before["edges"] + pair}
