"""What one purge costs in a large memory (issue 47: under 60 s for one video of 1,000 on a 2-core machine).

    python benchmarks/purge_cost.py --videos 1000 --engine kuzu

A memory of ``--videos`` caption-imported videos (the test embedder: the write path, not the model; the import
path of benchmarks/replace_cost.py) is made once; one video is then purged (``forget_video(..., purge=True)``)
and, on a fresh copy, one video is forgotten first and purged afterwards (only the change log's copies left).
Prints wall and CPU seconds of each, with the time of each step (the graph file rewritten, the lance tables
written again, the SQLite files vacuumed) and the CPU model (``lscpu``).
"""

from __future__ import annotations

import argparse
import resource
import shutil
import tempfile
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

from _common import cpu_model, load_average, markdown_table
from memtools.changes import forget_video
from memtools.embed.testing import TestEmbedder
from memtools.importers.bulk import bulk_write
from memtools.importers.captions import graphs_from_files
from memtools.store import Memory
from memtools.store.purging import graph_copy, lance_rewrite, sqlite_files
from replace_cost import captions

STEPS: dict[str, float] = defaultdict(float)


@contextmanager
def timed_steps():
    """Time the purge's heavy steps (wrapped for the run, put back after)."""
    wrapped = [(graph_copy, "rewrite_memory", "graph rewrite"), (lance_rewrite, "rewrite_tables", "lance rewrite"),
               (sqlite_files, "purge_rows", "sqlite vacuum")]
    saved = [(module, name, getattr(module, name)) for module, name, _ in wrapped]

    def timer(fn, label):
        def run(*args, **kwargs):
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                STEPS[label] += time.perf_counter() - started
        return run

    for module, name, label in wrapped:
        setattr(module, name, timer(getattr(module, name), label))
    try:
        yield
    finally:
        for module, name, fn in saved:
            setattr(module, name, fn)


def purge(base: Path, work: Path, name: str, forget_first: bool, engine: str) -> tuple[float, float, dict]:
    path = work / name
    shutil.copytree(base, path)
    STEPS.clear()
    with Memory.open(path, TestEmbedder(64)) as memory:
        if forget_first:
            forget_video(memory, "vid0500")
        cpu = resource.getrusage(resource.RUSAGE_SELF)
        started = time.perf_counter()
        with timed_steps():
            receipt = forget_video(memory, "vid0500", purge=True).receipt
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_SELF)
    shutil.rmtree(path)
    return wall, (after.ru_utime - cpu.ru_utime) + (after.ru_stime - cpu.ru_stime), receipt or {}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--videos", type=int, default=1000)
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--engine", default="kuzu", choices=("kuzu", "ladybug"))
    args = p.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        base = work / "base"
        started = time.perf_counter()
        with Memory.create(base, TestEmbedder(64), graph_engine=args.engine) as memory:
            bulk_write(memory, graphs_from_files([captions(work / "a.json", args.videos, 0)]),
                       batch_size=args.batch, show_progress=False)
        made = time.perf_counter() - started
        size = sum(f.stat().st_size for f in base.rglob("*") if f.is_file()) / 2**20
        for label, forget_first in (("live video", False), ("forgotten video", True)):
            wall, cpu, receipt = purge(base, work, label.replace(" ", "-"), forget_first, args.engine)
            steps = ", ".join(f"{k} {v:.1f}" for k, v in sorted(STEPS.items()))
            rows.append([label, f"{wall:.1f}", f"{cpu:.1f}", steps, sum(receipt.get("rows", {}).values())])
    print(f"One purge in a memory of {args.videos} videos ({args.engine}, {size:.0f} MiB, made in {made:.0f} s); "
          f"CPU: {cpu_model()}; load {load_average()}\n")
    print(markdown_table(("purged", "wall s", "CPU s", "steps (s)", "rows removed"), rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
