"""Shared by the agent, LangChain-tool and ask/eval tests: small real memories.

``kitchen_memory`` writes the hand-made kitchen video (``memtools.testing.kitchen_graph``)
into a real kuzu + lance memory with the hashing TestEmbedder; ``frames=True`` adds two
stored keyframes (real JPEGs) so ``inspect_frames`` returns images; ``extra_videos`` adds
more videos so scope handling is exercised.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

import cv2
import numpy as np

from memtools.embed import TestEmbedder
from memtools.schema import Keyframe, keyframe_id, macro_id
from memtools.store import Memory
from memtools.testing import kitchen_graph

QUESTION = "How does the cook put out the pan fire?"
OPTIONS = {"A": "pours water on it", "B": "covers the pan with a metal lid", "C": "uses a fire extinguisher",
           "D": "throws a towel over it"}


def _jpeg(path: Path, seed: int) -> str:
    rng = np.random.default_rng(seed)
    image = rng.integers(0, 255, size=(48, 64, 3), dtype=np.uint8)
    ok, data = cv2.imencode(".jpg", image)
    assert ok
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.tobytes())
    return path.name


_templates: dict[tuple[bool, tuple[str, ...]], Path] = {}


def kitchen_memory(folder: Path, *, frames: bool = True, extra_videos: tuple[str, ...] = ("garage",)) -> Memory:
    """An open memory at ``folder``: built once per process and kind, then copied (creating a
    kuzu database takes seconds; copying a closed one takes milliseconds)."""
    key = (frames, tuple(extra_videos))
    if key not in _templates:
        root = Path(tempfile.mkdtemp(prefix="memtools-agent-tests-"))
        atexit.register(shutil.rmtree, root, True)
        _build(root / "mem", frames=frames, extra_videos=extra_videos).close()
        _templates[key] = root / "mem"
    shutil.copytree(_templates[key], folder)
    return Memory.open(folder)


def _build(folder: Path, *, frames: bool, extra_videos: tuple[str, ...]) -> Memory:
    memory = Memory.create(folder, TestEmbedder(64))
    graph = kitchen_graph("kitchen")
    if frames:
        for n, t in enumerate((250.0, 265.0), 1):
            rel = f"frames/kitchen/{int(t):06d}.jpg"
            _jpeg(folder / rel, n)
            graph.keyframes.append(Keyframe(id=keyframe_id("kitchen", n), video_id="kitchen", t=t, path=rel,
                                            macro_id=macro_id("kitchen", 2)))
        graph.check()
    memory.write_videos([graph, *(kitchen_graph(v) for v in extra_videos)])
    return memory
