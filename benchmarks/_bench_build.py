"""Building and caching the synthetic benchmark memories of ``tool_latency.py``.

A memory is built once per (hours, seed) under ``--workdir`` and reused. A build that was
stopped (killed, out of time) resumes: every write batch is atomic, so the folder holds whole
videos, and the next run writes only the videos the memory does not list yet. Progress lines
(hours written, seconds, RSS) go to ``bench-progress.jsonl`` in the memory, across runs, so the
cost of the next 100 h is known at every size (``build_slope``). A resumed build's time is the
sum over its runs up to each run's last progress line (a stopped run's unfinished batch is not
counted; it is written again).

Document vectors come from ``ClauseEmbedder`` (``_common.py``): real all-MiniLM-L6-v2 vectors of
the distinct clauses, cached in ``--workdir``, summed per payload. Build time is therefore the
store's write cost (kuzu + lance + manifest) plus a small, shrinking share of model time (new
clauses), not the cost of embedding every payload with the model.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

from _common import ClauseEmbedder, peak_rss_mb, rss_mb

KEYFRAME_REL = "frames/_shared/keyframe.jpg"
DONE = "bench-build.json"
PROGRESS = "bench-progress.jsonl"


def memory_path(workdir: Path, hours: float, seed: int) -> Path:
    return workdir / f"memtools-bench-{hours:g}h-seed{seed}"


def _written(memory) -> set[str]:
    """Ids of the videos the memory already holds (a resumed build skips them)."""
    return {vid for vid, entry in memory.manifest.videos.items() if getattr(entry, "status", "ready") == "ready"}


def progress_lines(path: Path) -> list[dict]:
    file = path / PROGRESS
    if not file.is_file():
        return []
    return [json.loads(line) for line in file.read_text().splitlines() if line.strip()]


def build(hours: float, seed: int, workdir: Path, rebuild: bool, batch_hours: float) -> tuple[Path, dict]:
    """The memory for ``hours`` (reused when a finished build is there, resumed when a stopped
    one is) and its build stats."""
    import cv2
    import numpy as np

    import _synthetic
    from memtools.embed import default_embedder
    from memtools.store import Memory

    path = memory_path(workdir, hours, seed)
    if (path / DONE).is_file() and not rebuild:
        stats = json.loads((path / DONE).read_text())
        stats["reused"] = True
        return path, stats
    if rebuild:
        shutil.rmtree(path, ignore_errors=True)
    embedder = ClauseEmbedder(default_embedder(), workdir / f"memtools-bench-clauses-seed{seed}.npz")
    plan = _synthetic.plan_videos(hours, seed)
    duration = dict(plan)
    per_batch = max(1, round(batch_hours / max(1e-9, hours / len(plan))))
    earlier = progress_lines(path)
    spent_before = earlier[-1]["build_s"] if earlier else 0.0  # seconds of earlier, stopped runs
    run = earlier[-1]["run"] + 1 if earlier else 1
    start = time.perf_counter()
    # MEMTOOLS_BENCH_ENGINE: the graph engine (engine_policy.py builds one memory per engine)
    with Memory.create(path, embedder, graph_engine=os.environ.get("MEMTOOLS_BENCH_ENGINE", "kuzu")) as memory:
        done = _written(memory)
        todo = [vid for vid, _ in plan if vid not in done]
        print(f"building {hours:g} h: {len(plan)} videos ({len(done)} already written"
              f"{f', {spent_before:.0f} s spent' if done else ''}), {per_batch} per write batch -> {path}",
              file=sys.stderr)
        frame = memory.path / KEYFRAME_REL
        frame.parent.mkdir(parents=True, exist_ok=True)
        frame.write_bytes(cv2.imencode(".jpg", np.full((180, 320, 3), 128, np.uint8))[1].tobytes())
        written_h = sum(duration[vid] for vid in done) / 3600
        todo_set = set(todo)

        def graphs():
            nonlocal written_h
            for graph in _synthetic.library(hours, seed, keyframe_path=KEYFRAME_REL, only=todo_set):
                written_h += graph.video.duration / 3600  # counted as handed over: a batch ends after it
                yield graph

        def progress(count: int) -> None:
            elapsed = spent_before + time.perf_counter() - start
            line = {"run": run, "videos": len(done) + count, "hours": round(written_h, 1),
                    "build_s": round(elapsed, 1), "model_s": round(embedder.cache.model_seconds, 1),
                    "cpu_s": round(time.process_time(), 1), "rss_mb": round(rss_mb()),
                    "peak_rss_mb": round(peak_rss_mb())}
            with (path / PROGRESS).open("a") as out:
                out.write(json.dumps(line) + "\n")
            embedder.cache.save()  # a stopped build keeps the clauses it paid for
            print(f"  {line['videos']}/{len(plan)} videos, {written_h:.0f} h, {elapsed:.0f} s, "
                  f"RSS {line['rss_mb']} MiB (peak {line['peak_rss_mb']})", file=sys.stderr)

        if todo:
            memory.write_videos(graphs(), batch_size=per_batch, progress=progress)
        rows = memory.vectors.count()
        with memory.reading() as g:
            counts = g.counts()
    embedder.cache.save()
    lines = progress_lines(path)
    stats = {"hours": hours, "videos": len(plan), "build_s": spent_before + time.perf_counter() - start,
             "model_s": sum(line["model_s"] for line in _last_of_each_run(lines)),
             "clauses_embedded": embedder.cache.model_calls, "lance_rows": rows, "counts": counts,
             "peak_rss_mb": max([peak_rss_mb()] + [line["peak_rss_mb"] for line in lines]),
             "runs": run,
             "slope_s_per_100h": build_slope(lines), "reused": False}
    (path / DONE).write_text(json.dumps(stats, indent=2))
    return path, stats


def _last_of_each_run(lines: list[dict]) -> list[dict]:
    """The last progress line of every run (model seconds restart at 0 in each run)."""
    return list({line["run"]: line for line in lines}.values())


def build_slope(lines: list[dict]) -> dict[str, float]:
    """Seconds per 100 h written, over each fifth of the build (first fifth .. last fifth)."""
    if len(lines) < 2:
        return {}
    total = lines[-1]["hours"]
    out, previous = {}, {"hours": 0.0, "build_s": 0.0}
    for k in range(1, 6):
        upto = total * k / 5
        line = next(line for line in lines if line["hours"] >= upto - 1e-6)
        if line["hours"] > previous["hours"]:
            out[f"{previous['hours']:.0f}-{line['hours']:.0f} h"] = round(
                100 * (line["build_s"] - previous["build_s"]) / (line["hours"] - previous["hours"]), 1)
            previous = line
    return out


def lance_live_mb(path: Path) -> float | None:
    """MiB of the lance tables' current versions (rows only; old versions lance keeps on disk and
    the indexes are not counted). None when lancedb cannot say."""
    try:
        import warnings

        import lancedb

        db = lancedb.connect(str(Path(path) / "vectors"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # table_names is deprecated in newer lancedb, not gone
            names = db.table_names()
        return sum(db.open_table(name).stats()["total_bytes"] for name in names) / 2**20
    except Exception:  # an older lancedb without Table.stats, or tables elsewhere
        return None


def disk_parts_mb(path: Path) -> dict[str, float]:
    """MiB on disk by part: the graph, the lance tables, the frames, the manifest (the JSON
    file and any per-video table beside it), anything else."""
    parts = {"graph": 0.0, "lance": 0.0, "frames": 0.0, "manifest": 0.0, "other": 0.0}
    for entry in Path(path).iterdir():
        name = entry.name
        size = sum(p.stat().st_size for p in entry.rglob("*") if p.is_file()) if entry.is_dir() \
            else entry.stat().st_size
        if name.startswith("graph"):
            parts["graph"] += size
        elif name in ("vectors", "tables") or name.endswith(".lance"):
            parts["lance"] += size
        elif name == "frames":
            parts["frames"] += size
        elif name.startswith(("memtools.json", "manifest", "videos")) or name.endswith((".sqlite", ".db")):
            parts["manifest"] += size
        elif not name.startswith("bench-"):
            parts["other"] += size
    return {k: v / 2**20 for k, v in parts.items()}
