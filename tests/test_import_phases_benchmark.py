"""benchmarks/import_phases.py measures what it says: every batch of the import is clocked, each
phase it names is reached, the clocks leave the import's result unchanged, and the table's rows add
up (speed itself is the benchmark's, never a test's)."""

from __future__ import annotations

import pytest

from benchmark_support import benchmarks
from memtools.store import Memory


@pytest.fixture(scope="module")
def phases():
    with benchmarks("import_phases") as (import_phases,):
        yield import_phases


def test_every_batch_is_clocked_and_the_memory_is_whole(tmp_path, phases):
    import import_bounded

    source = tmp_path / "captions.json"
    videos, _ = import_bounded.write_file(source, 0.03)
    batches = phases.run(source, tmp_path / "memory")
    assert len(batches) == -(-videos // 200)  # the import's default batch size
    every = {name for _, _, name in phases.TIMED}
    seen = {name for batch in batches for name, seconds in batch.items() if seconds > 0}
    # the recovery and the folds are reached too: recovery in every write, a fold after the last batch
    assert every - {"folds"} <= seen, every - seen
    assert all(seconds >= 0 for batch in batches for seconds in batch.values())
    with Memory.open(tmp_path / "memory") as memory:
        assert len(memory.manifest.videos) == videos
    rows = phases.table(batches)
    first = sum(float(row[1]) for row in rows[:-1])
    assert float(rows[-1][1].strip("*")) == pytest.approx(first, abs=0.2)
    # the clocks are gone once the run ends
    from memtools.store.graph.cypher import KuzuGraph

    assert not hasattr(KuzuGraph.commit, "__wrapped__") and KuzuGraph.commit.__qualname__ == "KuzuGraph.commit"
