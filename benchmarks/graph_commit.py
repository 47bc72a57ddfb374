"""What one import batch's graph COMMIT costs on a large memory, with the navigation rows where
they are now (``navigation.sqlite``) and where they were before (kuzu node tables in the same
transaction) (issue 34, item 5: where a long caption import's late batches and its peak memory go).

    python benchmarks/graph_commit.py --memory /path/to/a/large/memory      # e.g. one import_bounded.py made
    python benchmarks/graph_commit.py --videos 20000                        # makes one first (a few minutes)

Each variant runs in its own process on a fresh copy of the memory's graph file (and of its
``navigation.sqlite``): it opens the copy read-write as a writer does, COPYs one batch of new videos
(a generated caption file's, ids the memory does not hold) in one transaction and commits, at two
batch sizes. ``this layout`` then writes the batch's navigation rows into ``navigation.sqlite``;
``rows in the graph`` COPYs them into kuzu tables inside the transaction, as memtools did before.
Printed: the COMMIT's seconds, the navigation write's, and the process's resident set before the
COPY and at its peak (``ru_maxrss``).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import cpu_model, load_average, markdown_table
from import_bounded import write_file
from memtools.store.graph.navigation import NAVIGATION


def _resident_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 2**20


def one(variant: str, graph_file: Path, captions: Path, videos: int) -> dict:
    """One variant, in this process: write ``videos`` new videos into ``graph_file`` as a write batch does.
    ``this layout``: the graph's transaction (nodes and typed edges), then the navigation rows in
    ``navigation.sqlite`` beside the file; ``rows in the graph``: the layout before it, the navigation rows
    COPYed into kuzu node tables inside the graph's transaction (the tables made first if the memory has none)."""
    import itertools

    import pyarrow as pa

    from memtools.importers.captions import graph_from_captions
    from memtools.importers.dense_captions import read_dense_captions
    from memtools.store.graph import rows as graph_rows
    from memtools.store.graph.engines import GRAPH_ENGINES

    graphs = [graph_from_captions(v) for v in itertools.islice(read_dense_captions(captions), videos)]
    engine = next(e for e in GRAPH_ENGINES.values() if Path(e.file_name).suffix == graph_file.suffix)
    graph = engine.open(graph_file, read_only=False, buffer_pool_mb=4096)
    navigation = 0.0
    try:
        if variant == "rows in the graph":
            for name in graph_rows.DERIVED:
                graph._run(f"CREATE NODE TABLE IF NOT EXISTS {name}("  # noqa: SLF001
                           + ", ".join(f"{c} STRING" for c in graph_rows.columns(name)) + ", PRIMARY KEY(id))")
        before = _resident_mib()
        graph.begin()
        graph.insert(graphs)
        if variant == "rows in the graph":
            for name, rows in graph_rows.rows_for(graphs).items():
                schema = pa.schema([(c, pa.string()) for c in graph_rows.columns(name)])
                graph._run(f"COPY {name} FROM $rows", {"rows": pa.Table.from_pylist(rows, schema=schema)})  # noqa: SLF001
        copied = _resident_mib()
        start = time.perf_counter()
        graph.commit()
        seconds = time.perf_counter() - start
        if variant == "this layout":
            start = time.perf_counter()
            graph.store_navigation([], graphs)
            navigation = time.perf_counter() - start
    finally:
        graph.close()
    return {"seconds": seconds, "navigation": navigation, "before": before, "copied": copied,
            "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memory", type=Path, help="a memory folder to measure on (default: make one)")
    parser.add_argument("--videos", type=int, default=20_000,
                        help="videos of the memory made when --memory is not given")
    parser.add_argument("--batch", type=int, default=200, help="videos in the measured batch (default 200, as imports)")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--one", nargs=4, metavar=("VARIANT", "GRAPH", "CAPTIONS", "VIDEOS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        variant, graph_file, captions, videos = args.one
        print(json.dumps(one(variant, Path(graph_file), Path(captions), int(videos))))
        return

    from memtools.store.graph.engines import GRAPH_ENGINES

    work = args.workdir / "memtools-graph-commit"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    memory = args.memory
    if memory is None:
        memory = work / "memory"
        source = work / "memory.json"
        write_file(source, args.videos / 2000)  # ~2,000 videos a MB
        subprocess.run([str(Path(sys.executable).with_name("memtools")), "import-captions", str(source), "--memory",
                        str(memory), "--embedder", "test:384", "--no-progress"], check=True, stdout=subprocess.DEVNULL)
    original = next(memory / e.file_name for e in GRAPH_ENGINES.values() if (memory / e.file_name).exists())
    batch = work / "batch.json"
    write_file(batch, max(args.batch, 1000) / 1500, seed=1, prefix="new_")
    variants = [("this layout", args.batch), ("this layout", 5 * args.batch),
                ("rows in the graph", args.batch), ("rows in the graph", 5 * args.batch)]
    navigation = memory / NAVIGATION
    rows = []
    for variant, videos in variants:
        copy = work / original.name
        shutil.copyfile(original, copy)
        if navigation.exists():  # the rows' own file, as large as the memory's
            shutil.copyfile(navigation, work / NAVIGATION)
        done = subprocess.run([sys.executable, __file__, "--one", variant, str(copy), str(batch), str(videos)],
                              capture_output=True, text=True, check=True)
        result = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append([variant, f"{videos:,}", f"{result['seconds']:.2f}",
                     f"{result['navigation']:.2f}" if variant == "this layout" else "(in the COMMIT)",
                     f"{result['before']:,.0f} MiB", f"+{result['peak'] - result['before']:,.0f} MiB"])
        print(rows[-1], flush=True)
        copy.unlink()
        (work / NAVIGATION).unlink(missing_ok=True)
    size = original.stat().st_size / 1e9
    print(f"\n## One COMMIT into a {size:.1f} GB graph ({memory}; {load_average()}; CPU {cpu_model()})\n")
    print(markdown_table(["where the navigation rows go", "videos", "graph COMMIT s", "navigation.sqlite s",
                          "resident before", "peak above it"], rows))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
