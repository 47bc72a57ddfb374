"""Helpers for the build tests: small generated videos and a full text dump of a memory."""

from __future__ import annotations

from pathlib import Path

from memtools.embed import TestEmbedder
from memtools.store import Memory
from memtools.tools import MemoryTools
from synthetic_video import scene, write_video


def scenes_video(path: Path, *, seconds: int = 100, scene_sec: int = 20, fps: int = 5) -> Path:
    """A 160x120 video whose picture changes to a new scene every ``scene_sec`` seconds."""
    frames = [scene(i // (scene_sec * fps)) for i in range(seconds * fps)]
    return write_video(path, frames, fps=fps)


def dump_memory(path: Path) -> str:
    """Everything the tools show of every video: the summary, every super and macro event,
    every subgraph and every node's relations, rendered. Two memories with the same dump hold
    the same graph."""
    out: list[str] = []
    with Memory.open(path, TestEmbedder(64)) as memory:
        tools = MemoryTools(memory)
        for video in tools.list_videos().videos:
            vid = video.video_id
            out.append(tools.get_summary(vid).render())
            supers = tools.get_super_events(vid)
            out.append(supers.render())
            for sup in supers.supers:
                out.append(tools.get_relations(sup.id).render())
                macros = tools.get_macro_events(super_id=sup.id)
                out.append(macros.render())
                for macro in macros.macros:
                    out.append(tools.get_relations(macro.id).render())
                    sub = tools.get_subgraph(macro.id)
                    out.append(sub.render())
                    for node in [*sub.entities, *sub.events, *sub.ocr, *sub.speech]:
                        out.append(tools.get_relations(node.id).render())
            frames = tools.inspect_frames(vid, 0, video.duration, max_frames=16)
            out.append(repr([(f.t, f.keyframe_id, f.path) for f in frames.frames]))
    return "\n".join(out)
