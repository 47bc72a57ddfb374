"""``memtools check`` / ``repair`` for the navigation rows (``store/graph/rows.py``).

Check: every ready video the graph holds has one ``VideoOutline`` row, one ``MacroDetail`` row
per macro event and one ``NodeEdges`` row per node (in ``navigation.sqlite``, or in kuzu's own
tables for a video written before it), no video the memory does not list has any, and
``navigation.sqlite`` can be read. Every such problem is repairable: an unreadable file is moved
aside, and each video is read back from the graph and its rows are written again, in one
transaction per batch of videos. A memory written before these rows existed shows every video as
lacking them; its tools still answer (with slower queries) until ``memtools repair`` adds them.
``memtools check --deep`` also compares every row's content with its video's graph (``derived_check``);
repair then writes every video's rows again. A file SQLite cannot read whole, or a folder in its place,
is set aside (``navigation.sqlite.damaged``) and made again.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from memtools.store.catalog.manifest import read_manifest
from memtools.store.graph.cypher import KuzuGraph
from memtools.store.graph.navigation import NAVIGATION
from memtools.store.graph.rows import DERIVED, expected_counts
from memtools.store.problems import Problem, Report

if TYPE_CHECKING:
    from memtools.store.base import GraphStore
    from memtools.store.catalog.manifest import Manifest
    from memtools.store.catalog.parts import MemoryParts

PART = "navigation"
EXAMPLES = 3  # videos named one by one; the rest are counted in one line
VIDEOS_PER_WRITE = 50
UNREADABLE = f"{NAVIGATION} cannot be read"  # the start of a problem after which repair sets the file aside
DIFFER = "differ from what the graph gives"  # a --deep problem: repair writes every video's rows again


def _compare(g: KuzuGraph, ready: list[str]) -> tuple[list[str], list[str], dict[str, dict[str, int]]]:
    """(ready videos whose rows are missing or miscounted, videos with rows that are not ready, rows per video)."""
    have = g.derived_counts()
    counts = g.counts_by_video()
    in_graph = set(g.video_ids())
    wrong = []
    for vid in ready:
        if vid not in in_graph:
            continue  # a video the graph lost: the graph check reports it
        want = expected_counts({k: v for k, v in counts.get(vid, {}).items() if k != "edges"})
        if any(have.get(vid, {}).get(name, 0) != want[name] for name in DERIVED):
            wrong.append(vid)
    return wrong, sorted(set(have) - set(ready)), have


def check_navigation(memory: MemoryParts, manifest: Manifest, ready: list[str], report: Report) -> None:
    file = memory.path / NAVIGATION
    if file.exists() and not file.is_file():
        report.parts[PART] = f"{NAVIGATION} is not a file"
        report.problems.append(Problem(PART, f"{UNREADABLE}: a folder, not a file, is in its place; navigation tools "
                                       "fall back to slower queries", True))
        return
    with memory.reading(guard=False) as g:
        if not isinstance(g, KuzuGraph):  # the rows belong to the kuzu/ladybug engine; another has its own
            return
        try:
            wrong, stale, have = _compare(g, ready)
        except sqlite3.Error as exc:
            report.parts[PART] = f"{NAVIGATION} cannot be read"
            report.problems.append(Problem(PART, f"{UNREADABLE} ({exc}); navigation tools fall back to slower "
                                           "queries", True))
            return
    report.parts[PART] = f"{len(ready) - len(wrong)} of {len(ready)} video(s) have their navigation rows"
    for vid in wrong[:EXAMPLES]:
        got = ", ".join(f"{name} {have.get(vid, {}).get(name, 0)}" for name in DERIVED)
        report.problems.append(Problem(PART, f"{vid}: navigation rows missing or out of step with the graph "
                                       f"({got}); navigation tools fall back to slower queries", True, vid))
    if len(wrong) > EXAMPLES:
        report.problems.append(Problem(PART, f"{len(wrong) - EXAMPLES} more video(s) lack navigation rows "
                                       "(a memory written by an older memtools has none)", True))
    for vid in stale:
        report.problems.append(Problem(PART, f"navigation rows of video {vid!r}, which is not a ready video of "
                                       "this memory", True, vid))


def repair_navigation(memory: MemoryParts, kuzu: GraphStore, problems: list[Problem], done: list[str],
                      say: Callable[[str], None]) -> None:
    """Write the navigation rows of every video lacking them again, from the graph; drop stale ones.
    Compared again whatever the check found: an earlier step of the repair may have changed the graph."""
    if not isinstance(kuzu, KuzuGraph):
        return
    manifest = read_manifest(memory.path)
    ready = sorted(v for v, e in manifest.videos.items() if e.status == "ready")
    file = memory.path / NAVIGATION
    if (file.exists() and not file.is_file()) or any(p.part == PART and p.text.startswith(UNREADABLE)
                                                     for p in problems):
        _set_aside(kuzu, file, done)
    try:
        todo, stale, _ = _compare(kuzu, ready)
    except sqlite3.Error:
        _set_aside(kuzu, file, done)
        todo, stale, _ = _compare(kuzu, ready)
    if any(p.part == PART and DIFFER in p.text for p in problems):
        in_graph = set(kuzu.video_ids())
        todo = sorted({*todo, *(v for v in ready if v in in_graph)})
    for start in range(0, max(len(todo), len(stale)), VIDEOS_PER_WRITE):
        chunk, gone = todo[start:start + VIDEOS_PER_WRITE], stale[start:start + VIDEOS_PER_WRITE]
        kuzu.begin()  # the rows kuzu's own tables kept for these videos (memories written before the file)
        try:
            kuzu.delete_derived([*chunk, *gone])
        except BaseException:
            kuzu.rollback()
            raise
        kuzu.commit()
        kuzu.store_navigation(gone, [g for g in map(kuzu.video_graph, chunk) if g is not None])
        say(f"navigation rows: {min(start + VIDEOS_PER_WRITE, len(todo))}/{len(todo)} video(s)")
    if todo:
        done.append(f"wrote the navigation rows of {len(todo)} video(s) again from the graph")
    if stale:
        done.append(f"removed the navigation rows of {len(stale)} video(s) the memory does not hold")


def _set_aside(kuzu: KuzuGraph, file: Path, done: list[str]) -> None:
    """Move a file SQLite cannot read (or a folder in its place) to ``navigation.sqlite.damaged``, an older one
    going first, so the rows are written into a new file."""
    kuzu.navigation.close()
    aside = file.with_name(f"{NAVIGATION}.damaged")
    if aside.is_dir() and not aside.is_symlink():
        shutil.rmtree(aside)
    aside.unlink(missing_ok=True)
    if file.exists() or file.is_symlink():
        os.replace(file, aside)
    file.with_name(f"{NAVIGATION}-journal").unlink(missing_ok=True)
    done.append(f"moved the unreadable {NAVIGATION} aside ({aside.name}); its rows are written again from the graph")
