"""``memtools check`` / ``repair`` for ``videos.sqlite``, the list of videos (``memtools.store.catalog.videos``).

Check: the file is there (a stat before every read and write, with the other cheap checks) and opens,
it uses the rollback journal (not WAL), its generation is the manifest's (one ahead only while a
write's journal is there), its kept totals match its rows, every cell holds what its column should and
each row's own sums match its cells, no duration is one a video cannot have (not a finite number of seconds
from 0 to ten years, ``LONGEST``), and the sums the manifest keeps match its rows. A video the graph
holds whole that the list calls ``failed``, ``building`` or ``lost`` is the list's mistake, not data to
delete (``graph_held``): check compares its rows like a ready video's, and repair lists it as ready again.

Repair: a lost or unreadable catalog (moved aside as ``videos.sqlite.damaged``) is started afresh and
filled from the graph, which holds every written video (title, duration and counts; keyframe vectors
counted in the lance ``keyframes`` table). Entries of videos the graph never held (a build that failed
or is under way) cannot be derived and are gone. A catalog whose cells, generation, totals or journal
mode are wrong is written again whole from its sound cells (``rebuild_catalog``); an entry with a
damaged cell (or an impossible duration) that the graph holds is listed again from the graph, with the
graph's duration (0, unknown, when the graph's is impossible too: repair then says to import it again).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING

from memtools.errors import MemoryDamaged, StoreError
from memtools.store.catalog.cells import VideoEntry, VideoTotals, cell_fault, contributions, entry_of, lenient_entry
from memtools.store.catalog.manifest import MANIFEST, Manifest, read_manifest
from memtools.store.catalog.videos import CATALOG, VideoCatalog
from memtools.store.problems import Problem, Report, unreadable
from memtools.store.resources import raise_if_exhausted

if TYPE_CHECKING:
    from memtools.store.base import GraphStore
    from memtools.store.catalog.parts import MemoryParts

SOUND_PARTS = ("MISSING", "UNREADABLE")  # report.parts["catalog"] of a file repair starts afresh
LONGEST = 315_576_000.0
"""Ten years of 365.25 days, in seconds: no recording lasts longer, so a longer duration is a damaged value
(as are infinity and a negative one); it would throw every time window and sum it enters."""


def duration_fault(value: object) -> str | None:
    """Why a duration cell cannot be a video's (None: it can, or it is no number: ``cell_fault`` says so)."""
    if type(value) not in (int, float):
        return None
    number = float(value)  # type: ignore[arg-type]
    if not math.isfinite(number) or number < 0:
        return "not a finite number of seconds"
    return "longer than ten years, which no video lasts" if number > LONGEST else None


def possible_duration(value: float) -> float:
    """``value``, or 0 (unknown) when no video can last that long."""
    return 0.0 if duration_fault(value) else value


def catalog_problems(path: Path, manifest: Manifest) -> list[Problem]:
    """``videos.sqlite``, the list of videos, must be there (a legacy manifest lists them itself)."""
    if manifest.legacy or os.path.isfile(f"{os.fspath(path)}/{CATALOG}"):
        return []
    return [Problem("catalog", f"{CATALOG} (the list of videos) is missing", True)]


def catalog_write_problems(manifest: Manifest, pending: bool) -> list[Problem]:
    """Before a write (two small reads): the catalog uses the rollback journal and is at the manifest's
    generation (one ahead only when a killed write's journal is there to finish: ``pending``)."""
    if manifest.legacy:
        return []
    catalog = manifest.catalog
    problems = [Problem("catalog", _WAL, True)] if catalog.wal() else []
    try:
        generation = catalog.generation()
    except MemoryDamaged:
        return [*problems, Problem("catalog", _NO_GENERATION, True)]
    if _generation_wrong(generation, manifest.generation, pending):
        problems.append(Problem("catalog", _generation_text(generation, manifest.generation), True))
    return problems


def _generation_wrong(generation: int, manifest_generation: int, pending: bool) -> bool:
    """``pending``: a write's journal is there (a write between its catalog and its manifest)."""
    return generation != manifest_generation and not (pending and generation == manifest_generation + 1)


def _generation_text(generation: int, manifest_generation: int) -> str:
    return (f"{CATALOG} is at generation {generation} but the manifest at {manifest_generation} (the next write "
            "would skip its list of videos)")


_WAL = (f"{CATALOG} is in WAL mode; it must use the rollback journal (so that the one file is a whole copy of "
        "the list)")
_NO_GENERATION = f"{CATALOG}'s generation (table meta) is missing or not a number"


def check_catalog(manifest: Manifest, report: Report, pending: bool = False) -> bool:
    """``videos.sqlite`` opens and the sums the manifest keeps match its rows; False when it cannot be read."""
    if manifest.legacy:
        report.parts["catalog"] = f"listed in {MANIFEST} (schema 1: the next write moves the list into {CATALOG})"
        return True
    if any(p.part == "catalog" for p in report.problems):
        report.parts["catalog"] = "MISSING"
        return False
    catalog = manifest.catalog
    try:
        rows = catalog.raw_rows()
    except MemoryDamaged as exc:
        unreadable(f"{CATALOG} cannot be read", exc)
        report.problems.append(Problem("catalog", f"{CATALOG} (the list of videos) cannot be read (the file is "
                                       "damaged)", True))
        report.parts["catalog"] = "UNREADABLE"
        return False
    found, readable, generation = cell_problems(catalog, rows, manifest.generation, pending)
    report.problems += [Problem("catalog", text, True) for text in found]
    report.parts["catalog"] = f"{CATALOG}, {len(rows)} video(s)" + ("" if readable else " (DAMAGED CELLS)")
    if not readable:
        return False  # entries cannot be read: repair writes the file again from its sound cells
    counted = VideoTotals.of(entry_of(row[0], row[1:7]) for row in rows)
    if generation is not None and generation <= manifest.generation and manifest.totals is not None \
            and manifest.totals != counted:
        name = next(k for k, n in counted if getattr(manifest.totals, k) != n)
        report.problems.append(Problem("manifest", f"the manifest's sums over the videos differ from {CATALOG} "
                                       f"({name}: {getattr(manifest.totals, name)} vs {getattr(counted, name)})",
                                       True))
    return True


def cell_problems(catalog: VideoCatalog, rows: list[tuple], manifest_generation: int,
                  pending: bool) -> tuple[list[str], bool, int | None]:
    """What is wrong inside ``videos.sqlite`` (each a line naming the cell), whether every entry can be
    read, and its generation (None: unreadable). Rows: ``VideoCatalog.raw_rows``; ``pending``: a
    write's journal is there."""
    found = [_WAL] if catalog.wal() else []
    generation = totals = None
    try:
        generation = catalog.generation()
    except MemoryDamaged:
        found.append(_NO_GENERATION)
    try:
        totals = catalog.totals()
    except MemoryDamaged:
        found.append(f"{CATALOG}'s kept totals (table totals) are missing or not numbers")
    if generation is not None and _generation_wrong(generation, manifest_generation, pending):
        found.append(_generation_text(generation, manifest_generation))
    readable, kept_sums = True, [0] * 5
    for row in rows:
        vid, cells, kept = row[0], row[1:7], row[7:]
        fault = cell_fault(cells)
        if fault is not None:
            readable = False
            found.append(f"the entry of video {vid!r} is damaged ({fault})")
        elif (why := duration_fault(cells[1])) is not None:
            found.append(f"the entry of video {vid!r} is damaged (column duration holds {cells[1]!r}: {why})")
        elif tuple(kept) != contributions(entry_of(vid, cells)):
            found.append(f"the entry of video {vid!r} is out of step with its own sums (its status says "
                         f"{cells[2]!r} but it is counted as {'ready' if kept[1] == 1 else 'not ready'})")
        kept_sums = [a + (b if isinstance(b, int) else 0) for a, b in zip(kept_sums, kept, strict=True)]
    if totals is not None and (totals.videos, *totals.model_dump(exclude={"videos"}).values()) \
            != (len(rows), *kept_sums):
        found.append(f"{CATALOG}'s kept totals differ from its rows ({totals.rows} vs {kept_sums[0]} searchable "
                     f"rows, {totals.videos} vs {len(rows)} videos)")
    return found, readable, generation


def graph_held(memory: MemoryParts, manifest: Manifest, report: Report, graph_file: str) -> list[str]:
    """Videos the graph (``graph_file``) holds that the list calls ``failed``, ``building`` or ``lost``, or
    does not list: the graph commits a video whole, so the list is wrong, and their rows are compared,
    not deleted."""
    if not (memory.path / graph_file).is_file():
        return []
    try:
        with memory.reading(guard=False) as g:
            in_graph = set(g.video_ids())
    except (StoreError, MemoryDamaged) as exc:
        raise_if_exhausted(exc, "checking the graph")
        return []  # the graph check reports it
    held = []
    for status in ("failed", "building", "lost"):
        for vid in manifest.videos.ids(status):
            if vid in in_graph:
                held.append(vid)
                report.problems.append(Problem(
                    "videos", f"video {vid!r} is listed as {status} but the graph holds it whole (its entry in "
                    f"{CATALOG} is wrong: repair lists it as ready again, counted from the graph)", True, vid))
    return sorted({*held, *(in_graph - set(manifest.videos.ids()))})


def keyframe_rows(memory: MemoryParts) -> dict[str, int]:
    """Keyframe vectors per video in the lance ``keyframes`` table (for entries listed again); {} if unreadable."""
    from collections import Counter

    keyframes = memory.keyframes
    try:
        table = keyframes.table() if keyframes is not None else None
        if table is None:
            return {}
        return dict(Counter(table.search().select(["video_id"]).limit(None).to_arrow().column("video_id").to_pylist()))
    except Exception:  # noqa: BLE001 - an unreadable table is check's and repair_keyframes' to report and rebuild
        return {}


def new_catalog(memory: MemoryParts, kuzu: GraphStore, before: Report, done: list[str],
                moved: list[tuple[Path, Path]]) -> bool:
    """A missing or unreadable ``videos.sqlite``: move a damaged one aside and start an empty one, which
    ``_repair_graph_and_vectors`` fills from the graph. True when it did. A readable one with damaged
    cells, generation, totals or journal mode is written again whole (``rebuild_catalog``)."""
    if not any(p.part == "catalog" for p in before.problems):
        return False
    if before.parts.get("catalog") not in SOUND_PARTS:
        rebuild_catalog(memory, kuzu, done)
        return False
    path = memory.path
    if (path / CATALOG).exists():
        damaged = path / f"{CATALOG}.damaged"
        (path / CATALOG).rename(damaged)
        moved.append((path / CATALOG, damaged))
        done.append(f"moved the unreadable {CATALOG} aside to {damaged.name}")
    VideoCatalog.create(path, {}, read_manifest(path).generation)
    return True


def rebuild_catalog(memory: MemoryParts, kuzu: GraphStore, done: list[str]) -> None:
    """Write ``videos.sqlite`` again whole, at the manifest's generation, in the rollback journal, from
    the sound cells of its rows; an entry with a damaged cell that the graph holds is left out, so that
    ``_repair_graph_and_vectors`` lists it again from the graph (a damaged status of one it does not hold
    reads ``failed``)."""
    path = memory.path
    in_graph = set(kuzu.video_ids())
    read = {row[0]: _lenient(row[1:7]) for row in memory.manifest.catalog.raw_rows()}
    entries = {vid: entry for vid, (entry, damaged) in read.items() if not (damaged and vid in in_graph)}
    VideoCatalog.create(path, entries, read_manifest(path).generation)
    for stale in (f"{CATALOG}-wal", f"{CATALOG}-shm"):  # a WAL file's leftovers must not touch the new file
        (path / stale).unlink(missing_ok=True)
    damaged = sum(d for _, d in read.values())
    done.append(f"wrote {CATALOG} again from its rows (its generation, totals and journal mode set right"
                + (f"; {damaged} entry(ies) with a damaged cell taken from the graph or their sound cells)" if damaged
                   else ")"))


def _lenient(cells: tuple) -> tuple[VideoEntry, bool]:
    """``lenient_entry``, an impossible duration counted as a damaged cell (0: the graph gives it again)."""
    entry, damaged = lenient_entry(cells)
    if duration_fault(cells[1]) is not None:
        entry.duration, damaged = 0.0, True
    return entry, damaged
