"""``repair``: rebuild what ``integrity.check`` found broken, where the other parts hold it, and never
leave a memory worse than it was.

What can be derived, and from what:

* lance rows and vectors come from the graph: each video is read back as a ``VideoGraph`` and
  the lance part of a write runs again (``index_rows`` + the embedder); a whole table (lost,
  unreadable, the wrong width) is rebuilt aside and swapped in (``table_swap``); indexes whose
  files are gone are dropped and built again, rows kept;
* the ``entities`` table (canonical entity profiles) comes from the same graphs;
* a manifest whose embedder dimension disagrees with the vectors is mended when the embedder and
  the vectors agree; when they do not, repair refuses and changes nothing;
* a video the graph holds but the manifest lost goes back into the manifest; wrong counts are
  recounted; leftovers of interrupted writes and frames of unknown videos are removed;
* the derived files (``library.sqlite``, ``navigation.sqlite``, the time index) are compared with the graph
  row by row (``check(deep=True)``) and made again, a damaged file set aside first.

What cannot: a lost or unreadable graph (or a video missing from it), a lost or corrupt keyframe
image. The report says how to get them back. With ``forget_lost=True`` (``--forget-lost``) such
videos are marked ``lost`` (an unreadable graph is moved aside and started afresh), and videos
whose build failed are dropped from the list, so the rest of the memory works.

Safety: the lance versions of every table and the manifest are recorded first; a repair that
fails puts them back (and swapped tables' old folders) and raises; one that cannot tell what is
right refuses (``RepairResult.refused``) with nothing changed. Indexes are rebuilt last, because
building them prunes old lance versions.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memtools.errors import MemoryBusy, StoreError
from memtools.store.catalog.manifest import VideoEntry, now, read_manifest, write_manifest
from memtools.store.catalog.videos import CATALOG
from memtools.store.integrity import checker as integrity
from memtools.store.integrity import leftovers
from memtools.store.integrity.catalog_check import keyframe_rows, new_catalog, possible_duration
from memtools.store.integrity.frame_files import restore_images
from memtools.store.integrity.keyframe_check import repair_keyframes
from memtools.store.integrity.lance_check import drop_broken_indexes, table_folder, vector_dim
from memtools.store.integrity.library_check import repair_library
from memtools.store.integrity.navigation_check import repair_navigation
from memtools.store.integrity.repair_snapshot import RepairSnapshot
from memtools.store.integrity.repair_vectors import rebuild_vectors
from memtools.store.integrity.time_check import layer_missing, repair_times, upgrade_times
from memtools.store.problems import Problem, Report, unreadable
from memtools.store.resources import raise_if_exhausted
from memtools.wallclock import RecordingRule

if TYPE_CHECKING:
    from memtools.store.base import GraphStore
    from memtools.store.catalog.parts import MemoryParts
    from memtools.store.integrity.table_swap import AsideTable

log = logging.getLogger(__name__)

LOST = "lost"
DIMENSION_TEXT = "-dimensional vectors but the manifest says"


class RepairRefused(Exception):
    """Repair cannot tell which part is right; nothing was changed."""


@dataclass
class RepairResult:
    done: list[str] = field(default_factory=list)
    after: Report | None = None
    refused: str = ""

    @property
    def ok(self) -> bool:
        return self.after is not None and self.after.ok and not self.refused

    def render(self) -> str:
        if self.refused:
            lines = [f"Repair refused: {self.refused}.", "Nothing was changed."]
        else:
            nothing = "Nothing to repair." if self.after is None or self.after.ok else "Nothing could be repaired."
            lines = [f"Repaired: {d}" for d in self.done] or [nothing]
        if self.after is not None and not self.after.ok:
            lines.append("Still damaged:" if self.refused
                         else "Still damaged (cannot be rebuilt from the other parts):")
            lines += [f"  - [{p.part}] {p.text}: {p.restore or 'see memtools check'}" for p in self.after.problems]
        elif self.after is not None:
            lines.append("OK: the manifest, the graph and the vectors agree.")
        return "\n".join(lines)


def repair(memory: MemoryParts, progress: Callable[[str], None] | None = None, *,
           forget_lost: bool = False, times: RecordingRule | None = None) -> RepairResult:
    """Fix every derivable problem ``check`` reports; returns what was done and what is left.
    ``times``: read videos' missing recording starts with this rule even if nothing else is wrong (a
    memory made before recording times gains its day and week layer in any case)."""
    say = progress or (lambda _: None)
    before = integrity.check(memory, deep=True)
    result = RepairResult()
    upgrade = times is not None or (not before.pending and layer_missing(read_manifest(memory.path)))
    if (before.ok and not upgrade) or not (upgrade or forget_lost or any(p.repairable for p in before.problems)):
        result.after = before  # nothing repair could derive: the memory is not even opened for writing
        return result
    snapshot = RepairSnapshot.take(memory)
    try:
        if all(p.part == "times" for p in before.problems):
            upgrade_times(memory, result.done, times)
        else:
            _repair(memory, before, result, say, forget_lost, snapshot, times)
    except RepairRefused as exc:
        snapshot.restore(memory)
        result.done, result.refused = [], str(exc)
    except MemoryBusy:
        snapshot.restore(memory)
        raise
    except Exception as exc:
        snapshot.restore(memory)
        raise_if_exhausted(exc, "repairing the memory (it was put back as it was)")
        unreadable("repair failed", exc)
        raise StoreError(f"memtools repair could not finish and put the memory back as it was: "
                         f"{_plain(exc)}. Run `memtools check --memory {memory.path}` to see the damage") from exc
    except BaseException:  # Ctrl-C: put things back too, then stop
        snapshot.restore(memory)
        raise
    snapshot.forget_old()
    memory.refresh()
    result.after = before if result.refused else integrity.check(memory, deep=True)
    return result


def _plain(exc: BaseException) -> str:
    """A failure's own message when memtools wrote it in plain words; a generic one for engine text."""
    text = str(exc)
    if any(marker in text for marker in ("LanceError", "lance error", "/rustc/", ".rs:", "Runtime exception")):
        return "a table could not be written (its engine's message is in the debug log)"
    return text.splitlines()[0] if text else type(exc).__name__


def _repair(memory: MemoryParts, before: Report, result: RepairResult, say: Callable[[str], None],
            forget_lost: bool, snapshot: RepairSnapshot, times: RecordingRule | None) -> None:
    path = memory.path
    manifest = read_manifest(path)
    problems, mend = _settle_dimension(memory, manifest, before)  # may refuse: nothing has changed yet
    ready = manifest.video_totals().ready  # the manifest's sums: readable even when videos.sqlite is not
    graph_file = integrity.graph_file_name(manifest)
    if before.parts.get("graph") == "UNREADABLE":
        if not forget_lost:
            _remove_leftovers(memory, result)
            return  # nothing can be rebuilt without the graph; the report says how to get it back
        damaged = path / f"{graph_file}.damaged"
        (path / graph_file).rename(damaged)
        snapshot.moved.append((path / graph_file, damaged))
        result.done.append(f"moved the unreadable {graph_file} aside to {damaged.name}")
    if (path / graph_file).is_file() or not ready or forget_lost:
        if not (path / graph_file).is_file():
            result.done.append(f"started an empty {graph_file}")
        with memory._writing(guard=False) as kuzu:
            if mend is not None:
                _mend_dimension(memory, mend, result)
            kuzu.ensure_schema()
            rebuilt = new_catalog(memory, kuzu, before, result.done, snapshot.moved)
            _repair_graph_and_vectors(memory, kuzu, problems, result, say, forget_lost, snapshot.swaps, rebuilt)
            back = restore_images(path, kuzu, problems, result.done)
            problems += [Problem("keyframes", "images extracted again", True, vid) for vid in back]
            repair_keyframes(memory, kuzu, problems, result.done, say, snapshot.swaps)
            repair_navigation(memory, kuzu, problems, result.done, say)
            _rebuild_indexes(memory, problems, result)
            memory.manifest = read_manifest(path)
            repair_times(memory, kuzu, result.done, times or RecordingRule())
            repair_library(memory, kuzu, read_manifest(path).generation, problems, result.done)
    _remove_leftovers(memory, result)


def _settle_dimension(memory: MemoryParts, manifest: Any, before: Report) -> tuple[list[Problem], int | None]:
    """Decide, before anything changes, whether the manifest or the vectors have the wrong width. Returns the
    problems left to repair and the width to write into the manifest (None: it is right); refuses
    (``RepairRefused``) when the embedder agrees with neither."""
    problems = list(before.problems)
    needs_embedder = any(p.part in ("vectors", "entities") and not p.index_only for p in problems)
    want, name = manifest.embedder.dim, manifest.embedder.name
    try:
        table = memory.vectors_unchecked.nodes()
        have = vector_dim(table) if table is not None else None
    except Exception:  # noqa: BLE001 - an unreadable table is rebuilt whole; its width does not count
        have = None
    if not needs_embedder and have in (None, want):
        return problems, None
    try:
        made = memory.embedder.dim
    except Exception as exc:
        raise RepairRefused(f"the embedder {name} the memory was built with cannot be loaded "
                            f"({unreadable('loading the embedder failed', exc)})") from exc
    if have is not None and have != want:
        if made == have:
            return [p for p in problems if DIMENSION_TEXT not in p.text], made
        if made != want:
            raise RepairRefused(f"the manifest says the embedder {name} makes {want}-dimensional vectors, the vector "
                                f"table holds {have}-dimensional ones and the embedder makes {made}, so repair cannot "
                                "tell which is right. Open the memory with the embedder that built it, or build it "
                                "again")
    if made != want:
        raise RepairRefused(f"the embedder {name} makes {made}-dimensional vectors but the manifest says {want}, so "
                            "vectors rebuilt with it would not fit the memory. Open the memory with the embedder "
                            "that built it")
    return problems, None


def _mend_dimension(memory: MemoryParts, dim: int, result: RepairResult) -> None:
    """The embedder and the vectors agree on ``dim``: the manifest was wrong (under the write lock)."""
    manifest = read_manifest(memory.path)
    said = manifest.embedder.dim
    manifest.embedder.dim = dim
    manifest.generation += 1
    write_manifest(memory.path, manifest)
    memory.manifest = manifest
    memory.vectors_unchecked.dim = dim
    result.done.append(f"corrected the manifest: the embedder {manifest.embedder.name} makes {dim}-dimensional "
                       f"vectors, as the vector table holds (the manifest said {said})")


def _repair_graph_and_vectors(memory: MemoryParts, kuzu: GraphStore, problems: list[Problem],
                              result: RepairResult, say: Callable[[str], None], forget_lost: bool,
                              swaps: list[AsideTable], rebuilt: bool = False) -> None:
    path = memory.path
    manifest = read_manifest(path)
    in_graph = set(kuzu.video_ids())
    counts = kuzu.counts_by_video()
    entries = dict(manifest.videos.items())
    # the graph commits a video whole: one it holds that the list lacks or calls failed/building/lost is ready
    wrong = {vid: entries[vid].status if vid in entries else "" for vid in in_graph
             if vid not in entries or entries[vid].status != "ready"}
    frames = keyframe_rows(memory) if wrong else {}
    changed: dict[str, VideoEntry] = {}
    dropped: list[str] = []
    for vid, status in sorted(wrong.items()):
        video = kuzu.get(vid)
        duration = getattr(video, "duration", 0.0)
        entries[vid] = changed[vid] = VideoEntry(
            title=getattr(video, "title", ""), duration=possible_duration(duration), status="ready",
            updated_at=now(), keyframe_vectors=frames.get(vid, 0))
        if possible_duration(duration) != duration:
            result.done.append(f"listed video {vid!r} with duration 0 (unknown): its root in the graph holds "
                               f"{duration!r}, which no video lasts; import it again to give it its right duration")
        if status:
            result.done.append(f"listed video {vid!r} as ready again: the graph holds it whole (its entry said "
                               f"{status!r}; recounted from the graph)")
        elif not rebuilt:
            result.done.append(f"added video {vid!r} (found in the graph) back to the manifest")
    if rebuilt:
        result.done.append(f"listed {len(wrong)} video(s) again from the graph in a new {CATALOG}")
    lost = []
    for vid, entry in list(entries.items()):
        if entry.status == "failed" and forget_lost:
            del entries[vid]
            dropped.append(vid)
            result.done.append(f"dropped video {vid!r}, whose build had failed, from the list (build it again "
                               "to add it)")
            continue
        if entry.status != "ready" or (vid not in in_graph and not forget_lost):
            continue
        if vid not in in_graph:
            entry.status = LOST
            changed[vid] = entry
            lost.append(vid)
            result.done.append(f"marked video {vid!r} as lost (the graph does not hold it; import it again)")
            continue
        have = {k: counts.get(vid, {}).get(k, 0) for k in (*integrity.SEARCHABLE, "keyframe", "edges")}
        if {k: n for k, n in entry.counts.items() if n} != {k: n for k, n in have.items() if n}:
            if entry.counts:
                result.done.append(f"recounted video {vid!r} from the graph")
            entry.counts = have
            changed[vid] = entry
    ready = sorted(v for v, e in entries.items() if e.status == "ready" and v in in_graph)
    damage = [p for p in problems if p.part in ("vectors", "entities") and not p.index_only]
    damage += [Problem("vectors", "lost", True, vid) for vid in lost]
    if damage:
        rebuild_vectors(memory, kuzu, ready, damage, result.done, say, swaps)
    manifest.totals = manifest.catalog.edit(changed, dropped, manifest.generation + 1)
    manifest.generation += 1
    write_manifest(path, manifest)
    memory.manifest = manifest


def _rebuild_indexes(memory: MemoryParts, problems: list[Problem], result: RepairResult) -> None:
    """Drop the indexes whose files are gone and build every missing one (last: it prunes old versions)."""
    index = memory.vectors_unchecked
    tables: list[tuple[str, Any]] = [("nodes", index), ("entities", memory.entities)]
    if memory.keyframes is not None:
        tables.append(("keyframes", memory.keyframes))
    mended = []
    for name, handle in tables:
        table = handle.nodes() if name == "nodes" else handle.table()
        if table is None:
            continue
        dropped = drop_broken_indexes(table, table_folder(index, name))
        handle.finish_write()
        if dropped or any(p.index_only and (p.part == name or (name == "nodes" and p.part == "vectors"))
                          for p in problems):
            mended.append(name)
    if mended:
        result.done.append(f"rebuilt the indexes of the {' and '.join(mended)} table{'s' if len(mended) > 1 else ''}")


def _remove_leftovers(memory: MemoryParts, result: RepairResult) -> None:
    path = memory.path
    for temp in path.glob(integrity.TEMP_GLOB):
        with contextlib.suppress(OSError):
            temp.unlink()
            result.done.append(f"removed {temp.name}, left by an interrupted write")
    if (path / integrity.INTENT_FILE).exists() and leftovers.clear_stale_intent(path):
        result.done.append(f"removed {integrity.INTENT_FILE}, left by an interrupted write")
    frames = path / "frames"
    known = set(read_manifest(path).videos)
    for folder in sorted(frames.iterdir()) if frames.is_dir() else []:
        if folder.is_dir() and folder.name not in known:
            shutil.rmtree(folder, ignore_errors=True)
            result.done.append(f"removed frames/{folder.name} (a video the manifest does not list)")
