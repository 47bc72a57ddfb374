"""The ``memtools://`` resource URIs.

Keyframe ids contain a '/' (``kitchen/kf_0001``), so they are split into the video id and the
keyframe's own name rather than put into one URI segment::

    memtools://videos                               the video list (JSON)
    memtools://videos/kitchen/summary               one video's overview (text)
    memtools://videos/kitchen/keyframes/kf_0001     a stored keyframe (JPEG)
    memtools://videos/kitchen/frames/130.000        the frame shown at 130 s, decoded from the source video (JPEG)
"""

from __future__ import annotations

VIDEOS = "memtools://videos"
SUMMARY = "memtools://videos/{video_id}/summary"
KEYFRAME = "memtools://videos/{video_id}/keyframes/{name}"
FRAME = "memtools://videos/{video_id}/frames/{t}"


def summary_uri(video_id: str) -> str:
    return SUMMARY.format(video_id=video_id)


def keyframe_uri(keyframe_id: str) -> str:
    video_id, _, name = keyframe_id.partition("/")
    return KEYFRAME.format(video_id=video_id, name=name)


def frame_uri(video_id: str, t: float) -> str:
    return FRAME.format(video_id=video_id, t=f"{t:.3f}")
