"""``memtools import-captions``: a memory from subtitles or dense captions, no vision model needed.

Files are checked first (read once, nothing kept: a broken file is refused before anything is
written), then read again as a stream and written a batch of videos at a time, so memory stays
bounded however large the file. Every change made to the input (clamped times, zero-length
cues, extended durations, dropped empty captions, rejected NaN times, a guessed encoding) is
counted in the summary with its first examples.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from memtools.cli.common import add_embedder_arg, add_memory_arg, add_tables_arg, create_memory, use_image_embedder


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "import-captions",
        help="build a memory from .srt/.vtt subtitles or dense-caption JSON (ActivityNet / YouCook2 layout)",
        description="Each caption becomes a micro-event; captions are grouped into macro and super events by "
                    "time. Re-importing a video replaces it. Repairs of the input (negative times, cues that "
                    "end before they start, captions past the duration, empty captions) are listed in the "
                    "summary; captions with NaN or infinite times are rejected. A killed import resumes when "
                    "run again: the videos it had written are kept, the rest are written.",
    )
    p.add_argument("files", nargs="+", type=Path, metavar="FILE", help=".srt, .vtt or dense-caption .json files")
    add_memory_arg(p)
    add_embedder_arg(p)
    add_tables_arg(p)
    p.add_argument("--video-id", help="video id for a single subtitle file (default: from its file name)")
    p.add_argument("--title", help="title for a single subtitle file")
    p.add_argument("--encoding", default=None,
                   help="text encoding of subtitle files (default: UTF-8, else cp1252/latin-1 with a notice)")
    p.add_argument("--batch-size", type=int, default=200, help="videos written per atomic step (default 200)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=run)


def _count(paths: list[Path], args: argparse.Namespace) -> int:
    """Videos in the files; a JSON file is read once, nothing kept, so a broken one fails before any write."""
    from memtools.importers.captions import read_subtitles
    from memtools.importers.dense_captions import scan_dense_captions

    videos = 0
    for path in paths:
        if path.stat().st_size > 1e6:
            print(f"checking {path} ({path.stat().st_size / 1e6:.0f} MB) ...", file=sys.stderr, flush=True)
        if path.suffix.lower() == ".json":
            videos += scan_dense_captions(path).videos
        elif path.suffix.lower() in (".srt", ".vtt"):
            read_subtitles(path, encoding=args.encoding)
            videos += 1
    return videos


def run(args: argparse.Namespace) -> int:
    from memtools.errors import ImportFormatError
    from memtools.importers.bulk import bulk_write, import_key
    from memtools.importers.caption_checks import ImportNotes
    from memtools.importers.captions import graphs_from_files

    for path in args.files:
        if not path.is_file():
            raise ImportFormatError(f"{path} does not exist" if not path.exists() else f"{path} is not a file")
    if args.video_id and len(args.files) > 1:
        raise ImportFormatError("--video-id names one video; pass a single subtitle file with it")
    start = time.monotonic()
    total_videos = _count(args.files, args)
    notes = ImportNotes()
    totals = {"captions": 0, "macros": 0}

    def counted(graphs):
        for graph in graphs:
            totals["captions"] += len(graph.events)
            totals["macros"] += len(graph.macros)
            yield graph

    graphs = counted(graphs_from_files(args.files, video_id=args.video_id, title=args.title,
                                       encoding=args.encoding, notes=notes))
    key = import_key(args.files, kind="captions", video_id=args.video_id, title=args.title)
    with use_image_embedder(create_memory(args.memory, args.embedder, args.tables, args.graph_engine), args) as memory:
        result = bulk_write(memory, graphs, key=key, batch_size=max(1, args.batch_size), total=total_videos,
                            show_progress=not args.no_progress)
    resumed = f", {result.skipped} already written by the interrupted run" if result.skipped else ""
    print(f"Imported {result.written + result.skipped} video(s){resumed}: {totals['captions']} captions as "
          f"micro-events in {totals['macros']} macro events into {args.memory} ({time.monotonic() - start:.1f} s).")
    if notes:
        print("Changed or left out while importing (the files are unchanged):")
        print("\n".join(notes.render()))
    if result.written or result.skipped:
        print(f"Next: memtools tool search_nodes --memory {args.memory} --query \"...\"")
    return 0
