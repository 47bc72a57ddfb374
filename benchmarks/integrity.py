"""What the integrity checks cost (issue 9, item 1).

    python benchmarks/integrity.py                 # 10, 100 and 436 videos (~1 min on 2 cores)
    python benchmarks/integrity.py --videos 10,50

For each size it writes a memory of N copies of the kitchen video (18 searchable nodes each,
``TestEmbedder``, so the numbers are storage, not model, time) and measures:

* the guard every read runs (``guard``: a few ``stat`` calls; the manifest's row sum is
  cached per manifest), per call;
* the once-per-generation lance row count (``guard_vectors`` after a fresh open);
* ``memtools check`` (``integrity.check``) on the whole memory;
* ``memtools repair`` after ``vectors/`` was deleted (re-reading every video from kuzu,
  re-embedding, rewriting lance and its indexes).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from _common import load_average, markdown_table
from memtools.embed.testing import TestEmbedder
from memtools.store import Memory
from memtools.store.integrity.checker import check, guard, guard_vectors
from memtools.store.integrity.repair import repair
from memtools.testing import kitchen_graph


def measure(n: int, workdir: Path) -> list[object]:
    path = workdir / f"m{n}"
    embedder = TestEmbedder(64)
    with Memory.create(path, embedder) as memory:
        memory.write_videos(kitchen_graph(f"v{i:04d}") for i in range(n))
    with Memory.open(path, embedder) as memory:
        calls = 2000
        start = time.perf_counter()
        for _ in range(calls):
            guard(memory)
        quick_us = (time.perf_counter() - start) / calls * 1e6
        start = time.perf_counter()
        guard_vectors(memory, memory.vectors_unchecked)
        count_ms = (time.perf_counter() - start) * 1e3
        start = time.perf_counter()
        report = check(memory)
        check_s = time.perf_counter() - start
        assert report.ok, report.render()
    shutil.rmtree(path / "vectors")
    with Memory.open(path, embedder) as memory:
        start = time.perf_counter()
        result = repair(memory)
        repair_s = time.perf_counter() - start
        assert result.ok, result.render()
    return [n, n * 18, f"{quick_us:.0f} µs", f"{count_ms:.0f} ms", f"{check_s:.2f} s", f"{repair_s:.2f} s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--videos", default="10,100,436", help="comma-separated memory sizes in videos")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(v) for v in args.videos.split(",")):
            rows.append(measure(n, Path(tmp)))
    print(markdown_table(["videos", "lance rows", "guard per read", "row count (once per write)", "memtools check",
                          "memtools repair (vectors/ lost)"], rows))
    print(f"load average: {load_average()}")


if __name__ == "__main__":
    main()
