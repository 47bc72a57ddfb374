"""``memtools info``: what a memory holds."""

from __future__ import annotations

import argparse

from memtools.cli.common import add_memory_arg, open_memory
from memtools.cli.costs import add_prices_arg
from memtools.rerank.arguments import add_reranker_arg, describe_reranker
from memtools.store.catalog.failures import failed_videos
from memtools.store.integrity.checker import damage_message, quick_problems
from memtools.tools.text import hms

SHOW_VIDEOS = 20


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("info", help="show the videos, counts, size and embedder of a memory")
    add_memory_arg(p)
    p.add_argument("--cost", action="store_true",
                   help="tokens of every recorded model call per video and stage, and money from a price table")
    add_prices_arg(p)
    add_reranker_arg(p)
    p.set_defaults(func=run)


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


def run(args: argparse.Namespace) -> int:
    with open_memory(args.memory) as memory:
        manifest = memory.manifest
        videos = manifest.videos
        totals: dict[str, int] = {}
        for entry in videos.values():
            for key, value in entry.counts.items():
                totals[key] = totals.get(key, 0) + value
        hours = sum(v.duration for v in videos.values()) / 3600
        print(f"Memory {memory.path}")
        print(f"  schema v{manifest.schema_version}, graph engine {manifest.graph_engine}, "
              f"embedder {manifest.embedder.name} (dim {manifest.embedder.dim})")
        print(f"  {len(videos)} video(s), {hours:.2f} h, {_size(memory.size_bytes())} on disk")
        print(f"  search: {describe_reranker()}")
        if manifest.image_embedder is not None:
            vectors = sum(v.keyframe_vectors for v in videos.values())
            print(f"  visual search: image embedder {manifest.image_embedder.name} "
                  f"(dim {manifest.image_embedder.dim}), {vectors} keyframe vector(s)")
        if totals:
            order: tuple[str, ...] = ("super", "macro", "entity", "event", "ocr", "keyframe", "edges")
            order += ("speech",) if totals.get("speech") else ()
            print("  " + ", ".join(f"{totals.get(k, 0)} {k}" for k in order))
        for vid, entry in sorted(videos.items())[:SHOW_VIDEOS]:
            status = "" if entry.status == "ready" else f" [{entry.status}]"
            print(f"  - {vid} [{hms(entry.duration)}] {entry.title}{status}")
        for failure in failed_videos(memory.path, manifest)[:SHOW_VIDEOS]:
            print(f"  {failure.video_id} is failed: {failure.advice(args.memory)}")
        if len(videos) > SHOW_VIDEOS:
            print(f"  … {len(videos) - SHOW_VIDEOS} more; `memtools tool list_videos --memory {args.memory} "
                  f"--offset {SHOW_VIDEOS}` lists the next ones (--query TEXT finds videos by id or title)")
        if args.cost:
            from memtools.costs import PriceTable, collect, render_costs

            print("Cost:")
            print(render_costs(collect(memory.path), PriceTable.load(memory.path, args.prices)))
        problems = quick_problems(memory.path, manifest)
        if problems:
            print(f"DAMAGED: {damage_message(memory.path, problems)}")
            return 1
    return 0
