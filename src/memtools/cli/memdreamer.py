"""``memtools import-memdreamer``: memories released in the MEMDREAMER layout, as a memtools memory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memtools.cli.common import add_embedder_arg, add_memory_arg, add_tables_arg, create_memory, use_image_embedder


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "import-memdreamer",
        help="import memories in the MEMDREAMER release layout (<root>/<video_key>/phase4, phase2_topdown)",
        description="Reads each <video_key>/phase4/hierarchical_graph_final.json and its phase2_topdown "
                    "subgraphs, maps them onto memtools' schema (dropping and counting what does not fit), "
                    "re-embeds every node with the memory's embedder and copies best-frame keyframes. "
                    "Re-importing a video replaces it. Exits 1 when any video was skipped.",
    )
    p.add_argument("root", type=Path, metavar="DIR", help="release root holding <video_key>/ folders "
                                                          "(or one video's folder)")
    add_memory_arg(p)
    add_embedder_arg(p)
    add_tables_arg(p)
    p.add_argument("--video", action="append", metavar="KEY", dest="videos",
                   help="import only this video key (repeatable; default: every video under DIR)")
    p.add_argument("--dry-run", action="store_true", help="read and report, write nothing")
    p.add_argument("--report", type=Path, metavar="FILE",
                   help="also write the full report as JSON (every drop reason and the id map)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from memtools.importers.bulk import finished_turn, import_key, import_turn
    from memtools.memdreamer import import_memdreamer, read_memdreamer

    if args.dry_run:
        report = read_memdreamer(args.root, args.videos).report
        report.dry_run = True
    else:
        from tqdm.auto import tqdm

        key = import_key([args.root], kind="memdreamer", videos=sorted(args.videos or []))
        with use_image_embedder(create_memory(args.memory, args.embedder, args.tables,
                                              args.graph_engine), args) as memory, \
                import_turn(memory, key, say=lambda text: print(text, file=sys.stderr, flush=True)) as turn, \
                tqdm(desc="import", unit="video", file=sys.stderr, disable=not sys.stderr.isatty()) as bar:
            if turn.joined is not None:
                print(f"The same import finished in another process (pid {turn.joined.get('pid', '?')}) while this "
                      f"one waited: {args.memory} holds its result; nothing was written twice.")
                return 0

            def progress(video) -> None:
                bar.update(1)
                if args.verbose or not sys.stderr.isatty():
                    print(f"  {video.status} {video.key}", file=sys.stderr)

            memory.refresh()  # another run of this import may have written while this one waited
            report = import_memdreamer(memory, args.root, args.videos, progress=progress, resume_key=key)
            finished_turn(memory, key, len(report.imported))
    print(report.render())
    if args.report is not None:
        args.report.write_text(report.model_dump_json(indent=2), encoding="utf-8")
        print(f"Full report: {args.report}")
    if report.imported and not args.dry_run:
        print(f"Next: memtools tool get_summary --memory {args.memory} --video-id {report.imported[0].video_id}")
    return 0 if report.ok else 1
