"""The ActivityNet protocol (``../shared/data/README.md``) and its YouCook2 variant, scored
through ``MemoryTools.search_nodes`` with every ``SearchConfig`` preset.

* **activitynet**: the memory is ``activitynet-dev/val_1.json`` imported as ``memtools
  import-captions`` does (captions -> micro-events -> macro/super events -> root); queries are
  every sentence of ``val_2.json``, an independent annotation of the same videos.
* **youcook2**: the memory is ``youcook2/val.json``; queries are its own step sentences
  (there is one annotation only), so within a video the step is found by its own words and
  the test is the library: 436 videos, many of the same recipe.

A hit is correct when it is in the query's video and its window (a node's, or a merged
span's) has temporal IoU >= 0.5 with the query's. Per preset and scope: Recall@1, Recall@5,
"right video in the top 5 hits" (library-wide), and search_nodes latency p50/p99 with the
query vector already computed (the real MiniLM query embedding adds 10-15 ms on 2 cores;
``tool_latency.py`` measures it end to end).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from _common import CachedEmbedder, markdown_table, p50_p99

DONE = "bench-build.txt"


@dataclass(frozen=True)
class Query:
    video_id: str
    start: float
    end: float
    text: str


def iou(a0: float, a1: float, b0: float, b1: float) -> float:
    inter = max(0.0, min(a1, b1) - max(a0, b0))
    union = max(a1, b1) - min(a0, b0)
    return inter / union if union > 0 else float(a0 == b0 and a1 == b1)


def files(data: Path, dataset: str) -> tuple[Path, Path]:
    if dataset == "activitynet":
        return data / "activitynet-dev" / "val_1.json", data / "activitynet-dev" / "val_2.json"
    return data / "youcook2" / "val.json", data / "youcook2" / "val.json"


def read_queries(path: Path) -> list[Query]:
    from memtools.schema import slugify_video_id

    queries = []
    for key, entry in json.loads(path.read_text(encoding="utf-8")).items():
        duration = float(entry.get("duration") or 0.0)
        for (s, e), sentence in zip(entry["timestamps"], entry["sentences"], strict=False):  # outside data: as it comes
            s, e = float(s), float(e)
            if duration:
                s, e = min(s, duration), min(e, duration)
            if sentence.strip() and e > s:
                queries.append(Query(slugify_video_id(key), s, e, sentence.strip()))
    return queries


def build(path: Path, source: Path, embedder: CachedEmbedder) -> tuple[float, int]:
    """The memory, imported once and cached under ``path`` (seconds, videos)."""
    from memtools.importers.captions import graphs_from_files
    from memtools.store import Memory

    if (path / DONE).is_file():
        seconds, videos = (path / DONE).read_text().split()
        return float(seconds), int(videos)
    shutil.rmtree(path, ignore_errors=True)
    start = time.perf_counter()
    with Memory.create(path, embedder) as memory:
        n = memory.write_videos(graphs_from_files([source]), batch_size=500)
    seconds = time.perf_counter() - start
    embedder.cache.save()
    (path / DONE).write_text(f"{seconds:.1f} {n}")
    return seconds, n


def evaluate(memory, presets: dict, queries: list[Query], embedder: CachedEmbedder) -> dict:
    """counts[(preset, scope)] = [r1, r5, right video in top 5]; seconds[(preset, scope)] = [...]."""
    from memtools.tools import MemoryTools

    counts: dict = defaultdict(lambda: [0, 0, 0])
    seconds: dict = defaultdict(list)
    for name, config in presets.items():
        tools = MemoryTools(memory, search=config)
        for n, q in enumerate(queries, 1):
            for scope in ("within video", "library-wide"):
                started = time.perf_counter()
                within = q.video_id if scope == "within video" else None
                hits = tools.search_nodes(q.text, top_k=5, video_id=within).hits
                seconds[(name, scope)].append(time.perf_counter() - started)
                good = [h.video_id == q.video_id and iou(h.t_start, h.t_end, q.start, q.end) >= 0.5 for h in hits]
                cell = counts[(name, scope)]
                cell[0] += bool(good[:1] and good[0])
                cell[1] += any(good[:5])
                cell[2] += any(h.video_id == q.video_id for h in hits[:5])
            if n % 500 == 0:
                print(f"  {name}: {n}/{len(queries)} queries", file=sys.stderr)
    return {"counts": counts, "seconds": seconds}


def ceiling(memory_source: Path, queries: list[Query]) -> float:
    """Share of queries with any single memory caption at IoU >= 0.5 (node-level ceiling)."""
    from memtools.schema import slugify_video_id

    spans: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for key, entry in json.loads(memory_source.read_text(encoding="utf-8")).items():
        spans[slugify_video_id(key)] += [(float(s), float(e)) for s, e in entry["timestamps"]]
    hit = sum(any(iou(s, e, q.start, q.end) >= 0.5 for s, e in spans[q.video_id]) for q in queries)
    return hit / len(queries)


@dataclass
class Prepared:
    """A dataset's benchmark memory (built once, then cached) and the queries to ask it."""

    source: Path
    path: Path
    embedder: CachedEmbedder
    build_s: float
    videos: int
    queries: list[Query]
    sample: list[Query]


def prepare(args, dataset: str) -> Prepared:
    """Build (or find) the memory of ``dataset`` and embed the sampled queries once (cached)."""
    from memtools.embed import default_embedder

    source, query_file = files(args.data, dataset)
    embedder = CachedEmbedder(default_embedder(), Path(args.workdir) / f"memtools-{dataset}-texts.npz")
    path = Path(args.workdir) / f"memtools-{dataset}"
    print(f"memory of {source} -> {path}", file=sys.stderr)
    build_s, videos = build(path, source, embedder)
    queries = read_queries(query_file)
    sample = queries if args.limit <= 0 or args.limit >= len(queries) else \
        sorted(random.Random(args.seed).sample(queries, args.limit), key=queries.index)
    embedder.cache.fill([q.text for q in sample])
    embedder.cache.save()
    embedder.queries = {q.text: embedder.cache.vectors[q.text] for q in sample}
    return Prepared(source, path, embedder, build_s, videos, queries, sample)


def run(args, dataset: str) -> None:
    from memtools.store import Memory
    from memtools.tools.search import DEFAULT_PRESET, PRESETS

    ready = prepare(args, dataset)
    source, path, embedder, build_s, videos = ready.source, ready.path, ready.embedder, ready.build_s, ready.videos
    queries, sample = ready.queries, ready.sample
    presets = {name: PRESETS[name] for name in (args.presets or PRESETS)}
    with Memory.open(path, embedder) as memory:
        rows = memory.vectors.count()
        started = time.perf_counter()
        result = evaluate(memory, presets, sample, embedder)
        eval_s = time.perf_counter() - started
    n = len(sample)
    table = []
    for name in presets:
        row = [name + (" (default)" if name == DEFAULT_PRESET else "")]
        for scope in ("within video", "library-wide"):
            r1, r5, right = result["counts"][(name, scope)]
            row.append(f"{r1 / n:.3f} / {r5 / n:.3f}")
            if scope == "library-wide":
                row.append(f"{right / n:.3f}")
            p50, p99 = p50_p99(result["seconds"][(name, scope)])
            row.append(f"{p50:.1f} / {p99:.1f}")
        table.append(row)
    print(f"\n## Search quality: {dataset} ({'val_1 memory, val_2 queries' if dataset == 'activitynet' else 'val'})\n")
    print(f"{n:,} of {len(queries):,} queries ({'all' if n == len(queries) else f'random sample, seed {args.seed}'});"
          f" {videos:,} videos, {rows:,} lance rows; R@1 / R@5 at temporal IoU >= 0.5; top_k=5.\n")
    print(markdown_table(["preset", "within video R@1 / R@5", "within p50 / p99 ms", "library R@1 / R@5",
                          "right video in top 5", "library p50 / p99 ms"], table))
    print(f"\nNode-level ceiling (a single memory caption at IoU >= 0.5): {ceiling(source, sample):.3f}. "
          f"Build {build_s:.0f} s (cached after the first run); evaluation {eval_s:.0f} s.")


DEV_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def dev_check_arguments(doc: str | None) -> argparse.Namespace:
    """The options of a check on ActivityNet dev (a val_1 memory, a fixed sample of val_2 queries)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEV_DATA)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp"))
    parser.add_argument("--limit", type=int, default=2000, help="queries (a fixed random sample; 0: all)")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def dev_memory(args: argparse.Namespace, model_embedder) -> tuple[Path, CachedEmbedder, list[Query], list[Query]]:
    """The val_1 memory (built once under ``--workdir``), its caching embedder, every val_2 query and
    the sample the check runs."""
    source, query_file = files(args.data, "activitynet")
    embedder = CachedEmbedder(model_embedder, args.workdir / "memtools-activitynet-texts.npz")
    path = args.workdir / "memtools-activitynet"
    build(path, source, embedder)
    queries = read_queries(query_file)
    sample = queries if args.limit <= 0 or args.limit >= len(queries) else \
        sorted(random.Random(args.seed).sample(queries, args.limit), key=queries.index)
    return path, embedder, queries, sample
