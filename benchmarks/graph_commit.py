"""What one graph COMMIT of an import batch costs on a large memory, by what the batch writes
(issue 34, item 5: where a long caption import's late batches and its peak memory go).

    python benchmarks/graph_commit.py --memory /path/to/a/large/memory      # e.g. one import_bounded.py made
    python benchmarks/graph_commit.py --videos 20000                        # makes one first (a few minutes)

Each variant runs in its own process on a fresh copy of the memory's graph file: it opens the copy
read-write as a writer does, COPYs one batch of new videos (a generated caption file's, ids the
memory does not hold) in one transaction and commits. Variants: everything memtools writes
(``insert``), at two batch sizes; the same without the derived navigation rows (the node tables and
the typed edges); the derived rows alone, and each derived table alone (the per-video outline, the
per-macro detail, the per-node edge lists: JSON strings). Printed: the COMMIT's seconds, and the
process's resident set before the COPY and at its peak (``ru_maxrss``).
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


def _resident_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 2**20


def one(variant: str, graph_file: Path, captions: Path, videos: int) -> dict:
    """One variant, in this process: COPY ``videos`` new videos' rows into ``graph_file`` and commit."""
    import itertools

    import pyarrow as pa

    from memtools.importers.captions import graph_from_captions
    from memtools.importers.dense_captions import read_dense_captions
    from memtools.store.graph import rows as graph_rows
    from memtools.store.graph.engines import GRAPH_ENGINES

    graphs = [graph_from_captions(v) for v in itertools.islice(read_dense_captions(captions), videos)]
    engine = next(e for e in GRAPH_ENGINES.values() if Path(e.file_name).suffix == graph_file.suffix)
    graph = engine.open(graph_file, read_only=False, buffer_pool_mb=4096)
    try:
        before = _resident_mib()
        graph.begin()
        if variant in ("everything", "no derived rows"):
            if variant == "no derived rows":
                graph.insert_derived = lambda _graphs: None  # this handle only
            graph.insert(graphs)
        elif variant == "derived rows":
            graph.insert_derived(graphs)
        else:  # one derived table
            rows = graph_rows.rows_for(graphs)[variant]
            schema = pa.schema([(c, pa.string()) for c in graph_rows.columns(variant)])
            graph._run(f"COPY {variant} FROM $rows", {"rows": pa.Table.from_pylist(rows, schema=schema)})  # noqa: SLF001
        copied = _resident_mib()
        start = time.perf_counter()
        graph.commit()
        seconds = time.perf_counter() - start
    finally:
        graph.close()
    return {"seconds": seconds, "before": before, "copied": copied,
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
    variants = [("everything", args.batch), ("everything", 5 * args.batch), ("no derived rows", args.batch),
                ("derived rows", args.batch), ("VideoOutline", args.batch), ("MacroDetail", args.batch),
                ("NodeEdges", args.batch)]
    rows = []
    for variant, videos in variants:
        copy = work / original.name
        shutil.copyfile(original, copy)
        done = subprocess.run([sys.executable, __file__, "--one", variant, str(copy), str(batch), str(videos)],
                              capture_output=True, text=True, check=True)
        result = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append([variant, f"{videos:,}", f"{result['seconds']:.2f}", f"{result['before']:,.0f} MiB",
                     f"+{result['peak'] - result['before']:,.0f} MiB"])
        print(rows[-1], flush=True)
        copy.unlink()
    size = original.stat().st_size / 1e9
    print(f"\n## One COMMIT into a {size:.1f} GB graph ({memory}; {load_average()}; CPU {cpu_model()})\n")
    print(markdown_table(["what the batch writes", "videos", "COMMIT s", "resident before", "peak above it"], rows))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
