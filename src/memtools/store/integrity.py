"""Is a memory folder whole? The manifest, the kuzu graph and the lance table must agree.

Two depths:

* ``quick_problems`` (a few ``stat`` calls) runs before every read and every write:
  ``graph.kuzu`` exists, and ``vectors/nodes.lance`` exists when the manifest lists
  searchable nodes. ``guard_vectors`` adds, once per manifest generation, the lance row count
  against the sum of the manifest's counts. A read on a damaged memory raises
  ``MemoryDamaged`` (a ``ToolError`` too, so every front end shows it); a write refuses,
  because writing on top of a lost ``vectors/`` would leave the older videos unsearchable.
* ``check`` (``memtools check``) compares everything: per video, the manifest's counts with
  the graph's, every searchable node with its lance row and vector, every row with its node,
  the embedder's dimension, the index, the keyframe files, and leftovers of interrupted writes.

``memtools.store.repair`` fixes what ``check`` finds, where it can be derived.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections import Counter, defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

from memtools.errors import ConfigError, MemoryDamaged, MemoryNotFound, StoreError
from memtools.schema import SEARCHABLE_KINDS
from memtools.store.manifest import Manifest, read_manifest
from memtools.store.problems import Problem, Report
from memtools.store.problems import first_line as _first_line
from memtools.store.vectors import LanceIndex

if TYPE_CHECKING:
    from memtools.store.memory import Memory

GRAPH_FILE, VECTORS_DIR, NODES_TABLE = "graph.kuzu", "vectors", "nodes.lance"
LOCK_FILE, INTENT_FILE, TEMP_GLOB = "memtools.lock", ".write-intent", ".memtools-*.json"
JOURNAL_FILE = ".write-journal"  # what a write is about to change (memtools.store.recovery)
SEARCHABLE = tuple(kind.value for kind in SEARCHABLE_KINDS)
EXAMPLES = 3


def graph_file_name(manifest: Manifest) -> str:
    """The graph database file of a memory: its engine's (``graph.kuzu`` for kuzu)."""
    from memtools.store.graph_engines import graph_engine

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
    """Lance rows the manifest implies: one per searchable node of every ready video, plus the
    video's profile row (its root, which library search ranks videos by)."""
    return sum((1 if entry.counts else 0) + sum(entry.counts.get(kind, 0) for kind in SEARCHABLE)
               for entry in manifest.videos.values() if entry.status == "ready")


def quick_problems(path: Path, manifest: Manifest, rows: int | None = None) -> list[Problem]:
    """What a few ``stat`` calls can tell: the graph file and the vector table exist.
    ``rows``: ``expected_rows(manifest)`` when the caller has it already."""
    problems = []
    graph = graph_file_name(manifest)
    if not (path / graph).is_file():
        ready = [vid for vid, entry in manifest.videos.items() if entry.status == "ready"]
        problems.append(Problem("graph", f"{graph} is missing", not ready, restore=_restore(path, ready)))
    rows = expected_rows(manifest) if rows is None else rows
    # tables on object storage: no stat() there; guard_vectors' row count notices lost tables
    if rows and not manifest.tables and not (path / VECTORS_DIR / NODES_TABLE).is_dir():
        where = f"{VECTORS_DIR}/" if not (path / VECTORS_DIR).is_dir() else f"{VECTORS_DIR}/{NODES_TABLE}"
        problems.append(Problem("vectors", f"{where} is missing ({rows} searchable nodes have no vectors)", True))
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


def guard(memory: Memory, *, writing: bool = False) -> None:
    """Raise ``MemoryDamaged`` if the cheap checks fail."""
    cached = getattr(memory, "_expected_rows", None)
    if cached is None or cached[0] is not memory.manifest:  # the sum costs ~1 µs a video: once per manifest
        cached = memory._expected_rows = (memory.manifest, expected_rows(memory.manifest))
    problems = quick_problems(memory.path, memory.manifest, cached[1])
    if problems:
        raise MemoryDamaged(damage_message(memory.path, problems, writing=writing))


def guard_vectors(memory: Memory, index: LanceIndex) -> None:
    """Once per manifest generation: the lance row count matches the manifest's counts."""
    manifest = memory.manifest
    if getattr(memory, "_vectors_checked", None) == (manifest.generation, memory._manifest_stamp):
        return
    guard(memory)
    expected = expected_rows(manifest)
    try:
        found = index.count()
    except StoreError as exc:
        raise MemoryDamaged(damage_message(memory.path, [Problem("vectors", _first_line(exc), True)])) from exc
    if found != expected:
        text = (f"the vector table holds {found} rows but the manifest lists {expected} searchable nodes"
                " (a write was interrupted, or files were copied from different times)")
        raise MemoryDamaged(damage_message(memory.path, [Problem("vectors", text, True)]))
    memory._vectors_checked = (manifest.generation, memory._manifest_stamp)


def clear_stale_intent(path: Path) -> bool:
    """Remove ``.write-intent`` if no writer holds ``memtools.lock`` (a writer was killed); True if removed."""
    try:
        handle = open(path / LOCK_FILE, "a+")  # noqa: SIM115 - closed below
    except OSError:
        return False
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return False
    try:
        (path / INTENT_FILE).unlink(missing_ok=True)
        return True
    except OSError:
        return False
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


class GuardedIndex(LanceIndex):
    """The lance tables, except that a read never creates ``vectors/`` (a missing folder stays missing)."""

    def __init__(self, path: Path | str, dim: int, memory_path: Path | None = None) -> None:
        super().__init__(path, dim)
        self.memory_path = memory_path or Path(path).parent

    def nodes(self, create: bool = False):
        if not create and self._nodes is None and not self.remote and not (Path(self.path) / NODES_TABLE).is_dir():
            return None
        return super().nodes(create)

    def search(self, *args, **kwargs):
        try:
            return super().search(*args, **kwargs)
        except StoreError as exc:  # lance failed reading its own files: a tool caller must learn what to do
            raise self._damaged(exc) from exc

    def search_columns(self, *args, **kwargs):
        try:
            return super().search_columns(*args, **kwargs)
        except StoreError as exc:
            raise self._damaged(exc) from exc

    def complete(self, *args, **kwargs):
        try:
            return super().complete(*args, **kwargs)
        except StoreError as exc:
            raise self._damaged(exc) from exc

    def video_profiles(self):
        try:
            return super().video_profiles()
        except StoreError as exc:
            raise self._damaged(exc) from exc

    def _damaged(self, exc: StoreError) -> MemoryDamaged:
        memory = self.memory_path
        return MemoryDamaged(f"{exc}. The vector table may be damaged; the user should run `memtools check "
                             f"--memory {memory}` (and `memtools repair --memory {memory}` if it finds damage)")


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


def check(memory: Memory) -> Report:
    """Compare the manifest, the graph, the vectors and the frames; never changes anything."""
    path = memory.path
    manifest = read_manifest(path)
    memory.manifest = manifest
    report = Report(path, problems=quick_problems(path, manifest))
    ready = sorted(v for v, e in manifest.videos.items() if e.status == "ready")
    report.parts["manifest"] = (f"{len(manifest.videos)} video(s), {len(ready)} ready, "
                                f"embedder {manifest.embedder.name} (dim {manifest.embedder.dim})")
    graph_ids: dict[str, set[str]] | None = None
    if (path / graph_file_name(manifest)).is_file():
        try:
            graph_ids = _check_graph(memory, manifest, ready, report)
        except StoreError as exc:
            text = f"{graph_file_name(manifest)} cannot be read: {_first_line(exc)}"
            report.problems.append(Problem("graph", text, False, restore=_restore(path, ready)))
            report.parts["graph"] = "UNREADABLE"
    else:
        report.parts["graph"] = "MISSING"
    if graph_ids is not None:
        from memtools.store.navigation_check import check_navigation

        check_navigation(memory, manifest, ready, report)
    if manifest.tables:
        report.parts["tables"] = f"{manifest.tables} (object storage: files are not listed, rows are compared)"
    if _has_nodes_table(memory, manifest, report):
        _check_vectors(memory, manifest, ready, graph_ids, report)
    elif "vectors" not in report.parts:
        report.parts["vectors"] = "missing" if expected_rows(manifest) else "empty (no searchable nodes yet)"
        if manifest.tables and expected_rows(manifest):  # on disk, quick_problems said so already
            report.problems.append(Problem("vectors", f"the nodes table is missing at {manifest.tables} "
                                           f"({expected_rows(manifest)} searchable nodes have no vectors)", True))
    _check_files(path, manifest, report)
    from memtools.store.keyframe_check import check_keyframes

    check_keyframes(memory, manifest, ready, report)
    return report


def _has_nodes_table(memory: Memory, manifest: Manifest, report: Report) -> bool:
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


def _check_graph(memory: Memory, manifest: Manifest, ready: list[str], report: Report) -> dict[str, set[str]]:
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
    for vid in sorted(in_graph - set(manifest.videos)):
        report.problems.append(Problem("manifest", f"the graph holds video {vid!r} but the manifest does not list it "
                                       "(a write was interrupted after the graph committed)", True, vid))
    for vid in ready:
        if vid in in_graph:
            have = counts.get(vid, {})
            wrong = {k: (v, have.get(k, 0)) for k, v in manifest.videos[vid].counts.items() if have.get(k, 0) != v}
            if wrong:
                detail = ", ".join(f"{k} {m} vs {g}" for k, (m, g) in sorted(wrong.items()))
                report.problems.append(Problem("manifest", f"{vid}: manifest counts differ from the graph ({detail})",
                                               True, vid))
    missing = [(vid, p) for vid, p in frames if vid in manifest.videos and not (path / p).is_file()]
    by_video: dict[str, list[str]] = defaultdict(list)
    for vid, p in missing:
        by_video[vid].append(p)
    for vid, paths in sorted(by_video.items()):
        report.problems.append(Problem(
            "frames", f"{vid}: {len(paths)} keyframe image(s) missing, e.g. {paths[0]}", False, vid,
            restore="inspect_frames falls back to the source video; rebuild the video to store them again"))
    report.parts["frames"] = f"{len(frames)} keyframe(s), {len(missing)} missing"
    return {vid: searchable.get(vid, set()) for vid in ready if vid in in_graph}


def _check_vectors(memory: Memory, manifest: Manifest, ready: list[str], graph_ids: dict[str, set[str]] | None,
                   report: Report) -> None:
    index = memory.vectors_unchecked
    index.refresh()
    try:
        table = index.nodes()
        dim = table.schema.field("vector").type.list_size
        rows = table.search().select(["id", "video_id", "vector"]).limit(None).to_arrow()
        nulls = table.count_rows("vector IS NULL")
        indexed = {tuple(ix.columns) for ix in table.list_indices()}
    except Exception as exc:  # lance raises OSError/ValueError/RuntimeError/pyarrow errors on damaged files
        report.parts["vectors"] = "UNREADABLE"
        report.problems.append(Problem("vectors", f"the vector table cannot be read: {_first_line(exc)}", True))
        return
    report.parts["vectors"] = f"{rows.num_rows} row(s), dim {dim}"
    if dim != manifest.embedder.dim:
        report.problems.append(Problem("vectors", f"vectors have dimension {dim} but the embedder "
                                       f"{manifest.embedder.name} makes {manifest.embedder.dim}", True))
    if nulls:
        report.problems.append(Problem("vectors", f"{nulls} row(s) have no vector", True))
    if rows.num_rows and ("text",) not in indexed:
        report.problems.append(Problem("vectors", "the full-text index is missing", True))
    ids, vids = rows.column("id").to_pylist(), rows.column("video_id").to_pylist()
    twice = [i for i, n in Counter(ids).items() if n > 1]
    if twice:
        report.problems.append(Problem("vectors", f"{len(twice)} node(s) have more than one row, e.g. {twice[0]}",
                                       True))
    in_lance: dict[str, set[str]] = defaultdict(set)
    for node_id, vid in zip(ids, vids, strict=True):
        in_lance[vid].add(node_id)
    for vid in sorted(set(in_lance) - set(ready)):
        report.problems.append(Problem("vectors", f"{len(in_lance[vid])} row(s) of video {vid!r}, which is not a "
                                       "ready video of this memory", True, vid))
    if graph_ids is None:
        return  # no graph to compare the rows with
    for vid in ready:
        want, have = graph_ids.get(vid), in_lance.get(vid, set())
        if want is None:
            continue  # a video the graph lost: reported above
        if want - have:
            lacking = sorted(want - have)
            report.problems.append(Problem("vectors", f"{vid}: {len(lacking)} searchable node(s) have no vector "
                                           f"row, e.g. {lacking[0]}", True, vid))
        if have - want:
            extra = sorted(have - want)
            report.problems.append(Problem("vectors", f"{vid}: {len(extra)} row(s) name nodes the graph does not "
                                           f"hold, e.g. {extra[0]}", True, vid))


def _check_files(path: Path, manifest: Manifest, report: Report) -> None:
    leftovers = sorted(p.name for p in path.glob(TEMP_GLOB))
    pending = [name for name in (INTENT_FILE, JOURNAL_FILE) if (path / name).exists()]
    if pending:
        with contextlib.suppress(OSError):
            handle = open(path / LOCK_FILE, "a+")  # noqa: SIM115 - closed below
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(handle, fcntl.LOCK_UN)
                leftovers += pending
            except BlockingIOError:
                pass  # a writer is at work
            finally:
                handle.close()
    if leftovers:
        finish = (f" (the next write, or `memtools repair`, finishes or rolls back the write {JOURNAL_FILE} "
                  "records)") if JOURNAL_FILE in leftovers else ""
        report.problems.append(Problem("files", f"leftovers of an interrupted write: {', '.join(leftovers)}{finish}",
                                       True))
    frames = path / "frames"
    orphans = sorted(p.name for p in frames.iterdir() if p.is_dir() and p.name not in manifest.videos) \
        if frames.is_dir() else []
    if orphans:
        report.problems.append(Problem("files", f"frames of {len(orphans)} video(s) the manifest does not list: "
                                       f"frames/{_some(orphans)}", True))
