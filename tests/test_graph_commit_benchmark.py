"""benchmarks/graph_commit.py measures what it says: each variant commits exactly the rows it names
into the graph it was given (speed itself is the benchmark's, never a test's)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchmark_support import benchmarks
from memtools.cli import main
from memtools.store.graph.navigation import NAVIGATION
from memtools.store.graph.rows import DERIVED


@pytest.fixture(scope="module")
def bench():
    with benchmarks("graph_commit", "import_bounded") as modules:
        yield modules


def _counts(graph_file: Path) -> dict[str, int]:
    import kuzu

    db = kuzu.Database(str(graph_file), read_only=True)
    conn = kuzu.Connection(db)
    try:
        tables = {row[0] for row in conn.execute("CALL show_tables() RETURN name").get_all()}
        return {table: conn.execute(f"MATCH (n:{table}) RETURN count(n)").get_next()[0] if table in tables else 0
                for table in ("Video", "MicroEvent", "VideoOutline", "MacroDetail", "NodeEdges")}
    finally:
        conn.close()
        db.close()


def _navigation(folder: Path) -> dict[str, int]:
    import sqlite3

    if not (folder / NAVIGATION).exists():
        return {}
    with sqlite3.connect(folder / NAVIGATION) as conn:
        return {name: conn.execute(f"SELECT count(*) FROM {name}").fetchone()[0] for name in DERIVED}


def test_each_variant_writes_the_navigation_rows_where_it_says(tmp_path, bench):
    graph_commit, import_bounded = bench
    source, batch = tmp_path / "memory.json", tmp_path / "batch.json"
    import_bounded.write_file(source, 0.005)
    made, _ = import_bounded.write_file(batch, 0.005, seed=1, prefix="new_")
    assert main(["import-captions", str(source), "--memory", str(tmp_path / "m"), "--embedder", "test:8",
                 "--no-progress"]) == 0
    original = tmp_path / "m" / "graph.kuzu"
    base = _counts(original)
    assert base["VideoOutline"] == base["MacroDetail"] == 0 and _navigation(tmp_path / "m")["VideoOutline"] > 0
    seen, navigation = {}, {}
    for variant in ("this layout", "rows in the graph"):
        folder = tmp_path / variant.replace(" ", "-")
        folder.mkdir()
        copy = folder / "graph.kuzu"
        shutil.copyfile(original, copy)
        result = graph_commit.one(variant, copy, batch, 5)
        assert result["seconds"] > 0 and result["peak"] >= result["before"] > 0
        seen[variant] = {table: n - base[table] for table, n in _counts(copy).items()}
        navigation[variant] = _navigation(folder)
    assert made >= 5
    assert seen["this layout"] == {"Video": 5, "MicroEvent": seen["this layout"]["MicroEvent"], "VideoOutline": 0,
                                   "MacroDetail": 0, "NodeEdges": 0} and seen["this layout"]["MicroEvent"] > 0
    assert navigation["this layout"]["VideoOutline"] == 5 and navigation["this layout"]["MacroDetail"] > 0
    assert seen["rows in the graph"]["Video"] == seen["rows in the graph"]["VideoOutline"] == 5
    assert seen["rows in the graph"]["NodeEdges"] > seen["rows in the graph"]["MacroDetail"] > 0
    assert navigation["rows in the graph"] == {}
