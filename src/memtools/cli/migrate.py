"""``memtools migrate``: copy a memory to another graph engine (kuzu <-> ladybug), verified.

kuzu and ladybug cannot be imported in one process, so this command imports neither: a child
process exports the graph from the source engine (and records every tool's output), another
imports it into the target engine (and records the outputs again), and the two records must be
identical. The lance tables, frames and work folders are engine-independent and copied as they
are (``--to``) or kept (in place: the new graph file is put beside the old one, which is kept as
``<file>.pre-migrate`` until you delete it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from memtools.arg_types import non_negative_int
from memtools.cli.common import add_memory_arg
from memtools.errors import ConfigError, StoreError
from memtools.store.file_lock import holding

ENGINES = ("kuzu", "ladybug")
COPIED = ("vectors", "frames", "work")  # engine-independent parts of a memory folder


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "migrate", help="copy a memory to another graph engine (kuzu or ladybug), checked tool by tool",
        description="Export the graph from the memory's engine and import it into another one (each in its own "
                    "process), then check that every tool answers exactly as before. The search tables and frames "
                    "are engine-independent and copied as they are. Without --to the memory is migrated in place "
                    "and its old graph file is kept as <file>.pre-migrate.")
    add_memory_arg(p)
    p.add_argument("--engine", required=True, choices=ENGINES, help="the graph engine to migrate to")
    p.add_argument("--to", type=Path, default=None, metavar="FOLDER",
                   help="write the migrated memory to this new folder and leave the source untouched")
    p.add_argument("--verify-videos", type=non_negative_int, default=50, metavar="N",
                   help="compare every tool's output over the first N videos (default 50; 0: every video)")
    p.set_defaults(func=run_migrate)


def run_migrate(args: argparse.Namespace) -> int:
    from memtools.store.catalog.manifest import read_manifest

    source = Path(args.memory)
    with _no_writer(source) as waited:
        return _migrate(args, source, read_manifest(source), waited)


def _migrate(args: argparse.Namespace, source: Path, manifest, waited: bool) -> int:
    """The migration, with the writers' lock held (``waited``: this run waited for another writer first)."""
    from memtools.store.engines import graph_engine

    if manifest.graph_engine == args.engine:
        if waited:  # the same command, run twice at once: the other run did it
            print(f"memory at {source} was migrated to {args.engine} by another process while this one waited; "
                  "nothing left to do")
            return 0
        raise ConfigError(f"memory at {source} already uses the {args.engine} graph engine; nothing to migrate")
    old, new = graph_engine(manifest.graph_engine), graph_engine(args.engine)
    if args.to is not None:
        if manifest.tables:
            raise ConfigError(f"memory at {source} keeps its tables at {manifest.tables}; two memories must not "
                              "share them, so migrate it in place (leave out --to)")
        if args.to.exists() and any(args.to.iterdir()):
            raise ConfigError(f"{args.to} exists and is not empty; choose a new folder for --to")
    videos = args.verify_videos or None
    with tempfile.TemporaryDirectory(prefix="memtools-migrate-") as tmp:
        work = Path(tmp)
        target = args.to if args.to is not None else work / "memory"
        _child("export", str(source), str(work / "graphs.jsonl"), str(work / "before.json"), str(videos or 0))
        _copy_folder(source, target, link=args.to is None)
        try:
            _child("import", str(target), str(work / "graphs.jsonl"), str(work / "after.json"), str(videos or 0),
                   args.engine)
            problems = _compare(work / "before.json", work / "after.json")
            if problems:
                raise StoreError(f"the migrated memory answers differently ({len(problems)} call(s)): "
                                 + "; ".join(problems[:5]) + f". {source} is unchanged")
        except BaseException:
            if args.to is not None:
                shutil.rmtree(args.to, ignore_errors=True)
            raise
        calls = len(json.loads((work / "before.json").read_text(encoding="utf-8")))
        if args.to is None:
            _switch_in_place(source, target, old.file_name, new.file_name)
    where = args.to if args.to is not None else source
    print(f"migrated {where} from {old.name} to {new.name}; {calls} tool call(s) answered identically")
    if args.to is None:
        print(f"the old graph is kept as {source / (old.file_name + '.pre-migrate')}; delete it when you no "
              "longer need it")
    return 0


def _copy_folder(source: Path, target: Path, *, link: bool) -> None:
    """The memory without its graph: manifest, list of videos, tables, frames, work (``link``: symlinks to the
    source's, for an in-place migration whose import child only reads them)."""
    from memtools.store.catalog.copying import copy_catalog
    from memtools.store.library.layer import LIBRARY

    target.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source / "memtools.json", target / "memtools.json")
    copy_catalog(source, target)  # the list of videos (videos.sqlite), one consistent copy
    if (source / LIBRARY).is_file():  # the library layer: no writer runs, so the file is whole
        shutil.copy2(source / LIBRARY, target / LIBRARY)
    for name in COPIED:
        if (source / name).is_dir():
            if link:
                try:
                    os.symlink(source.resolve() / name, target / name, target_is_directory=True)
                except OSError:  # Windows without the symlink privilege: copy instead
                    shutil.copytree(source / name, target / name)
            else:
                shutil.copytree(source / name, target / name)


@contextlib.contextmanager
def _no_writer(folder: Path) -> Iterator[bool]:
    """Hold the memory's writer lock for the whole migration, so no write lands in between; wait for a
    writer that holds it (saying so). Yields whether it waited."""
    with holding(folder / "memtools.lock", lambda: print(f"another process is writing to {folder}; waiting for it "
                                                          "to finish (interrupt to stop waiting)",
                                                          file=sys.stderr, flush=True)) as waited:
        yield waited


def _switch_in_place(source: Path, target: Path, old_file: str, new_file: str) -> None:
    """Move the new graph beside the old one, then switch the manifest (one atomic rename)."""
    from memtools.store.catalog.manifest import read_manifest, write_manifest

    for suffix in ("", ".wal"):
        made = target / (new_file + suffix)
        if made.exists():
            shutil.move(str(made), source / (new_file + suffix))
    manifest = read_manifest(source)
    manifest.graph_engine = read_manifest(target).graph_engine
    write_manifest(source, manifest)
    for suffix in ("", ".wal"):
        if (source / (old_file + suffix)).exists():
            os.replace(source / (old_file + suffix), source / (old_file + suffix + ".pre-migrate"))


def _compare(before: Path, after: Path) -> list[str]:
    from memtools.tools.snapshot import differences

    return differences(json.loads(before.read_text(encoding="utf-8")), json.loads(after.read_text(encoding="utf-8")))


def _child(*argv: str) -> None:
    run = subprocess.run([sys.executable, "-m", "memtools.cli.migrate", *argv], capture_output=True, text=True)
    if run.returncode != 0:
        last = (run.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise StoreError(f"migrate {argv[0]} failed: {last}")


def _snapshot(folder: Path, out: Path, videos: int) -> None:
    from memtools.store import Memory
    from memtools.tools import MemoryTools
    from memtools.tools.snapshot import snapshot

    with Memory.open(folder) as memory:
        out.write_text(json.dumps(snapshot(MemoryTools(memory), videos or None)), encoding="utf-8")


def child_main(argv: list[str]) -> int:
    """``python -m memtools.cli.migrate export SRC GRAPHS OUT N`` / ``import DST GRAPHS OUT N ENGINE``."""
    from memtools.store.transfer import export_graph, import_graph

    what, folder, graphs, out, videos = argv[:5]
    if what == "export":
        export_graph(Path(folder), Path(graphs))
    else:
        import_graph(Path(folder), Path(graphs), argv[5])
    _snapshot(Path(folder), Path(out), int(videos))
    return 0


if __name__ == "__main__":
    sys.exit(child_main(sys.argv[1:]))
