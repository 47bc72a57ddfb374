"""Is a memory folder whole? The manifest, the kuzu graph and the lance table must agree.

Two depths:

* ``quick_problems`` (a few ``stat`` calls) runs before every read and every write:
  ``graph.kuzu`` exists, each lance table the manifest implies (``nodes``; ``entities`` when a
  video has entities; ``keyframes`` when keyframes were embedded) exists, and no table lost its
  ``_indices`` folder while another kept its own. ``guard_vectors`` adds, once per manifest
  generation, the lance row count against the manifest's counts, the vectors' width against the
  embedder's, and a ``stat`` of every index lance lists. A read on a damaged memory raises
  ``MemoryDamaged`` (a ``ToolError`` too, so every front end shows it, in plain words: lance's
  and kuzu's own texts go to the debug log); a write refuses, because writing on top of a lost
  table would leave the older videos unsearchable.
* ``check`` (``memtools check``) compares everything: per video, the manifest's counts with
  the graph's, every searchable node with its lance row, every row with its node, the
  ``entities`` and ``keyframes`` tables, the vectors' width, every table's indexes and their
  files (``lance_check``), the navigation rows, the library layer (``library_check``), the keyframe files (each
  one decoded), failed builds, leftovers of interrupted writes; ``deep`` re-derives every row (``derived_check``).

It reads the memory through the storage contract (``memtools.store.base.MemoryParts``), never
``Memory``: ``memory -> integrity`` is the only direction. ``memtools.store.integrity.repair`` fixes what
``check`` finds, where it can be derived.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from memtools.errors import ConfigError, MemoryDamaged, MemoryNotFound, StoreError
from memtools.schema import SEARCHABLE_KINDS
from memtools.store.catalog.manifest import Manifest, read_manifest
from memtools.store.catalog.parts import MemoryParts
from memtools.store.file_lock import try_lock, unlock
from memtools.store.integrity.catalog_check import catalog_problems, catalog_write_problems, check_catalog, graph_held
from memtools.store.integrity.lance_check import describe, missing_index_files, table_folder, vector_dim
from memtools.store.integrity.vector_check import check_entities, check_nodes
from memtools.store.problems import Problem, Report, unreadable
from memtools.store.problems import first_line as _first_line
from memtools.store.resources import raise_if_exhausted
from memtools.store.tables.vectors import LanceIndex

log = logging.getLogger(__name__)

GRAPH_FILE, VECTORS_DIR, NODES_TABLE = "graph.kuzu", "vectors", "nodes.lance"
LOCK_FILE, INTENT_FILE, TEMP_GLOB = "memtools.lock", ".write-intent", ".memtools-*.json"
JOURNAL_FILE = ".write-journal"  # what a write is about to change (memtools.store.writes.recovery)
SEARCHABLE = tuple(kind.value for kind in SEARCHABLE_KINDS)
EXAMPLES = 3


def graph_file_name(manifest: Manifest) -> str:
    """The graph database file of a memory: its engine's (``graph.kuzu`` for kuzu)."""
    from memtools.store.graph.engines import graph_engine

    return graph_engine(manifest.graph_engine).file_name


# --- cheap checks (every read and write) --------------------------------------------------


def check_folder(folder: Path, *, create: bool) -> None:
    """A one-line error when ``folder`` cannot be a memory (a file, or not writable for a new one)."""
    if folder.exists() and not folder.is_dir():
        error = ConfigError if create else MemoryNotFound  # MemoryNotFound: front ends show it to tool callers
        raise error(f"{folder} is a file, not a memory folder; pass a folder with --memory")
    if create:
        parent = folder if folder.exists() else next((p for p in folder.parents if p.exists()), None)
        try:
            if parent is None or not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
                raise PermissionError(13, "")
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            why = f" ({exc.strerror})" if exc.strerror else ""
            raise ConfigError(f"cannot create a memory at {folder}: {parent} is not a writable folder{why}; "
                              "choose a folder you can write to") from exc


def expected_rows(manifest: Manifest) -> int:
    """Lance rows the manifest implies: one per searchable node of every written video, plus the
    video's profile row (its root, which library search ranks videos by). A video being built again
    (or whose new build failed) keeps its counts and rows until the new version replaces them; a
    ``lost`` one has none. Read from the manifest's totals (kept by ``videos.sqlite``): nothing per video."""
    return manifest.video_totals().rows


def expected_tables(manifest: Manifest, rows: int) -> dict[str, str]:
    """The lance tables the manifest says hold rows (name -> what is lost without it)."""
    tables = {"nodes": f"{rows} searchable nodes have no vectors"} if rows else {}
    totals = manifest.video_totals()
    if totals.entity_videos:
        tables["entities"] = f"the entity profiles of {totals.entity_videos} video(s) are lost"
    if totals.keyframe_vectors and manifest.image_embedder is not None:
        tables["keyframes"] = f"{totals.keyframe_vectors} keyframe vector(s) are lost"
    return tables


def quick_problems(path: Path, manifest: Manifest, rows: int | None = None,
                   tables: dict[str, str] | None = None) -> list[Problem]:
    """What a few ``stat`` calls can tell: the graph file and the lance tables the manifest implies
    exist, and their index folders are there when another table's are (``finish_write`` indexes
    them together). ``rows``, ``tables``: ``expected_rows`` and ``expected_tables`` when the caller has them."""
    problems = catalog_problems(path, manifest)  # videos.sqlite is there
    graph = graph_file_name(manifest)
    base = os.fspath(path)  # plain strings: pathlib costs more than the stat calls on this hot path
    if not os.path.isfile(f"{base}/{graph}"):
        ready = manifest.videos.ids("ready") if not problems else []
        problems.append(Problem("graph", f"{graph} is missing", not manifest.video_totals().ready,
                                restore=_restore(path, ready)))
    rows = expected_rows(manifest) if rows is None else rows
    if manifest.tables:  # object storage: no stat() there; guard_vectors' row count notices lost tables
        return problems
    tables = expected_tables(manifest, rows) if tables is None else tables
    folder = f"{base}/{VECTORS_DIR}"
    present = [name for name in tables if os.path.isdir(f"{folder}/{name}.lance")]
    if len(present) < len(tables) and not os.path.isdir(folder):
        lost = "; ".join(tables.values())
        return [*problems, Problem("vectors", f"{VECTORS_DIR}/ is missing ({lost})", True)]
    for name in tables:
        if name not in present:
            part = "vectors" if name == "nodes" else name
            problems.append(Problem(part, f"{VECTORS_DIR}/{name}.lance is missing ({tables[name]})", True))
    indexed = [name for name in present if os.path.isdir(f"{folder}/{name}.lance/_indices")]
    for name in present if indexed else []:
        if name not in indexed:
            part = "vectors" if name == "nodes" else name
            problems.append(Problem(part, f"{VECTORS_DIR}/{name}.lance/_indices is missing (the table's indexes "
                                    "are lost)", True, index_only=True))
    return problems


def damage_message(path: Path, problems: list[Problem], *, writing: bool = False) -> str:
    first = problems[0]
    more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
    if first.repairable:
        fix = f"run `memtools repair --memory {path}`"
    else:
        fix = f"{first.restore}; `memtools check --memory {path}` lists the damage"
    if writing:
        return (f"refusing to write to the memory at {path}: it is damaged: {first.text}{more}. "
                f"A write now would leave older videos unsearchable; {fix} first")
    return (f"the memory at {path} is damaged: {first.text}{more}. It cannot be read until it is repaired; "
            f"the user should {fix}")


def guard(memory: MemoryParts, *, writing: bool = False) -> None:
    """Raise ``MemoryDamaged`` if the cheap checks fail."""
    cached = getattr(memory, "_expected_rows", None)
    if cached is None or cached[0] is not memory.manifest:  # once per manifest
        rows = expected_rows(memory.manifest)
        cached = (memory.manifest, rows, expected_tables(memory.manifest, rows))
        setattr(memory, "_expected_rows", cached)  # noqa: B010 - a cache ``Memory`` declares
    problems = quick_problems(memory.path, memory.manifest, cached[1], cached[2])
    if writing and not problems:  # a write must not skip a catalog at another generation, nor write a WAL file
        problems = catalog_write_problems(memory.manifest, (memory.path / JOURNAL_FILE).exists())
    if problems:
        raise MemoryDamaged(damage_message(memory.path, problems, writing=writing))


def guard_vectors(memory: MemoryParts, index: LanceIndex) -> None:
    """Once per manifest generation: the lance row count matches the manifest's counts, the vectors are
    as wide as the manifest's embedder says, and every index lance lists still has its files."""
    manifest = memory.manifest
    seen = (manifest.generation, getattr(memory, "_manifest_stamp", 0))
    if getattr(memory, "_vectors_checked", None) == seen:
        return
    guard(memory)
    expected = expected_rows(manifest)
    try:
        found = index.count()
        table = index.nodes()
        dim = vector_dim(table) if table is not None else manifest.embedder.dim
        lost = missing_index_files(table, table_folder(index, "nodes")) if table is not None else []
    except Exception as exc:  # lance raises many kinds on damaged files; its text goes to the debug log
        raise_if_exhausted(exc, "reading the vector table")
        text = unreadable("the vector table cannot be read (a data file is missing or damaged)", exc)
        raise MemoryDamaged(damage_message(memory.path, [Problem("vectors", text, True)])) from exc
    problems = []
    if found != expected:
        problems.append(Problem("vectors", f"the vector table holds {found} rows but the manifest lists {expected} "
                                "searchable nodes (a write was interrupted, or files were copied from different "
                                "times)", True))
    if dim != manifest.embedder.dim:
        problems.append(Problem("vectors", f"the vector table holds {dim}-dimensional vectors but the manifest says "
                                f"the embedder {manifest.embedder.name} makes {manifest.embedder.dim}", True))
    if lost:
        names = ", ".join(describe(str(ix.columns[0])) for ix in lost)
        problems.append(Problem("vectors", f"the files of {names} of the vector table are missing", True))
    if problems:
        raise MemoryDamaged(damage_message(memory.path, problems))
    setattr(memory, "_vectors_checked", seen)  # noqa: B010 - a cache ``Memory`` declares


# --- the full check (memtools check) ------------------------------------------------------


def _restore(path: Path, video_ids: list[str]) -> str:
    if not video_ids:
        return ""
    build = [v for v in video_ids if (path / "work" / v).is_dir()]
    other = [v for v in video_ids if v not in build]
    parts = []
    if build:
        parts.append(f"rerun `memtools build` for {_some(build)} (its checkpoints in work/ make that quick)")
    if other:
        parts.append(f"re-import {_some(other)} (import-captions / memdreamer, or build from the video)")
    return " and ".join(parts)


def _some(items: list[str]) -> str:
    shown = ", ".join(items[:EXAMPLES])
    return shown + (f" and {len(items) - EXAMPLES} more" if len(items) > EXAMPLES else "")


def writer_leftovers(path: Path, graph_name: str) -> list[str]:
    """The files a killed writer leaves (``pending_recovery``), whoever holds the lock now."""
    return [name for name in (JOURNAL_FILE, graph_name + ".shadow", graph_name + ".wal", graph_name + ".wal.checkpoint")
            if (path / name).exists()]


def pending_recovery(path: Path, graph_name: str) -> list[str]:
    """What a killed writer left for the next writer to finish: its journal, or the graph engine's
    shadow pages or write-ahead log (a commit or its checkpoint cut short: a read-only open cannot
    replay the first, nor ladybug's log when the kill left it empty, nor the log ladybug set aside as
    ``.wal.checkpoint`` while checkpointing it; a clean close leaves none of them). Empty
    when nothing is left, or when a writer holds the lock (it is at work and finishes its own)."""
    left = writer_leftovers(path, graph_name)
    if not left:
        return []
    try:
        handle = open(path / LOCK_FILE, "a+")  # noqa: SIM115 - closed below
    except OSError:
        return left
    try:
        if not try_lock(handle):
            return []
        unlock(handle)
        return left
    finally:
        handle.close()


def check(memory: MemoryParts, *, deep: bool = False) -> Report:
    """Compare the manifest, the graph, the lance tables, the derived files and the frames; never changes
    anything. A write a killed process left half-done is reported as that (``Report.pending``), not as
    damage: the parts disagree only until a writer finishes or undoes it (``memtools recover``)."""
    path = memory.path
    manifest = read_manifest(path)
    memory.manifest = manifest
    left = pending_recovery(path, graph_file_name(manifest))
    if left:
        return Report(path, pending=", ".join(left))
    # a lost keyframes table: check_keyframes names each video whose rows are gone
    report = Report(path, problems=[p for p in quick_problems(path, manifest)
                                    if not p.text.startswith(f"{VECTORS_DIR}/keyframes.lance is missing")])
    if not check_catalog(manifest, report, (path / JOURNAL_FILE).exists()):
        return report  # nothing else can be compared without the list of videos; repair lists them again
    ready = manifest.videos.ids("ready")
    report.parts["manifest"] = (f"{len(manifest.videos)} video(s), {len(ready)} ready, "
                                f"embedder {manifest.embedder.name} (dim {manifest.embedder.dim})")
    held = graph_held(memory, manifest, report, graph_file_name(manifest))  # checked as ready, never dropped
    _check_failed(path, manifest, report, set(held))
    ready = sorted({*ready, *held})
    graph_ids: dict[str, set[str]] | None = None
    frames: list[tuple[str, str]] = []
    if (path / graph_file_name(manifest)).is_file():
        try:
            graph_ids, frames = _check_graph(memory, manifest, ready, report)
        except (StoreError, MemoryDamaged) as exc:
            raise_if_exhausted(exc, "checking the graph")  # no memory to open it: not damage
            text = unreadable(f"{graph_file_name(manifest)} cannot be read (the file is damaged or truncated)", exc)
            report.problems.append(Problem("graph", text, False, restore=_restore(path, ready)))
            report.parts["graph"] = "UNREADABLE"
    else:
        report.parts["graph"] = "MISSING"
    if graph_ids is not None:
        from memtools.store.integrity.navigation_check import check_navigation
        from memtools.store.integrity.time_check import check_times

        check_navigation(memory, manifest, ready, report)
        check_times(memory, manifest, ready, report)
    if manifest.tables:
        report.parts["tables"] = f"{manifest.tables} (object storage: files are not listed, rows are compared)"
    if _has_nodes_table(memory, manifest, report):
        check_nodes(memory, manifest, ready, graph_ids, report)
        if not any(p.text.startswith(f"{VECTORS_DIR}/entities.lance is missing") for p in report.problems):
            check_entities(memory, manifest, ready, report)
    elif "vectors" not in report.parts:
        report.parts["vectors"] = "missing" if expected_rows(manifest) else "empty (no searchable nodes yet)"
        if manifest.tables and expected_rows(manifest):  # on disk, quick_problems said so already
            report.problems.append(Problem("vectors", f"the nodes table is missing at {manifest.tables} "
                                           f"({expected_rows(manifest)} searchable nodes have no vectors)", True))
    _check_files(path, manifest, report)
    from memtools.store.integrity.derived_check import check_deep
    from memtools.store.integrity.frame_files import check_keyframe_files
    from memtools.store.integrity.keyframe_check import check_keyframes
    from memtools.store.integrity.library_check import check_library

    if frames:
        with memory.reading(guard=False) as g:
            check_keyframe_files(path, manifest, frames, report, g)
    else:
        report.parts["frames"] = "0 keyframe(s)"
    check_keyframes(memory, manifest, ready, report)
    # a lost _indices folder is one line, not one per index
    gone = [name for name in ("nodes", "entities", "keyframes")
            if any(p.text.startswith(f"{VECTORS_DIR}/{name}.lance/_indices is missing") for p in report.problems)]
    report.problems = [p for p in report.problems
                       if not any(p.text.startswith(f"{name} table: the files of") for name in gone)]
    sound = check_library(memory, manifest, ready, report)
    if deep and graph_ids is not None:
        check_deep(memory, ready, report, library=sound)
    return report


def _check_failed(path: Path, manifest: Manifest, report: Report, held: set[str]) -> None:
    """Videos whose build stopped (status ``failed``): listed, never searchable, and what to do."""
    for vid, entry in manifest.videos.items("failed"):
        if vid in held:
            continue  # the graph holds it: the list is wrong (graph_held)
        when = f" on {entry.updated_at}" if entry.updated_at else ""
        checkpoints = " (its checkpoints in work/ make that quick)" if (path / "work" / vid).is_dir() else ""
        report.problems.append(Problem(
            "videos", f"video {vid!r} failed to build{when}: its build stopped before the video was written, so "
                      "no tool can find it", False, vid,
            restore=f"rerun `memtools build` for it{checkpoints}, or `memtools repair --forget-lost --memory {path}` "
                    "to drop it from the list"))


def _has_nodes_table(memory: MemoryParts, manifest: Manifest, report: Report) -> bool:
    if not manifest.tables:
        return (memory.path / VECTORS_DIR / NODES_TABLE).is_dir()
    try:
        return memory.vectors_unchecked.nodes() is not None
    except StoreError as exc:  # the bucket cannot be reached: say so, do not call it damage
        report.parts["vectors"] = f"UNREACHABLE ({_first_line(exc)})"
        report.problems.append(Problem("vectors", f"the tables at {manifest.tables} cannot be reached: "
                                       f"{_first_line(exc)}", False,
                                       restore="check the credentials and endpoint (AWS_* variables) and retry"))
        return False


def _check_graph(memory: MemoryParts, manifest: Manifest, ready: list[str],
                 report: Report) -> tuple[dict[str, set[str]], list[tuple[str, str]]]:
    path = memory.path
    with memory.reading(guard=False) as g:
        in_graph = set(g.video_ids())
        counts = g.counts_by_video()
        searchable = g.ids_by_video(SEARCHABLE_KINDS)
        for vid in in_graph:
            searchable[vid].add(vid)  # the root's profile row
        frames = g.keyframe_paths()
    report.parts["graph"] = f"{len(in_graph)} video(s), {sum(len(s) for s in searchable.values())} searchable nodes"
    lost = [v for v in ready if v not in in_graph]
    for vid in lost:
        report.problems.append(Problem("graph", f"video {vid!r} is listed as ready but the graph does not hold it",
                                       False, vid, restore=_restore(path, [vid])))
    listed = dict(manifest.videos.items())  # one read of the catalog, not one per video
    for vid in sorted(in_graph - set(listed)):
        report.problems.append(Problem("manifest", f"the graph holds video {vid!r} but the manifest does not list it "
                                       "(a write was interrupted after the graph committed)", True, vid))
    for vid in ready:
        if vid in in_graph and vid in listed:
            have = counts.get(vid, {})
            wrong = {k: (v, have.get(k, 0)) for k, v in listed[vid].counts.items() if have.get(k, 0) != v}
            if wrong:
                detail = ", ".join(f"{k} {m} vs {g}" for k, (m, g) in sorted(wrong.items()))
                report.problems.append(Problem("manifest", f"{vid}: manifest counts differ from the graph ({detail})",
                                               True, vid))
    return {vid: searchable.get(vid, set()) for vid in ready if vid in in_graph}, frames


def _check_files(path: Path, manifest: Manifest, report: Report) -> None:
    leftovers = sorted(p.name for p in path.glob(TEMP_GLOB))
    pending = [name for name in (INTENT_FILE, JOURNAL_FILE) if (path / name).exists()]
    if pending:
        with contextlib.suppress(OSError):
            handle = open(path / LOCK_FILE, "a+")  # noqa: SIM115 - closed below
            try:
                if try_lock(handle):  # else a writer is at work
                    unlock(handle)
                    leftovers += pending
            finally:
                handle.close()
    if leftovers:
        finish = (f" (the next write, or `memtools repair`, finishes or rolls back the write {JOURNAL_FILE} "
                  "records)") if JOURNAL_FILE in leftovers else ""
        report.problems.append(Problem("files", f"leftovers of an interrupted write: {', '.join(leftovers)}{finish}",
                                       True))
    frames = path / "frames"
    orphans = sorted(p.name for p in frames.iterdir() if p.is_dir() and p.name not in manifest.videos
                     and not (path / "work" / p.name).is_dir()) if frames.is_dir() else []  # (work/: a build
    # or follow to resume, which lands the video again over its frames)
    if orphans:
        report.problems.append(Problem("files", f"frames of {len(orphans)} video(s) the manifest does not list: "
                                       f"frames/{_some(orphans)}", True))
