"""What ``memtools repair --speakers`` and ``--faces`` share: each ready video read back whole, one line said per video.

    say = Lines(progress)
    for vid, stored in stored_videos(memory, video_ids, say):
        ...
        say(f"{vid}: done")
    return say.lines
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from memtools.schema import VideoGraph
from memtools.store import Memory


class Lines:
    """Collects the lines a repair says, and hands each to ``progress`` as it comes."""

    def __init__(self, progress: Callable[[str], None] | None = None) -> None:
        self.lines: list[str] = []
        self.progress = progress

    def __call__(self, line: str) -> None:
        self.lines.append(line)
        if self.progress is not None:
            self.progress(line)


def stored_videos(memory: Memory, video_ids: Sequence[str] | None, say: Callable[[str], None]
                  ) -> Iterator[tuple[str, VideoGraph]]:
    """Each video (``video_ids``, or every ready one) as the graph holds it; one the graph lacks is said and skipped."""
    for vid in list(video_ids) if video_ids is not None else memory.manifest.videos.ids(status="ready"):
        with memory.reading() as graph:
            stored = graph.video_graph(vid)
        if stored is None:
            say(f"{vid}: not in the graph; nothing to do")
            continue
        yield vid, stored
