"""``memtools check`` / ``repair`` for ``videos.sqlite``, the list of videos (``memtools.store.video_catalog``).

Check: the file is there (a stat before every read and write, with the other cheap checks) and opens,
and the sums the manifest keeps match its rows. Repair: a lost or unreadable catalog (moved aside as
``videos.sqlite.damaged``) is started afresh and filled from the graph, which holds every written video
(title, duration and counts; keyframe vectors counted in the lance ``keyframes`` table). Entries of
videos the graph never held (a build that failed or is under way) cannot be derived and are gone.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from memtools.errors import MemoryDamaged
from memtools.store.manifest import MANIFEST, Manifest, read_manifest
from memtools.store.problems import Problem, Report, unreadable
from memtools.store.video_catalog import CATALOG, VideoCatalog

if TYPE_CHECKING:
    from memtools.store.parts import MemoryParts


def catalog_problems(path: Path, manifest: Manifest) -> list[Problem]:
    """``videos.sqlite``, the list of videos, must be there (a legacy manifest lists them itself)."""
    if manifest.legacy or os.path.isfile(f"{os.fspath(path)}/{CATALOG}"):
        return []
    return [Problem("catalog", f"{CATALOG} (the list of videos) is missing", True)]


def check_catalog(manifest: Manifest, report: Report) -> bool:
    """``videos.sqlite`` opens and the sums the manifest keeps match its rows; False when it cannot be read."""
    if manifest.legacy:
        report.parts["catalog"] = f"listed in {MANIFEST} (schema 1: the next write moves the list into {CATALOG})"
        return True
    if any(p.part == "catalog" for p in report.problems):
        report.parts["catalog"] = "MISSING"
        return False
    try:
        counted = manifest.catalog.recount()
        generation = manifest.catalog.generation()
    except MemoryDamaged as exc:
        unreadable(f"{CATALOG} cannot be read", exc)
        report.problems.append(Problem("catalog", f"{CATALOG} (the list of videos) cannot be read (the file is "
                                       "damaged)", True))
        report.parts["catalog"] = "UNREADABLE"
        return False
    report.parts["catalog"] = f"{CATALOG}, {counted.videos} video(s)"
    if generation <= manifest.generation and manifest.totals is not None and manifest.totals != counted:
        report.problems.append(Problem("manifest", f"the manifest's sums over the videos differ from {CATALOG} "
                                       f"({manifest.totals.rows} vs {counted.rows} searchable rows)", True))
    return True


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


def new_catalog(memory: MemoryParts, before: Report, done: list[str], moved: list[tuple[Path, Path]]) -> bool:
    """A missing or unreadable ``videos.sqlite``: move a damaged one aside and start an empty one, which
    ``_repair_graph_and_vectors`` fills from the graph. True when it did."""
    if not any(p.part == "catalog" for p in before.problems):
        return False
    path = memory.path
    if (path / CATALOG).exists():
        damaged = path / f"{CATALOG}.damaged"
        (path / CATALOG).rename(damaged)
        moved.append((path / CATALOG, damaged))
        done.append(f"moved the unreadable {CATALOG} aside to {damaged.name}")
    VideoCatalog.create(path, {}, read_manifest(path).generation)
    return True
