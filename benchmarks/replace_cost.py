"""What keeping the old versions aside costs a re-import (issue 51: ``memtools.store.writes.kept``).

    python benchmarks/replace_cost.py --videos 300 --batch 50 --rounds 2

A memory of ``--videos`` caption-imported videos (the test embedder: the write path, not the model)
is re-imported whole with a second version of every video, ``--rounds`` times each way, alternating
in one run: as memtools writes now (each batch reads its replaced videos back from the graph and
keeps them in ``.write-kept`` before its journal) and with that read and file switched off (as
before this round). Prints wall and CPU seconds per re-import and the share the kept copies add.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from _common import load_average, markdown_table
from memtools.embed.testing import TestEmbedder
from memtools.importers.bulk import bulk_write
from memtools.importers.captions import graphs_from_files
from memtools.store import Memory
from memtools.store.base import GraphReads
from memtools.store.writes import kept

WORDS = ("whisk the eggs", "slice the onion", "fry the garlic", "boil the pasta", "season with salt",
         "stir the sauce", "grate the cheese", "chop the parsley", "pour the oil", "bake the bread")


def captions(path: Path, videos: int, version: int) -> Path:
    data = {}
    for v in range(videos):
        n = 6 + (v + version) % 4
        data[f"vid{v:04d}"] = {"duration": 10.0 * n, "timestamps": [[10.0 * i, 10.0 * i + 8.0] for i in range(n)],
                               "sentences": [f"{WORDS[(v + i + version) % len(WORDS)]} for dish {v} v{version}, "
                                             f"step {i}" for i in range(n)]}
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@contextmanager
def keeping(on: bool):
    """The kept copies as memtools writes them (``on``), or skipped (the write path of before)."""
    if on:
        yield
        return
    saved, read = kept.keep, GraphReads.video_graphs
    kept.keep = lambda path, old: kept.drop(path)
    GraphReads.video_graphs = lambda self, video_ids: {}  # type: ignore[method-assign]
    try:
        yield
    finally:
        kept.keep, GraphReads.video_graphs = saved, read  # type: ignore[method-assign]


def reimport(base: Path, work: Path, source: Path, batch: int, on: bool) -> tuple[float, float]:
    memory_path = work / f"m-{'on' if on else 'off'}"
    shutil.rmtree(memory_path, ignore_errors=True)
    shutil.copytree(base, memory_path)
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    with keeping(on), Memory.open(memory_path, TestEmbedder(64)) as memory:
        bulk_write(memory, graphs_from_files([source]), batch_size=batch, show_progress=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    return wall, (after.ru_utime - cpu.ru_utime) + (after.ru_stime - cpu.ru_stime)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--videos", type=int, default=300)
    p.add_argument("--batch", type=int, default=50)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        first, second = captions(work / "a.json", args.videos, 0), captions(work / "b.json", args.videos, 1)
        base = work / "base"
        with Memory.create(base, TestEmbedder(64)) as memory:
            bulk_write(memory, graphs_from_files([first]), batch_size=args.batch, show_progress=False)
        times: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        for _ in range(args.rounds):
            for on in (False, True):
                times[on].append(reimport(base, work, second, args.batch, on))
    rows = []
    for on in (False, True):
        wall = sorted(w for w, _ in times[on])[len(times[on]) // 2]
        cpu = sorted(c for _, c in times[on])[len(times[on]) // 2]
        rows.append(["old versions kept (now)" if on else "not kept (before)", f"{wall:.2f}", f"{cpu:.2f}"])
    share = (sorted(w for w, _ in times[True])[args.rounds // 2] / sorted(w for w, _ in times[False])[args.rounds // 2]
             - 1) * 100
    print(f"Re-import of {args.videos} videos, {args.batch} per batch (median of {args.rounds}):\n")
    print(markdown_table(("write path", "wall s", "CPU s"), rows))
    print(f"\nkept copies add {share:+.1f}% wall; load {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
