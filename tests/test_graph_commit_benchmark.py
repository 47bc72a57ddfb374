"""benchmarks/graph_commit.py measures what it says: each variant commits exactly the rows it names
into the graph it was given (speed itself is the benchmark's, never a test's)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from memtools.cli import main

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import graph_commit
        import import_bounded

        yield graph_commit, import_bounded
    finally:
        sys.path.remove(str(BENCHMARKS))


def _counts(graph_file: Path) -> dict[str, int]:
    import kuzu

    db = kuzu.Database(str(graph_file), read_only=True)
    conn = kuzu.Connection(db)
    try:
        return {table: conn.execute(f"MATCH (n:{table}) RETURN count(n)").get_next()[0]
                for table in ("Video", "MicroEvent", "VideoOutline", "MacroDetail", "NodeEdges")}
    finally:
        conn.close()
        db.close()


def test_each_variant_commits_only_what_it_names(tmp_path, bench):
    graph_commit, import_bounded = bench
    source, batch = tmp_path / "memory.json", tmp_path / "batch.json"
    import_bounded.write_file(source, 0.005)
    made, _ = import_bounded.write_file(batch, 0.005, seed=1, prefix="new_")
    assert main(["import-captions", str(source), "--memory", str(tmp_path / "m"), "--embedder", "test:8",
                 "--no-progress"]) == 0
    original = tmp_path / "m" / "graph.kuzu"
    base = _counts(original)
    seen = {}
    for variant in ("everything", "no derived rows", "VideoOutline"):
        copy = tmp_path / f"{variant}.kuzu"
        shutil.copyfile(original, copy)
        result = graph_commit.one(variant, copy, batch, 5)
        assert result["seconds"] > 0 and result["peak"] >= result["before"] > 0
        seen[variant] = {table: n - base[table] for table, n in _counts(copy).items()}
    assert made >= 5
    assert seen["everything"]["Video"] == 5 and seen["everything"]["VideoOutline"] == 5
    assert seen["everything"]["MicroEvent"] > 0 and seen["everything"]["MacroDetail"] > 0
    assert seen["no derived rows"]["Video"] == 5 and seen["no derived rows"]["MicroEvent"] > 0
    assert seen["no derived rows"]["VideoOutline"] == seen["no derived rows"]["MacroDetail"] == 0
    assert seen["VideoOutline"] == {"Video": 0, "MicroEvent": 0, "VideoOutline": 5, "MacroDetail": 0, "NodeEdges": 0}
