"""``memtools export`` and ``memtools import-export``: a memory as one portable archive, and back (docs/export.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memtools.cli.common import add_memory_arg, add_tables_arg


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export", help="write the memory as one portable, versioned archive (graph, texts, times, people)",
        description="Writes every ready video of the memory to OUT, a zip file documented in docs/export.md: the "
                    "graphs, the catalog with recording times, people's names and clusters, the library ids and the "
                    "text vectors. Voice and face vectors (biometric data) only with --with-biometrics; keyframe "
                    "images only with --with-keyframes. `memtools import-export OUT --memory NEW` rebuilds it. "
                    "(The MEMDREAMER layout has its own importer: import-memdreamer.)")
    p.add_argument("out", type=Path, metavar="OUT", help="the archive file to write (e.g. my-memory.zip)")
    add_memory_arg(p)
    p.add_argument("--with-biometrics", action="store_true",
                   help="also carry the voice and face centroids (biometric data: share the archive accordingly)")
    p.add_argument("--with-keyframes", action="store_true", help="also carry the keyframe images")
    p.add_argument("--overwrite", action="store_true", help="replace OUT if it exists (default: refuse)")
    p.set_defaults(func=run_export)

    p = sub.add_parser(
        "import-export", help="rebuild a memory from an archive `memtools export` wrote",
        description="Checks the whole archive first (names, sizes, hashes, every row), then writes its videos "
                    "into a new or empty memory through the journaled write path: a killed import leaves whole "
                    "videos only, and running it again carries on. With the archive's embedder the stored vectors "
                    "are used as they are; with another (--embedder) every text is embedded again.")
    p.add_argument("archive", type=Path, metavar="ARCHIVE", help="the archive file")
    add_memory_arg(p)
    p.add_argument("--embedder", default=None, metavar="SPEC",
                   help="embedder of the new memory (default: the archive's): default, hf:MODEL, openai:MODEL, "
                        "test:DIM; another than the archive's recomputes every embedding")
    add_tables_arg(p)
    p.set_defaults(func=run_import)


def _progress(what: str):
    if not sys.stderr.isatty():
        return None
    return lambda n: print(f"\r{what} {n} video(s)", end="", file=sys.stderr, flush=True)


def run_export(args: argparse.Namespace) -> int:
    from memtools.archive import export_memory
    from memtools.cli.common import open_memory

    with open_memory(args.memory) as memory:
        report = export_memory(memory, args.out, with_biometrics=args.with_biometrics,
                               with_keyframes=args.with_keyframes, overwrite=args.overwrite,
                               progress=_progress("exported"))
    if sys.stderr.isatty():
        print(file=sys.stderr)
    print(report.render())
    print(f"Next: memtools import-export {args.out} --memory NEW_FOLDER")
    return 0


def run_import(args: argparse.Namespace) -> int:
    from memtools.archive import import_export

    embedder = None
    if args.embedder is not None:
        from memtools.embed import embedder_from_spec

        embedder = embedder_from_spec(args.embedder)
    report = import_export(args.archive, args.memory, embedder=embedder, graph_engine=args.graph_engine,
                           tables=args.tables, progress=_progress("imported"))
    if sys.stderr.isatty():
        print(file=sys.stderr)
    print(report.render())
    print(f"Next: memtools tool list_videos --memory {args.memory}")
    return 0
