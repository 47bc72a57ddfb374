"""Memories with coloured keyframes, for the visual-search tests.

``coloured_graph`` is the kitchen graph plus one keyframe per macro event, each a flat
colour (red, green, blue by default) written as a real JPEG into the memory folder, so an
image embedder sees real image files.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from memtools.ontology import keyframe_id
from memtools.schema import Edge, EdgeCategory, Keyframe, VideoGraph
from memtools.testing import kitchen_graph

BGR = {"red": (0, 0, 255), "green": (0, 255, 0), "blue": (255, 0, 0), "yellow": (0, 255, 255)}


def colour_jpeg(colour: str, size: int = 64, square: bool = False) -> bytes:
    """A JPEG of one colour; ``square``: a coloured square on a grey background."""
    image = np.full((size, size, 3), 128 if square else BGR[colour], dtype=np.uint8)
    if square:
        image[size // 4: 3 * size // 4, size // 4: 3 * size // 4] = BGR[colour]
    ok, data = cv2.imencode(".jpg", image)
    assert ok
    return data.tobytes()


def coloured_graph(memory_path: Path, video_id: str = "kitchen",
                   colours: tuple[str, ...] = ("red", "green", "blue")) -> VideoGraph:
    """The kitchen graph with keyframe i (at the middle of macro i) coloured ``colours[i]``."""
    graph = kitchen_graph(video_id)
    folder = Path(memory_path) / "frames" / video_id
    folder.mkdir(parents=True, exist_ok=True)
    for n, (macro, colour) in enumerate(zip(graph.macros, colours, strict=False), 1):
        t = (macro.t_start + macro.t_end) / 2
        relative = f"frames/{video_id}/{t:010.3f}.jpg"
        (Path(memory_path) / relative).write_bytes(colour_jpeg(colour, square=True))
        kid = keyframe_id(video_id, n)
        graph.keyframes.append(Keyframe(id=kid, video_id=video_id, t=t, path=relative, macro_id=macro.id))
        graph.edges.append(Edge(source=kid, target=macro.id, category=EdgeCategory.GROUNDING, label="DEPICTS"))
    graph.check()
    return graph
