"""``memtools show``: timeline pictures and browsable HTML pages of a memory, written to a folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from memtools.arg_types import folder, video_id
from memtools.cli.common import add_memory_arg, open_memory


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("show", help="write a timeline picture and browsable HTML pages of a memory",
                       description="Write, per video, a timeline PNG and a self-contained HTML page (no network "
                                   "needed) to browse video -> super -> macro events -> subgraph, plus a library "
                                   "index. Open OUT/index.html in a browser.")
    add_memory_arg(p)
    p.add_argument("--video", action="append", default=[], metavar="VIDEO_ID", type=video_id,
                   help="only this video (repeatable; default: every ready video)")
    p.add_argument("--out", type=folder, default=None, metavar="DIR", help="output folder (default: <memory>-show)")
    p.add_argument("--no-timeline", action="store_true", help="skip the timeline pictures (faster)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from memtools.show import export_show

    out = args.out or Path(f"{Path(args.memory).resolve().name}-show")
    with open_memory(args.memory) as memory:
        report = export_show(memory, out, video_ids=args.video or None, timeline=not args.no_timeline,
                             progress=not args.quiet)
    print(report.render())
    return 0
