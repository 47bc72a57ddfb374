"""Resources: the video list, each video's summary, and frames as JPEG (the links ``inspect_frames`` returns)."""

from __future__ import annotations

import math
from typing import Any

import anyio.to_thread

from memtools.mcp import uris
from memtools.mcp.adapter import ToolsProvider, resource_errors
from memtools.mcp.limits import cap_text
from memtools.mcp.sdk import ResourceNotFoundError
from memtools.tools import MemoryTools
from memtools.tools.provider import held

FRAME_WINDOW = 0.01
"""Seconds after ``t`` searched for the frame a ``frames/{t}`` URI names."""


def register_resources(server: Any, tools: ToolsProvider) -> None:
    """Add the resources to the SDK's server; each reads the memory on a worker thread (on both SDK majors)."""

    @server.resource(uris.VIDEOS, name="videos", title="Videos in this memory", mime_type="application/json",
                     description="Every video in the memory: id, title, duration, build status and node counts.")
    async def videos() -> str:
        return await anyio.to_thread.run_sync(_videos, tools)

    @server.resource(uris.SUMMARY, name="video_summary", title="Video summary", mime_type="text/plain",
                     description="Overview of one video: title, description, themes, key entities and its super "
                                 "events with time ranges (the same text as the get_summary tool).")
    async def summary(video_id: str) -> str:
        return await anyio.to_thread.run_sync(_summary, tools, video_id)

    @server.resource(uris.KEYFRAME, name="keyframe", title="Keyframe", mime_type="image/jpeg",
                     description="A keyframe stored in the memory, by id: keyframe 'kitchen/kf_0001' is "
                                 "memtools://videos/kitchen/keyframes/kf_0001. inspect_frames returns these links.")
    async def keyframe(video_id: str, name: str) -> bytes:
        return await anyio.to_thread.run_sync(_keyframe, tools, video_id, name)

    @server.resource(uris.FRAME, name="frame", title="Frame at a time", mime_type="image/jpeg",
                     description="The frame shown at t seconds, decoded from the source video (or a stored "
                                 "keyframe at that time), e.g. memtools://videos/kitchen/frames/130.000.")
    async def frame(video_id: str, t: str) -> bytes:
        return await anyio.to_thread.run_sync(_frame, tools, video_id, t)


def _videos(tools: ToolsProvider) -> str:
    with resource_errors():
        with held(tools) as current:
            return current.list_videos().model_dump_json(indent=1)


def _summary(tools: ToolsProvider, video_id: str) -> str:
    with resource_errors():
        with held(tools) as current:
            return cap_text(current.get_summary(video_id).render())


def _keyframe(tools: ToolsProvider, video_id: str, name: str) -> bytes:
    with resource_errors():
        with held(tools) as current:
            return current.keyframe(f"{video_id}/{name}")


def _frame(tools: ToolsProvider, video_id: str, t: str) -> bytes:
    with resource_errors():
        with held(tools) as current:
            return read_frame(current, video_id, t)


def read_frame(tools: MemoryTools, video_id: str, t: str) -> bytes:
    try:
        seconds = float(t)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0:
        raise ResourceNotFoundError(f"frame time {t!r} is not a number of seconds >= 0, e.g. .../frames/130.000")
    frames = tools.inspect_frames(video_id, seconds, seconds + FRAME_WINDOW, 1)
    if not frames.images:
        raise ResourceNotFoundError(frames.note or f"no frame of {video_id!r} at {seconds:.3f} s")
    return frames.images[0]
