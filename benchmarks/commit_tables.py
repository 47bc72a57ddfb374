"""What the graph COMMIT of one import batch costs, table by table, on a smaller and a larger memory
(issue 34, item 5: which of the graph's tables make a long caption import's late COMMITs slower).

    python benchmarks/commit_tables.py --memory SMALL --memory LARGE    # e.g. two import_bounded.py made
    python benchmarks/commit_tables.py --videos 2000,20000              # makes them first (~2 min on 2 cores)

For every memory and every part of a batch, a process copies the memory's graph file and writes
``--batches`` batches of ``--batch`` new videos (a generated caption file's; ids the memories do
not hold), each as an import writes one: opened read-write with a writer's buffer pool, COPY, COMMIT
(timed), closed. A part is the batch as an import writes it, its node tables, its typed edges
or one node table or one pair of edge tables alone (edges after the batch's nodes were committed,
untimed). The first COMMIT into a copied file is left out (kuzu's first checkpoint of a copy costs about
a second whatever it holds). Parts and memories alternate over ``--rounds``, so the load of the
moment falls on each alike. Printed: the mean COMMIT of each part on each memory, and the last
memory's against the first's.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _common import cpu_model, load_average, markdown_table
from import_bounded import write_file

EVERYTHING, NODES, EDGES = "everything (as an import writes it)", "the node tables", "the typed edges"
EDGE_COPY = "COPY Rel "


class _Recorder:
    """Stands in for a graph: records the statements ``insert`` would run, and their rows."""

    def __init__(self) -> None:
        self.statements: list[tuple[str, int]] = []

    def _run(self, query: str, params: dict[str, Any] | None = None) -> list:
        self.statements.append((query, len(params["rows"]) if params else 0))
        return []


def _recorded(graphs: Sequence[Any]) -> list[tuple[str, int]]:
    from memtools.store.graph.cypher import KuzuGraph

    recorder = _Recorder()
    KuzuGraph.insert(recorder, graphs)  # type: ignore[arg-type]
    return recorder.statements


def _part_name(statement: str) -> str:
    """``COPY Video FROM $rows`` -> "Video"; ``COPY Rel FROM $rows (from='A', to='B')`` -> "A > B"."""
    if statement.startswith(EDGE_COPY):
        ends = statement.split("(", 1)[1].rstrip(")").replace("'", "")
        source, target = (side.split("=", 1)[1].strip() for side in ends.split(","))
        return f"{source} > {target}"
    return statement.split()[1]


def keeps(part: str) -> Callable[[str], bool]:
    """Which COPY statements of a batch the part writes."""
    if part == EVERYTHING:
        return lambda statement: True
    if part == NODES:
        return lambda statement: not statement.startswith(EDGE_COPY)
    if part == EDGES:
        return lambda statement: statement.startswith(EDGE_COPY)
    return lambda statement: _part_name(statement) == part


def parts_of(graphs: Sequence[Any]) -> list[tuple[str, int]]:
    """Every part of a batch of these videos and the rows (nodes or edges) it writes."""
    statements = _recorded(graphs)
    names = [EVERYTHING, NODES, EDGES, *dict.fromkeys(_part_name(s) for s, _ in statements)]
    return [(name, sum(rows for s, rows in statements if keeps(name)(s))) for name in names]


def _insert(graph: Any, graphs: Sequence[Any], keep: Callable[[str], bool]) -> None:
    """``graph.insert(graphs)`` with only the COPY statements ``keep`` accepts."""
    run = graph._run  # noqa: SLF001

    def filtered(query: str, params: dict[str, Any] | None = None) -> list:
        return [] if query.startswith("COPY ") and not keep(query) else run(query, params)

    graph._run = filtered  # noqa: SLF001
    try:
        graph.insert(graphs)
    finally:
        del graph._run  # noqa: SLF001


def one(part: str, graph_file: Path, captions: Path, batch: int, batches: int) -> list[float]:
    """In this process: ``batches`` + 1 batches of ``part`` into ``graph_file``; each COMMIT's seconds but the first."""
    from memtools.importers.captions import graph_from_captions
    from memtools.importers.dense_captions import read_dense_captions
    from memtools.store.graph.cypher import writer_pool_mb
    from memtools.store.graph.engines import GRAPH_ENGINES
    from memtools.store.writes.lock import WRITE_BUFFER_MB

    graphs = [graph_from_captions(v) for v in itertools.islice(read_dense_captions(captions), batch * (batches + 1))]
    engine = next(e for e in GRAPH_ENGINES.values() if Path(e.file_name).suffix == graph_file.suffix)
    seconds = []
    for first in range(0, len(graphs), batch):
        chunk = graphs[first:first + batch]
        graph = engine.open(graph_file, read_only=False, buffer_pool_mb=writer_pool_mb(graph_file, WRITE_BUFFER_MB))
        try:
            if part == EDGES or " > " in part:  # edges need their nodes: committed first, not timed
                graph.begin()
                _insert(graph, chunk, keeps(NODES))
                graph.commit()
            graph.begin()
            _insert(graph, chunk, keeps(part))
            start = time.perf_counter()
            graph.commit()
            seconds.append(time.perf_counter() - start)
        finally:
            graph.close()
    return seconds[1:]


def _make_memory(work: Path, videos: int) -> Path:
    memory, source = work / f"memory-{videos}", work / f"memory-{videos}.json"
    write_file(source, videos / 2000)  # ~2,000 videos a MB
    subprocess.run([str(Path(sys.executable).with_name("memtools")), "import-captions", str(source), "--memory",
                    str(memory), "--embedder", "test:384", "--no-progress"], check=True, stdout=subprocess.DEVNULL)
    source.unlink()
    return memory


def measure(memories: Sequence[Path], work: Path, batch: int, batches: int, rounds: int) -> list[list[str]]:
    """The table's rows: each part, its rows a batch, its mean COMMIT ms on each memory and last / first."""
    from memtools.importers.captions import graph_from_captions
    from memtools.importers.dense_captions import read_dense_captions
    from memtools.store.graph.engines import GRAPH_ENGINES

    captions = work / "batches.json"
    write_file(captions, batch * (batches + 1) / 1500, seed=1, prefix="new_")
    parts = parts_of([graph_from_captions(v) for v in itertools.islice(read_dense_captions(captions), batch)])
    files = [next(m / e.file_name for e in GRAPH_ENGINES.values() if (m / e.file_name).exists()) for m in memories]
    commits: dict[tuple[str, int], list[float]] = {}
    for _ in range(rounds):
        for part, _rows in parts:
            for index, original in enumerate(files):
                copy = work / original.name
                shutil.copyfile(original, copy)
                done = subprocess.run([sys.executable, __file__, "--one", part, str(copy), str(captions), str(batch),
                                       str(batches)], capture_output=True, text=True, check=True)
                commits.setdefault((part, index), []).extend(json.loads(done.stdout.strip().splitlines()[-1]))
                copy.unlink()
        print(f"round done ({load_average()})", file=sys.stderr, flush=True)
    rows = []
    for part, count in parts:
        means = [1000 * statistics.mean(commits[part, index]) for index in range(len(files))]
        rows.append([part, f"{count:,}", *(f"{ms:.0f}" for ms in means), f"{means[-1] / means[0]:.2f}"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memory", type=Path, action="append", default=[],
                        help="a memory to measure on (give two or more, smallest first)")
    parser.add_argument("--videos", default="2000,20000",
                        help="without --memory: the videos of the memories to make first (default 2000,20000)")
    parser.add_argument("--batch", type=int, default=200, help="videos a batch (default 200, as imports)")
    parser.add_argument("--batches", type=int, default=8, help="timed batches a part and memory, each round")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--one", nargs=5, metavar=("PART", "GRAPH", "CAPTIONS", "BATCH", "BATCHES"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        part, graph_file, captions, batch, batches = args.one
        print(json.dumps(one(part, Path(graph_file), Path(captions), int(batch), int(batches))))
        return
    work = args.workdir / "memtools-commit-tables"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    memories = args.memory or [_make_memory(work, int(n)) for n in args.videos.split(",")]
    if len(memories) < 2:
        parser.error("give two memories (or --videos A,B): the table compares the COMMITs on them")
    from memtools.store import Memory

    sizes = []
    for memory in memories:
        with Memory.open(memory) as opened:
            sizes.append(len(opened.manifest.videos))
    rows = measure(memories, work, args.batch, args.batches, args.rounds)
    print(f"\n## One batch's graph COMMIT, part by part ({args.batch} videos a batch, {args.batches} batches x "
          f"{args.rounds} round(s) a cell; {load_average()}; CPU {cpu_model()})\n")
    print(markdown_table(["part of the batch", "rows a batch", *(f"COMMIT ms, {n:,} videos" for n in sizes),
                          "last / first"], rows))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
