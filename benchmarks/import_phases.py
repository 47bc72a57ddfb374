"""Where a long caption import's batches spend their time, phase by phase, early and late
(issue 34, item 5: what still grows with the memory when the last tenth is slower than the first).

    python benchmarks/import_phases.py                 # the 50 MB file of import_bounded.py (~8 min on 2 cores)
    python benchmarks/import_phases.py --mb 5          # a quick run

``memtools import-captions`` runs in this process on a generated dense-caption file (the shape and seed
of ``import_bounded.py``; ``test:384`` embedder), with a clock around each step of a batch: the graph
opened read-write, recovery and the write's checks, the lance appends, kuzu's COPY and its COMMIT, the
commit mark, the navigation rows, the library layer, the catalog and manifest, the graph's close (its
checkpoint) and the folds (``finish_indexes``). The table gives each step's mean milliseconds a batch
over the first and the last tenth of the batches, and what it grew by. The clocks wrap functions of
memtools from outside (``unittest.mock.patch.object``); the import itself runs unchanged.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

from _common import cpu_model, load_average, markdown_table
from import_bounded import add_file_args, fresh_file

# (object, attribute, the phase it starts): a call of it counts to that phase until it returns
TIMED = (
    ("memtools.store.graph.cypher:KuzuGraph", "__init__", "graph opened read-write"),
    ("memtools.store.writes.recovery", "recover", "recovery (nothing to do) and checks"),
    ("memtools.store.writes.write_checks", "check_before_write", "recovery (nothing to do) and checks"),
    ("memtools.store.tables.vectors:LanceIndex", "replace_videos", "lance appends"),
    ("memtools.store.tables.entity_index:EntityIndex", "replace_videos", "lance appends"),
    ("memtools.store.graph.cypher:KuzuGraph", "insert", "kuzu COPY"),
    ("memtools.store.graph.cypher:KuzuGraph", "commit", "kuzu COMMIT"),
    ("memtools.store.writes.recovery", "commit_mark", "commit mark"),
    ("memtools.store.graph.cypher:KuzuGraph", "store_navigation", "navigation rows"),
    ("memtools.store.library.layer", "after_write", "library layer"),
    ("memtools.store.memory:Memory", "_commit_manifest", "catalog and manifest"),
    ("memtools.store.graph.cypher:KuzuGraph", "close", "graph closed (checkpoint)"),
    ("memtools.store.memory:Memory", "finish_indexes", "folds"),
)
REST = "the rest (rows, embedding, journal, ledger, progress)"


class Clock:
    """Seconds a batch spends in each phase (a timed call inside another counts to the outer one); the
    time outside every timed call counts to ``REST``."""

    def __init__(self) -> None:
        self.batches: list[dict[str, float]] = []
        self.current: dict[str, float] = {}
        self.stack: list[str] = []
        self.since = time.perf_counter()

    def _switch(self) -> None:
        now = time.perf_counter()
        phase = self.stack[-1] if self.stack else REST
        self.current[phase] = self.current.get(phase, 0.0) + now - self.since
        self.since = now

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        if self.stack:  # inside a timed call: counts to the outer phase (a fold's manifest, the mark's COMMIT)
            yield
            return
        self._switch()
        self.stack.append(name)
        try:
            yield
        finally:
            self._switch()
            self.stack.pop()

    def batch_done(self) -> None:
        self._switch()
        self.batches.append(self.current)
        self.current = {}

    def wrap(self, function: Callable[..., Any], name: str) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            with self.phase(name):
                return function(*args, **kwargs)
        return timed


def _target(spec: str) -> Any:
    import importlib

    module, _, attr = spec.partition(":")
    found = importlib.import_module(module)
    return getattr(found, attr) if attr else found


def run(source: Path, memory: Path, batch_size: int | None = None) -> list[dict[str, float]]:
    """One import of ``source`` into a new ``memory`` (``batch_size``: import-captions' ``--batch-size``,
    default its own): the phases' seconds of each batch, in order."""
    from memtools.cli import main
    from memtools.importers.bulk import ImportLedger

    clock = Clock()
    shutil.rmtree(memory, ignore_errors=True)
    with ExitStack() as patches:
        for spec, attr, name in TIMED:
            owner = _target(spec)
            patches.enter_context(mock.patch.object(owner, attr, clock.wrap(getattr(owner, attr), name)))
        landed = ImportLedger.add

        def add(ledger: ImportLedger, video_ids: Any) -> None:
            landed(ledger, video_ids)
            clock.batch_done()
        patches.enter_context(mock.patch.object(ImportLedger, "add", add))
        clock.since = time.perf_counter()
        code = main(["import-captions", str(source), "--memory", str(memory), "--embedder", "test:384",
                     "--no-progress", *(["--batch-size", str(batch_size)] if batch_size else [])])
    if code:
        sys.exit(f"the import failed ({code})")
    return clock.batches


def table(batches: list[dict[str, float]]) -> list[list[str]]:
    """Per phase: mean ms a batch over the first and the last tenth of the batches, and the growth."""
    tenth = max(1, len(batches) // 10)
    first, last = batches[:tenth], batches[-tenth:]
    names = list(dict.fromkeys([*(name for _, _, name in TIMED), REST]))

    def mean(part: list[dict[str, float]], name: str) -> float:
        return 1000 * sum(b.get(name, 0.0) for b in part) / len(part)

    rows = [[name, f"{mean(first, name):.1f}", f"{mean(last, name):.1f}",
             f"{mean(last, name) - mean(first, name):+.1f}"] for name in names]
    total_first, total_last = (sum(mean(part, n) for n in names) for part in (first, last))
    rows.append(["**a batch**", f"**{total_first:.1f}**", f"**{total_last:.1f}**",
                 f"**{total_last - total_first:+.1f}** (first / last {total_first / total_last:.2f})"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_file_args(parser)
    args = parser.parse_args()
    work, source, videos, captions = fresh_file(args.workdir, "memtools-import-phases", args.mb)
    started = time.perf_counter()
    batches = run(source, work / "memory", args.batch_size)
    seconds = time.perf_counter() - started
    print(f"\n## A caption import's batches, phase by phase ({load_average()}; CPU {cpu_model()})\n")
    size = f"{args.batch_size} videos" if args.batch_size else "the default size"
    print(f"{args.mb:g} MB, {videos:,} videos, {captions:,} captions, {len(batches)} batches of {size} in "
          f"{seconds:.0f} s; mean ms a batch over the first and the last {max(1, len(batches) // 10)} batches "
          "(the first batch also builds the indexes):\n")
    print(markdown_table(["phase", "first tenth", "last tenth", "grew by"], table(batches)))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
