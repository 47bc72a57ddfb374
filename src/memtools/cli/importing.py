"""``memtools import-captions``: a memory from subtitles or dense captions, no vision model needed.

Files are checked first (read once, nothing kept but the video ids: a broken file, a bad id or
two videos with one id are refused before anything is written, and before the memory folder is
made), then read again as a stream and written a batch of videos at a time, so memory stays
bounded however large the file. Every change made to the input (clamped times, zero-length
cues, extended durations, dropped empty captions, rejected times and values of the wrong type,
videos refused for their id or for having no caption left, a guessed encoding) is counted in the
summary with its first examples, and so are videos that replaced ones already in the memory.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from memtools.arg_types import non_empty_text, positive_int, video_id
from memtools.cli.common import add_embedder_arg, add_memory_arg, add_tables_arg, create_memory, use_image_embedder
from memtools.cli.time_args import add_time_args, recording_rule

if TYPE_CHECKING:
    from memtools.importers.caption_checks import ImportNotes

EXAMPLES = 3  # replaced videos named in the summary


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "import-captions",
        help="build a memory from .srt/.vtt subtitles or dense-caption JSON (ActivityNet / YouCook2 layout)",
        description="Each caption becomes a micro-event; captions are grouped into macro and super events by "
                    "time. Video ids are kept as the files give them (a JSON key, --video-id, or a subtitle "
                    "file's name); re-importing a video replaces it, and the summary says so. Repairs of the "
                    "input (negative times, cues that end before they start, captions past the duration, empty "
                    "captions) are listed in the summary; captions with NaN, absurd or wrongly typed values are "
                    "rejected, and so are videos whose id is not valid. A killed import resumes when "
                    "run again: the videos it had written are kept, the rest are written.",
    )
    p.add_argument("files", nargs="+", type=Path, metavar="FILE", help=".srt, .vtt or dense-caption .json files")
    add_memory_arg(p)
    add_embedder_arg(p)
    add_tables_arg(p)
    p.add_argument("--video-id", type=video_id,
                   help="video id for a single subtitle file, kept as given (default: its file name without the "
                        "extension, each run of other characters than letters, digits, _ - . made one _)")
    p.add_argument("--title", type=non_empty_text, help="title for a single subtitle file")
    p.add_argument("--encoding", type=non_empty_text, default=None,
                   help="text encoding of subtitle files (default: UTF-8, or what a byte-order mark says, else "
                        "cp1252/latin-1 with a notice)")
    p.add_argument("--batch-size", type=positive_int, default=200,
                   help="videos written per atomic step (default 200); on a memory of tens of thousands of "
                        "videos, 1000 imports about a third faster and peaks about a third higher in memory")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    add_time_args(p)
    p.set_defaults(func=run)


def _check(paths: list[Path], args: argparse.Namespace, notes: ImportNotes) -> dict[str, int]:
    """Read every file once (nothing kept but the ids) and return the ids to import, each with the
    index of its file in ``paths``.

    A broken file, a bad ``--video-id`` or two videos that would be stored under one id are refused
    here, before anything is written; repairs and videos left out are counted in ``notes``."""
    from memtools.errors import ImportFormatError
    from memtools.importers.captions import read_caption_file

    for path in paths:
        if not path.is_file():
            raise ImportFormatError(f"{path} does not exist" if not path.exists() else f"{path} is not a file")
        if path.suffix.lower() not in (".json", ".srt", ".vtt"):
            raise ImportFormatError(f"{path}: unsupported caption file (use .srt, .vtt or dense-caption .json)")
        if path.suffix.lower() == ".json" and (args.video_id or args.title):
            raise ImportFormatError(f"--video-id and --title apply to one subtitle file; {path} names its own videos")
    if (args.video_id or args.title) and len(paths) > 1:
        raise ImportFormatError("--video-id and --title name one video; pass a single subtitle file with them")
    origin: dict[str, int] = {}  # id -> the index of its file: ids only are kept, however large the files

    def where(vid: str, n: int) -> str:
        path = paths[n]
        return (f"{path} (key {vid!r})" if path.suffix.lower() == ".json"
                else f"{path} ({'--video-id' if args.video_id else 'its file name'})")

    for n, path in enumerate(paths):
        if path.stat().st_size > 1e6:
            print(f"checking {path} ({path.stat().st_size / 1e6:.0f} MB) ...", file=sys.stderr, flush=True)
        for video in read_caption_file(path, args.video_id, args.title, encoding=args.encoding, notes=notes):
            vid = video.video_id
            if vid in origin:
                raise ImportFormatError(f"two videos would both be stored as {vid!r}: {where(vid, origin[vid])} and "
                                        f"{where(vid, n)}; nothing was written. Give them different ids (a subtitle "
                                        "file takes --video-id, or rename it)")
            origin[vid] = n
    return origin


def _transcript(lines: int) -> str:
    return f" and {lines} subtitle line(s) as the transcript" if lines else ""


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _joined(args: argparse.Namespace, record: dict, videos: int, start: float) -> int:
    """The same import finished in another process while this one waited: its result is this one's."""
    print(f"The same import of {videos} video(s) finished in another process (pid {record.get('pid', '?')}) while "
          f"this one waited: {args.memory} holds its result; nothing was written twice "
          f"({time.monotonic() - start:.1f} s).")
    print(f"Next: memtools tool search_nodes --memory {args.memory} --query \"...\"")
    return 0


def run(args: argparse.Namespace) -> int:
    from memtools.errors import ImportFormatError
    from memtools.importers.bulk import ImportLedger, bulk_write, finished_turn, import_key, import_turn
    from memtools.importers.caption_checks import ImportNotes
    from memtools.importers.captions import graphs_from_files

    start = time.monotonic()
    notes = ImportNotes()
    origin = _check(args.files, args, notes)  # everything refusable is refused here: no memory folder yet
    if not origin:
        if notes:
            print("Left out (the files are unchanged):\n" + "\n".join(notes.render()))
        raise ImportFormatError(f"nothing to import: no video with a usable caption in {len(args.files)} file(s)"
                                f"{' (see above)' if notes else ''}; nothing was written")
    rule = recording_rule(args, len(origin))
    totals = {"captions": 0, "macros": 0, "speech": 0}

    def counted(graphs):
        for graph in graphs:
            totals["captions"] += len(graph.events)
            totals["macros"] += len(graph.macros)
            totals["speech"] += len(graph.speech)  # subtitles are a transcript too (get_transcript)
            yield graph

    # the files are read again as a stream; their notes were taken by the check above
    graphs = counted(graphs_from_files(args.files, video_id=args.video_id, title=args.title,
                                       encoding=args.encoding, notes=ImportNotes()))
    timing = {k: v for k in ("recorded_at", "recorded_at_pattern", "timezone") if (v := getattr(args, k))}
    key = import_key(args.files, kind="captions", video_id=args.video_id, title=args.title, **timing)
    memory_cm = use_image_embedder(create_memory(args.memory, args.embedder, args.tables, args.graph_engine), args)
    with memory_cm as memory, import_turn(memory, key, say=_say) as turn:
        if turn.joined is not None:
            return _joined(args, turn.joined, len(origin), start)
        memory.recording_rule = rule
        memory.refresh()  # another run of this import may have written while this one waited
        landed = ImportLedger(memory, key).landed()  # a killed run of this import wrote these: not replacements
        replaced = [vid for vid in origin if vid in memory.manifest.videos and vid not in landed]
        result = bulk_write(memory, graphs, key=key, batch_size=args.batch_size, total=len(origin),
                            show_progress=not args.no_progress)
        finished_turn(memory, key, result.written + result.skipped)
    resumed = f", {result.skipped} already written by the interrupted run" if result.skipped else ""
    print(f"Imported {result.written + result.skipped} video(s){resumed}: {totals['captions']} captions as "
          f"micro-events in {totals['macros']} macro events{_transcript(totals['speech'])} into {args.memory} "
          f"({time.monotonic() - start:.1f} s).")
    if replaced:
        more = ", ..." if len(replaced) > EXAMPLES else ""
        print(f"Replaced {len(replaced)} video(s) already in the memory with these captions "
              f"({', '.join(replaced[:EXAMPLES])}{more}).")
    if notes:
        print("Changed or left out while importing (the files are unchanged):")
        print("\n".join(notes.render()))
    if result.written or result.skipped:
        print(f"Next: memtools tool search_nodes --memory {args.memory} --query \"...\"")
    return 0
