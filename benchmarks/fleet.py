"""Fleet builds and tables on object storage: the numbers behind docs/scaling.md.

    python benchmarks/fleet.py [--videos 20] [--latency 0.5] [--hours 10] [--skip-costs]

1. Fleet build: ``--videos`` generated 60 s videos (320x180, 5 fps, a new scene every 20 s:
   5 model calls each), a simulated model of fixed latency (``ScriptedEndpoint``), the
   default embedder stand-in ``TestEmbedder`` (so model latency and orchestration are what
   is measured). Serial (one video at a time, one call at a time) against: one video at a
   time with 8 calls in flight; the in-process fleet (8 videos in flight, endpoint limit 8);
   the Ray fleet on a local runtime with 2 CPUs (tasks of 0.25 CPU: 8 videos in flight,
   endpoint limit 8), cold (workers start) and warm. Target: Ray >= 0.8 of the in-process
   fleet's speed-up.
2. Search over lance tables on a local S3 server (moto, 127.0.0.1) against local disk:
   ``search_nodes`` p50 / p99 over a synthetic library of ``--hours`` hours, real default
   embedder for queries. moto is a Python server: real S3 adds network latency, moto adds
   CPU; read it as "how many round trips a search costs", not as S3's speed.
3. Per-video costs (``--skip-costs`` leaves it out): embedding and writing one hour of video
   (synthetic graph, real default embedder), and model calls / frames / tokens per hour of
   video with the default build settings (token counts as ``FunctionVLM`` estimates them:
   words, plus 85 per image).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ClauseEmbedder, markdown_table, offline, p50_p99  # noqa: E402
from _synthetic import library, queries  # noqa: E402
from build_throughput import make_video  # noqa: E402
from memtools.builder import BuildConfig, build_videos  # noqa: E402
from memtools.embed import TestEmbedder  # noqa: E402
from memtools.fleet import FleetOptions, build_fleet  # noqa: E402
from memtools.fleet.testing import ScriptedEndpoint  # noqa: E402
from memtools.store import Memory, SearchQuery  # noqa: E402
from memtools.tools import MemoryTools  # noqa: E402

CONFIG = BuildConfig.short()
EPISODE = 20.0


def _timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def fleet_rows(work: Path, n: int, latency: float) -> list[list[object]]:
    work.mkdir(parents=True, exist_ok=True)
    videos = [make_video(work / f"v{i:02d}.mp4", 60, 320, 180, 5, scene_sec=20) for i in range(n)]
    endpoint = ScriptedEndpoint(latency=latency, episode_sec=EPISODE)
    runs: list[tuple[str, float, int]] = []

    def in_process(name: str, concurrency: int) -> None:
        with Memory.create(work / name, TestEmbedder(64)) as memory:
            seconds, summary = _timed(lambda: build_videos(
                memory, endpoint(), videos, config=CONFIG.model_copy(update={"concurrency": concurrency})))
        runs.append((name, seconds, summary.usage.calls))

    def fleet(name: str, **options) -> None:
        with Memory.create(work / name, TestEmbedder(64)) as memory:
            seconds, summary = _timed(lambda: build_fleet(memory, endpoint, videos, config=CONFIG,
                                                          options=FleetOptions(endpoint_limit=8, **options)))
        assert not summary.failed, summary.failed
        runs.append((name, seconds, summary.usage.calls))

    in_process("serial: one video, one call at a time", 1)
    in_process("one video at a time, 8 calls in flight", 8)
    fleet("in-process fleet: 8 videos in flight", videos_in_flight=8)
    import ray

    init, _ = _timed(lambda: ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False))
    try:
        fleet("Ray fleet, cold (workers start)", ray=True, task_cpus=0.25)
        fleet("Ray fleet, warm", ray=True, task_cpus=0.25)
    finally:
        ray.shutdown()
    serial = runs[0][1]
    local_fleet = serial / runs[2][1]
    rows = []
    for name, seconds, calls in runs:
        speedup = serial / seconds
        rows.append([name, calls, f"{seconds:.1f}", f"{speedup:.1f}x",
                     f"{speedup / local_fleet:.2f}" if name.startswith("Ray") else ""])
    rows.append([f"(ray.init with 2 CPUs: {init:.1f} s, not counted)", "", "", "", ""])
    return rows


def search_rows(work: Path, hours: float, n_queries: int) -> list[list[object]]:
    import logging

    import boto3
    from moto.server import ThreadedMotoServer

    from memtools.embed import default_embedder
    from memtools.store.tables.payload import index_rows

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_REGION="us-east-1",
                      AWS_ENDPOINT_URL=endpoint)
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket="bench")
    model = default_embedder()
    embedder = ClauseEmbedder(model, work / "clauses.npz")
    graphs = list(library(hours, seed=7))
    embedder.embed_documents([row["text"] for row in index_rows(graphs)])  # real model calls, before the clock
    asks = queries(n_queries, seed=7)
    rows = []
    try:
        for name, tables in (("local disk", None), ("local S3 server (moto)", "s3://bench/library")):
            folder = work / ("search-s3" if tables else "search-disk")
            with Memory.create(folder, embedder, tables=tables) as memory:
                write, _ = _timed(lambda: memory.write_videos(graphs))
            with Memory.open(folder, model) as memory:
                tools = MemoryTools(memory)
                tools.search_nodes(asks[0])  # open the tables and the graph once
                vectors = {q: model.embed_query(q) for q in asks}
                index = memory.vectors
                calls = [("search_nodes (default preset)", lambda q, t=tools: t.search_nodes(q, top_k=10))]
                calls += [(f"lance {mode}",
                           lambda q, m=mode, ix=index, vs=vectors: ix.search(SearchQuery(m, 10, vs[q], q)))
                          for mode in ("vector", "fulltext", "hybrid")]
                for what, call in calls:
                    times = []
                    for q in asks:
                        start = time.perf_counter()
                        call(q)
                        times.append(time.perf_counter() - start)
                    p50, p99 = p50_p99(times)
                    rows.append([name, what, index.count(), f"{p50:.1f}", f"{p99:.1f}", f"{write:.1f}"])
    finally:
        server.stop()
    return rows


def cost_rows(work: Path) -> list[list[object]]:
    from memtools.builder.testing import ScriptedPerception
    from memtools.embed import default_embedder
    from memtools.perception import FunctionVLM
    from memtools.store.tables.payload import index_rows

    rows = []
    graph = next(g for g in library(4.0, seed=3) if g.video.duration >= 1800)
    hours = graph.video.duration / 3600
    payloads = [r["text"] for r in index_rows([graph])]
    model = default_embedder()
    model.embed_documents(payloads[:8])
    seconds, _ = _timed(lambda: model.embed_documents(payloads))
    rows.append(["embed (all-MiniLM-L6-v2, CPU)", f"{len(payloads) / hours:.0f} rows", f"{seconds / hours:.1f} s",
                 "per hour of video"])
    with Memory.create(work / "write", TestEmbedder(384)) as memory:
        seconds, _ = _timed(lambda: memory.write_video(graph))
    rows.append(["write (kuzu + lance, local disk)", f"{len(payloads) / hours:.0f} rows", f"{seconds / hours:.1f} s",
                 "per hour of video"])
    video = make_video(work / "tokens.mp4", 1800, 160, 90, 2, scene_sec=20)
    vlm = FunctionVLM(ScriptedPerception(episode_sec=300, per_super=4))
    with Memory.create(work / "tokens", TestEmbedder(64)) as memory:
        summary = build_videos(memory, vlm, [video], config=BuildConfig.default())
    frames = sum(len(r.frames) for r in vlm.requests)
    usage = summary.usage
    rows.append(["model calls (default settings, 5-min episodes)", f"{usage.calls * 2}", "", "per hour of video"])
    rows.append(["frames sent", f"{frames * 2}", "", "per hour of video"])
    rows.append(["tokens (85 per image + words)", f"{usage.input_tokens * 2:,} in + {usage.output_tokens * 2:,} out",
                 "", "per hour of video"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--videos", type=int, default=20)
    parser.add_argument("--latency", type=float, default=0.5, help="simulated model latency per call (s)")
    parser.add_argument("--hours", type=float, default=10.0, help="library size for the search comparison")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--skip-fleet", action="store_true")
    parser.add_argument("--skip-search", action="store_true")
    parser.add_argument("--skip-costs", action="store_true")
    args = parser.parse_args()
    offline()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        print(f"cores: {os.cpu_count()}\n")
        if not args.skip_fleet:
            print(f"## Fleet build: {args.videos} videos of 60 s, model latency {args.latency:.2f} s per call\n")
            print(markdown_table(["run", "model calls", "seconds", "speed-up vs serial", "Ray / in-process fleet"],
                                 fleet_rows(work / "fleet", args.videos, args.latency)))
            shutil.rmtree(work / "fleet", ignore_errors=True)
        if not args.skip_search:
            print(f"\n## search_nodes over a {args.hours:g} h library: local disk vs a local S3 server\n")
            print(markdown_table(["tables", "search", "rows", "p50 ms", "p99 ms", "write s"],
                                 search_rows(work, args.hours, args.queries)))
        if not args.skip_costs:
            print("\n## Per-video costs\n")
            print(markdown_table(["step", "volume", "time", "unit"], cost_rows(work)))


if __name__ == "__main__":
    main()
