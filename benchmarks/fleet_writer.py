"""The single writer's CPU time per video in a fleet build: the texts embedded by the writer
(as before) or by the workers (``FleetOptions(embed_in_workers=True)``, the default), each
video written on its own (``write_group_videos=1``, as before) or grouped with the others
finished at the same time (the default).

    python benchmarks/fleet_writer.py [--videos 20] [--repeat 1] [--ray]

``--videos`` generated 60 s videos (320x180, 5 fps, a new scene every 20 s), a scripted model
without latency (``ScriptedEndpoint``), the real default embedder (all-MiniLM-L6-v2), so the
texts' embedding is real work. Two tables:

1. **Writes replayed** (exact): the videos are perceived first (their texts embedded as a
   worker does), then written with nothing else running in the process, one write per video
   or in groups; the CPU is the whole process's (``time.process_time``: the writer's thread
   and every engine thread, kuzu's worker threads and the embedder's included).
2. **Fleet builds** (in process, and with ``--ray`` on a local 2-CPU Ray runtime): the real
   driver, with the writer beside running workers. ``writer thread``: thread CPU of the
   writer's calls (``fleet.build._write_step``) and of the ``building`` status writes;
   ``lance threads``: CPU of lance's own threads while a write ran (``/proc/self/task``,
   Linux; only the writer uses lance). kuzu's worker threads live only while a write has the
   graph open and cannot be told apart from the workers' threads in process, so they are in
   neither column: table 1 has them. ``driver process`` (Ray only): the driver's whole
   process CPU over the build per video, everything the writer's machine spends (loop, Ray
   client, bundles received, writes, every engine thread), the workers being other processes.

Target (issue 24): writer CPU per video at least 3x lower than with the writer embedding.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, markdown_table, offline  # noqa: E402
from build_throughput import make_video  # noqa: E402
from memtools.builder import BuildConfig  # noqa: E402
from memtools.builder.bundle import BuildFolder, VideoBundle  # noqa: E402
from memtools.builder.bundle_vectors import WorkerEmbedder  # noqa: E402
from memtools.embed import default_embedder  # noqa: E402
from memtools.fleet import FleetOptions, build_fleet  # noqa: E402
from memtools.fleet import build as fleet_build  # noqa: E402
from memtools.fleet.build import LocalExecutor  # noqa: E402
from memtools.fleet.testing import ScriptedEndpoint  # noqa: E402
from memtools.fleet.writer import GROUP_VIDEOS, write_group  # noqa: E402
from memtools.store import Memory  # noqa: E402

CONFIG = BuildConfig.short()


def thread_cpu_ns() -> dict[int, tuple[str, int]]:
    """Each live thread of this process: its name and nanoseconds on a CPU so far (Linux)."""
    threads = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            name = Path(f"/proc/self/task/{tid}/comm").read_text().strip()
            ns = int(Path(f"/proc/self/task/{tid}/schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        threads[int(tid)] = (name, ns)
    return threads


def lance_cpu(threads: dict[int, tuple[str, int]]) -> int:
    return sum(ns for name, ns in threads.values() if name.startswith("lance"))


class WriterClock:
    """Wraps the writer's step and the status writes while a build runs."""

    def __init__(self) -> None:
        self.thread = self.lance = 0.0
        self.groups: list[int] = []
        self.first_written: float | None = None
        self._lock = threading.Lock()
        self._original = fleet_build._write_step

    def __enter__(self) -> WriterClock:
        self.started = time.perf_counter()

        def step(memory, group):
            lance, start = lance_cpu(thread_cpu_ns()), time.thread_time()
            try:
                failed = self._original(memory, group)
            finally:
                with self._lock:
                    self.thread += time.thread_time() - start
                    self.lance += (lance_cpu(thread_cpu_ns()) - lance) / 1e9
                    self.groups.append(len(group))
                    if self.first_written is None:
                        self.first_written = time.perf_counter() - self.started
            return failed

        fleet_build._write_step = step
        return self

    def __exit__(self, *exc) -> None:
        fleet_build._write_step = self._original

    def status_writes(self, memory: Memory) -> None:
        original = memory.set_status

        def set_status(video_id, status):
            start = time.thread_time()
            try:
                original(video_id, status)
            finally:
                with self._lock:
                    self.thread += time.thread_time() - start

        memory.set_status = set_status  # type: ignore[method-assign]


def run_once(work: Path, name: str, videos: list[Path], ray: bool, **options) -> dict[str, float]:
    folder = Path(tempfile.mkdtemp(prefix="run-", dir=work))
    with WriterClock() as clock, Memory.create(folder / "memory", default_embedder()) as memory:
        clock.status_writes(memory)
        cpu, start = time.process_time(), time.perf_counter()
        summary = build_fleet(memory, ScriptedEndpoint(episode_sec=20.0), videos, config=CONFIG,
                              options=FleetOptions(endpoint_limit=8, videos_in_flight=4, ray=ray, **options))
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert not summary.failed, summary.failed
    n = len(summary.videos)
    return {"videos": n, "writes": len(clock.groups), "thread": clock.thread / n, "lance": clock.lance / n,
            "process": cpu / n if ray else float("nan"), "first": clock.first_written or float("nan"), "wall": wall}


def perceived(work: Path, videos: list[Path]) -> list[VideoBundle]:
    """Every video perceived and its texts embedded, as the in-process fleet's workers do."""
    embedder = default_embedder()
    executor = LocalExecutor(ScriptedEndpoint(episode_sec=20.0), BuildFolder(work / "replay-build"), CONFIG, 8,
                             WorkerEmbedder(embedder.name, lambda: embedder))

    async def all_videos() -> list[VideoBundle]:
        gate = asyncio.Semaphore(4)

        async def one(i: int, video: Path) -> VideoBundle:
            async with gate:
                return await executor.perceive(str(video), f"v{i:02d}")

        return list(await asyncio.gather(*(one(i, v) for i, v in enumerate(videos))))

    return asyncio.run(all_videos())


def replay(work: Path, bundles: list[VideoBundle], group: int, writer_embeds: bool) -> float:
    """Process CPU seconds per video to write ``bundles``, ``group`` per write."""
    if writer_embeds:
        bundles = [VideoBundle(b.report, b.state, b.graph, b.frames) for b in bundles]
    folder = Path(tempfile.mkdtemp(prefix="replay-", dir=work))
    with Memory.create(folder / "memory", default_embedder()) as memory:
        start = time.process_time()
        for i in range(0, len(bundles), group):
            assert not write_group(memory, bundles[i:i + group])
        return (time.process_time() - start) / len(bundles)


def replay_rows(work: Path, videos: list[Path], repeat: int) -> list[list[object]]:
    bundles = perceived(work, videos)
    replay(work, bundles[:2], 1, False)  # lance and kuzu imported, outside every row
    cases = [("the writer embeds, one write per video (before)", 1, True),
             ("workers embed, one write per video", 1, False),
             ("workers embed, 4 videos per write", 4, False),
             (f"workers embed, {GROUP_VIDEOS} videos per write", GROUP_VIDEOS, False)]
    rows, base = [], None
    for name, group, writer_embeds in cases:
        cpu = statistics.median(replay(work, bundles, group, writer_embeds) for _ in range(repeat))
        base = base or cpu
        rows.append([name, len(bundles), -(-len(bundles) // group), f"**{cpu * 1000:.0f}**", f"{base / cpu:.1f}x"])
    return rows


def run(work: Path, name: str, videos: list[Path], repeat: int, ray: bool = False, **options) -> list[object]:
    runs = [run_once(work, name, videos, ray, **options) for _ in range(repeat)]

    def med(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    writer = med("thread") + med("lance")
    process = med("process")
    return [name, int(med("videos")), int(med("writes")), f"{med('thread') * 1000:.0f}", f"{med('lance') * 1000:.0f}",
            f"**{writer * 1000:.0f}**", "" if process != process else f"{process * 1000:.0f}",
            f"{med('first'):.1f}", f"{med('wall'):.1f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--videos", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=1, help="runs per row; the table shows their medians")
    parser.add_argument("--ray", action="store_true", help="also run the Ray fleet on a local 2-CPU runtime")
    args = parser.parse_args()
    offline()
    work = Path(tempfile.mkdtemp(prefix="memtools-fleet-writer-"))
    videos = [make_video(work / f"v{i:02d}.mp4", 60, 320, 180, 5, scene_sec=20) for i in range(args.videos)]
    default_embedder().embed_documents(["warm the model up"])
    print("Writes replayed, nothing else running: process CPU per video\n")
    print(markdown_table(["written", "videos", "writes", "process CPU ms/video", "vs before"],
                         replay_rows(work, videos, args.repeat)))
    run_once(work, "warm-up", videos[:1], False)  # the fleet rows' warm-up
    cases: list[tuple[str, dict[str, Any]]] = [
        ("the writer embeds, one write per video (before)", {"embed_in_workers": False, "write_group_videos": 1}),
        ("workers embed, one write per video", {"embed_in_workers": True, "write_group_videos": 1}),
        ("workers embed, grouped writes (now)", {"embed_in_workers": True})]
    rows = [run(work, f"in process, {name}", videos, args.repeat, **options) for name, options in cases]
    if args.ray:
        import ray

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            run_once(work, "warm-up", videos[:2], True, task_cpus=0.5)  # Ray workers started and warm
            rows += [run(work, f"Ray, {name}", videos, args.repeat, True, task_cpus=0.5, **options)
                     for name, options in cases]
        finally:
            ray.shutdown()
    print("\nFleet builds\n")
    print(markdown_table(["fleet build", "videos", "writes", "writer thread ms/video", "lance threads ms/video",
                          "writer CPU ms/video", "driver process CPU ms/video", "first video written (s)",
                          "wall (s)"], rows))
    print(f"\nload average: {load_average()}")


if __name__ == "__main__":
    main()
