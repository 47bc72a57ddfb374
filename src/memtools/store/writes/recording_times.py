"""What a write records of its videos' recording starts (``memtools.wallclock``, ``store.video_times``).

The journal's entry of each video carries, beside its ``VideoEntry`` fields, ``recorded_at`` (the
start, or None) and ``root`` (the description of its video root), so a roll-forward remakes the same
time rows and day and week nodes as the write would have.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memtools.store.catalog.time_rows import VideoTime
from memtools.store.catalog.video_times import time_of_entry

if TYPE_CHECKING:
    from memtools.schema import VideoGraph
    from memtools.store.catalog.cells import VideoEntry
    from memtools.wallclock import RecordingRule


def stamp_times(graphs: Sequence[VideoGraph], rule: RecordingRule) -> None:
    """Give each video the recording start ``rule`` finds for it (a start the graph states comes
    after ``--recorded-at`` and before a sidecar, the file name and the container's metadata).

    Runs before a write changes anything: a start the store cannot hold with the video's duration
    (``memtools.wallclock.check_span``) is a ``WallClockError`` here, so no write begins with it."""
    for graph in graphs:
        video = graph.video
        found = rule.resolve(video.source_path or None, video.id, video.recorded_at, video.duration)
        if found != video.recorded_at:
            graph.video = video.model_copy(update={"recorded_at": found})


def root_text(graph: VideoGraph) -> str:
    return graph.video.description or graph.video.title


def time_entries(graphs: Sequence[VideoGraph], entries: Mapping[str, VideoEntry]) -> dict[str, dict[str, Any]]:
    """The journal's entries: each ``VideoEntry`` with the video's ``recorded_at`` and ``root``."""
    return {g.video_id: {**entries[g.video_id].model_dump(), "recorded_at": g.video.recorded_at,
                         "root": root_text(g)} for g in graphs}


def times_of(journaled: Mapping[str, Mapping[str, Any]]) -> dict[str, VideoTime | None]:
    return {vid: time_of_entry(vid, entry) for vid, entry in journaled.items()}
