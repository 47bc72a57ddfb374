"""``memtools import-captions``: a memory from subtitles or dense captions, no vision model needed."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from memtools.cli.common import add_embedder_arg, add_memory_arg, create_memory, use_image_embedder


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "import-captions",
        help="build a memory from .srt/.vtt subtitles or dense-caption JSON (ActivityNet / YouCook2 layout)",
        description="Each caption becomes a micro-event; captions are grouped into macro and super events by "
                    "time. Re-importing a video replaces it.",
    )
    p.add_argument("files", nargs="+", type=Path, metavar="FILE", help=".srt, .vtt or dense-caption .json files")
    add_memory_arg(p)
    add_embedder_arg(p)
    p.add_argument("--video-id", help="video id for a single subtitle file (default: from its file name)")
    p.add_argument("--title", help="title for a single subtitle file")
    p.add_argument("--batch-size", type=int, default=200, help="videos written per atomic step (default 200)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from memtools.errors import ImportFormatError
    from memtools.importers.captions import graphs_from_files

    for path in args.files:
        if not path.is_file():
            raise ImportFormatError(f"{path} does not exist")
    if args.video_id and len(args.files) > 1:
        raise ImportFormatError("--video-id names one video; pass a single subtitle file with it")
    graphs = list(graphs_from_files(args.files, video_id=args.video_id, title=args.title))
    start = time.monotonic()
    with use_image_embedder(create_memory(args.memory, args.embedder), args) as memory:
        def progress(done: int) -> None:
            print(f"  wrote {done}/{len(graphs)} videos ({time.monotonic() - start:.1f} s)", file=sys.stderr)

        memory.write_videos(graphs, batch_size=max(1, args.batch_size), progress=progress)
        events = sum(len(g.events) for g in graphs)
        macros = sum(len(g.macros) for g in graphs)
        print(f"Imported {len(graphs)} video(s): {events} captions as micro-events in {macros} macro events "
              f"into {args.memory} ({time.monotonic() - start:.1f} s).")
        if graphs:
            print(f"Next: memtools tool search_nodes --memory {args.memory} --query \"...\"")
    return 0
