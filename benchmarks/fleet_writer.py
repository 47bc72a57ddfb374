"""The single writer's CPU time per video in a fleet build, with the texts embedded by the
writer (as before) or by the workers (``FleetOptions(embed_in_workers=True)``, the default).

    python benchmarks/fleet_writer.py [--videos 20] [--ray]

``--videos`` generated 60 s videos (320x180, 5 fps, a new scene every 20 s), a scripted model
without latency (``ScriptedEndpoint``), the real default embedder (all-MiniLM-L6-v2), so the
texts' embedding is real work. The writer's CPU time is the thread CPU time of each
``write_bundle`` call (graph, tables, manifest, and the embedding when the writer does it).
Target (issue 24): at least 3x lower per video with embedding in the workers.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import markdown_table, offline  # noqa: E402
from build_throughput import make_video  # noqa: E402
from memtools.build import BuildConfig  # noqa: E402
from memtools.embed import default_embedder  # noqa: E402
from memtools.fleet import FleetOptions, build_fleet  # noqa: E402
from memtools.fleet import build as fleet_build  # noqa: E402
from memtools.fleet.testing import ScriptedEndpoint  # noqa: E402
from memtools.store import Memory  # noqa: E402

CONFIG = BuildConfig.short()


def timed_writer(times: list[float]):
    original = fleet_build.write_bundle

    def write(memory, bundle):
        start = time.thread_time()
        original(memory, bundle)
        times.append(time.thread_time() - start)

    return original, write


def run(work: Path, name: str, videos: list[Path], **options) -> list[object]:
    times: list[float] = []
    original, write = timed_writer(times)
    fleet_build.write_bundle = write
    try:
        start = time.perf_counter()
        with Memory.create(work / name, default_embedder()) as memory:
            summary = build_fleet(memory, ScriptedEndpoint(episode_sec=20.0), videos, config=CONFIG,
                                  options=FleetOptions(endpoint_limit=8, videos_in_flight=4, **options))
        wall = time.perf_counter() - start
    finally:
        fleet_build.write_bundle = original
    assert not summary.failed, summary.failed
    per_video = sum(times) / max(1, len(times))
    return [name, len(times), f"{per_video * 1000:.0f}", f"{wall:.1f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--videos", type=int, default=20)
    parser.add_argument("--ray", action="store_true", help="also run the Ray fleet on a local 2-CPU runtime")
    args = parser.parse_args()
    offline()
    work = Path(tempfile.mkdtemp(prefix="memtools-fleet-writer-"))
    videos = [make_video(work / f"v{i:02d}.mp4", 60, 320, 180, 5, scene_sec=20) for i in range(args.videos)]
    default_embedder().embed_documents(["warm the model up"])
    rows = [run(work, "in process, the writer embeds", videos, embed_in_workers=False),
            run(work, "in process, workers embed", videos, embed_in_workers=True)]
    if args.ray:
        import ray

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            rows.append(run(work, "Ray, the writer embeds", videos, ray=True, task_cpus=0.5, embed_in_workers=False))
            rows.append(run(work, "Ray, workers embed", videos, ray=True, task_cpus=0.5, embed_in_workers=True))
        finally:
            ray.shutdown()
    print(markdown_table(["fleet build", "videos written", "writer CPU per video (ms)", "wall (s)"], rows))


if __name__ == "__main__":
    main()
