"""``memtools check`` and ``memtools repair`` of the time layer (``store.video_times``).

The layer is derived from the graph's video roots (``Video.recorded_at``, title, duration and
description), so check compares it with them, and repair makes it again whole:

* a memory made before recording times has neither the ``recorded_at`` column in its graph nor the
  two tables in ``videos.sqlite``. That is not damage (every tool works; no video has a recording
  time): check says so in its ``times`` line, and ``memtools repair`` adds both without touching
  anything else;
* repair also reads the recording start of every video that has none from its source file when
  that is still reachable (a sidecar ``VIDEO.recorded_at``, the container's ``creation_time``; and
  ``--recorded-at-pattern`` / ``--timezone`` given to repair), writing it onto the video's root.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from memtools.errors import MemoryDamaged, StoreError
from memtools.schema import Video
from memtools.store.catalog.time_rows import VideoTime
from memtools.store.problems import Problem, Report

if TYPE_CHECKING:
    from memtools.store.base import GraphReads, GraphStore
    from memtools.store.catalog.manifest import Manifest
    from memtools.store.catalog.parts import MemoryParts
    from memtools.wallclock import RecordingRule

CHUNK = 500  # video roots read at a time


def _roots(graph: GraphReads, ids: list[str]) -> Iterable[Video]:
    for i in range(0, len(ids), CHUNK):
        for node in graph.get_many(ids[i:i + CHUNK]).values():
            if isinstance(node, Video):
                yield node


def _time(video: Video) -> VideoTime | None:
    return VideoTime.of(video.id, video.recorded_at, video.title, video.duration, video.description or video.title)


def check_times(memory: MemoryParts, manifest: Manifest, ready: list[str], report: Report) -> None:
    """Compare the time index and the day and week nodes with the graph's video roots."""
    if manifest.legacy or not ready:
        return
    catalog = manifest.catalog
    if layer_missing(manifest):  # not damage: every tool works, no video has a recording time yet
        report.parts["times"] = ("no day/week layer yet (made before recording times): `memtools repair` adds it, "
                                 "reading recording times from the videos' files")
        return
    with memory.reading(guard=False) as graph:
        expected = {t.video_id: t for v in _roots(graph, ready) if (t := _time(v)) is not None}
    from memtools.store.catalog.video_times import TIME_COLUMNS

    try:
        held = {row[0]: VideoTime(*row) for row in catalog.times(f"SELECT {TIME_COLUMNS} FROM video_times")}
        periods = {row[0] for row in catalog.times("SELECT id FROM periods")}
    except (MemoryDamaged, StoreError, TypeError, ValueError):  # a table dropped, a row edited into nonsense
        report.parts["times"] = "UNREADABLE"
        report.problems.append(Problem("times", "the time index in videos.sqlite (tables video_times and periods) "
                                       "cannot be read: a table is missing or damaged; the day and week tools "
                                       "cannot answer", True))
        return
    wrong = sorted(vid for vid in {*expected, *held} if expected.get(vid) != held.get(vid))
    days = {t.day for t in expected.values()}
    weeks = {t.week for t in expected.values()}
    report.parts["times"] = (f"{len(expected)} video(s) with a recording time, {len(days)} day(s), "
                             f"{len(weeks)} week(s)")
    for vid in wrong[:20]:
        report.problems.append(Problem("times", f"the time index of video {vid!r} does not match its root in the "
                                       "graph", True, vid))
    if periods != days | weeks:
        missing, extra = sorted((days | weeks) - periods), sorted(periods - days - weeks)
        report.problems.append(Problem("times", f"the day and week nodes do not match the videos (missing: "
                                       f"{', '.join(missing[:5]) or 'none'}; stray: {', '.join(extra[:5]) or 'none'})",
                                       True))


def layer_missing(manifest: Manifest) -> bool:
    """Whether the memory was made before recording times (its catalog has no time tables; a catalog that
    cannot be read is damage that check reports, and repair makes the layer again after listing it)."""
    try:
        return manifest.legacy or (len(manifest.videos) > 0 and not manifest.catalog.times("SELECT 1"))
    except (MemoryDamaged, StoreError, OSError):
        return False


def repair_times(memory: MemoryParts, graph: GraphStore, done: list[str], rule: RecordingRule | None) -> None:
    """Read missing recording starts from the source files, then make the layer again whole."""
    manifest = memory.manifest
    if manifest.legacy:
        return
    ready = manifest.videos.ids("ready")
    roots = list(_roots(graph, ready))
    started = []
    if rule is not None:
        for video in roots:
            if video.recorded_at:
                continue
            start = rule.resolve(video.source_path or None, video.id)
            if start is not None and _set_start(graph, video.id, start):
                video.recorded_at = start
                started.append(video.id)
    refresh = getattr(graph, "refresh_navigation", None)  # each navigation outline holds its video's root
    if started and refresh is not None:
        refresh(started)
    found = len(started)
    times = {t.video_id: t for v in roots if (t := _time(v)) is not None}
    manifest.catalog.remake_times(times)
    days = len({t.day for t in times.values()})
    read = f" (read {found} from their source files)" if found else ""
    done.append(f"made the time layer again: {len(times)} video(s) with a recording time{read}, {days} day node(s)")


def upgrade_times(memory: MemoryParts, done: list[str], rule: RecordingRule | None) -> None:
    """Repair of the time layer alone: the graph's column added, the layer made again."""
    from memtools.wallclock import RecordingRule

    with memory._writing(guard=False) as graph:
        graph.ensure_schema()
        repair_times(memory, graph, done, rule or RecordingRule())


def _set_start(graph: GraphStore, video_id: str, start: str) -> bool:
    """Write a recording start onto a video's root (False: this graph store cannot)."""
    run = getattr(graph, "_run", None)  # KuzuGraph (both engines): the one Cypher entry point
    if run is None:
        return False
    graph.begin()
    try:
        run("MATCH (v:Video {id: $id}) SET v.recorded_at = $at", {"id": video_id, "at": start})
    except BaseException:
        graph.rollback()
        raise
    graph.commit()
    return True
