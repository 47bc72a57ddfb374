"""``inspect_frames``: frames of a time window, decoded from the source video when it is still
reachable, else the keyframes stored in the memory folder."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from memtools.errors import VideoError
from memtools.schema import Keyframe, MacroEvent, Video
from memtools.tools.frame_results import FrameItem, Frames
from memtools.tools.text import span

log = logging.getLogger(__name__)


def _spread(items: Sequence, n: int) -> list:
    """Up to n items evenly spread over the sequence, first and last included."""
    if len(items) <= n:
        return list(items)
    step = (len(items) - 1) / (n - 1) if n > 1 else 0
    return [items[round(i * step)] for i in range(n)]


def _macro_at(macros: Sequence[MacroEvent], t: float) -> MacroEvent | None:
    for m in macros:
        if m.t_start <= t <= m.t_end:
            return m
    return None


def inspect_window(memory_path: Path, video: Video, keyframes: Sequence[Keyframe], macros: Sequence[MacroEvent],
                   start: float, end: float, max_frames: int) -> Frames:
    end = min(end, video.duration) if video.duration else end
    chosen = _spread(keyframes, max_frames)
    if chosen:
        times = [k.t for k in chosen]
    else:
        n = max_frames
        times = [start + (end - start) * (i + 0.5) / n for i in range(n)]
    items: list[FrameItem] = []
    images: list[bytes] = []
    source = Path(video.source_path) if video.source_path else None
    if source is not None and source.is_file():
        try:
            from memtools.video import encode_jpeg, read_frame_at

            for t in times:
                frame = read_frame_at(source, t)
                macro = _macro_at(macros, frame.t)
                images.append(encode_jpeg(frame.image))
                items.append(FrameItem(t=frame.t, macro_id=macro.id if macro else "",
                                       macro_label=macro.label if macro else "", source="video"))
            return Frames(video_id=video.id, start_sec=start, end_sec=end, frames=items, images=images)
        except VideoError as exc:
            log.warning("decoding %s failed, falling back to stored keyframes: %s", source, exc)
            items, images = [], []
    for k in chosen:
        path = Path(memory_path) / k.path
        if not path.is_file():
            continue
        macro = _macro_at(macros, k.t)
        images.append(path.read_bytes())
        items.append(FrameItem(t=k.t, macro_id=macro.id if macro else (k.macro_id or ""),
                               macro_label=macro.label if macro else "", source="keyframe",
                               keyframe_id=k.id, path=k.path))
    note = ""
    if not items:
        where = (f"the source video {video.source_path} is not reachable" if video.source_path
                 else "it has no source video")
        note = (f"The memory has no keyframes for {span(start, end)} and {where}; "
                "use get_subgraph / search_by_time for the text memory of this window.")
    return Frames(video_id=video.id, start_sec=start, end_sec=end, frames=items, images=images, note=note)
