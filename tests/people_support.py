"""Videos with speakers and their voice centroids, for the people tests (``tests/test_people*.py``).

``talk(video)`` is the kitchen graph of ``memtools.testing`` with its speech replaced by ``lines``
(speaker, start, end, text); ``voice(n)`` a unit 256-d vector standing for one person's voice (a
GE2E centroid: the fake sits at the model boundary), ``near`` one of the same voice in another video.
"""

from __future__ import annotations

import sqlite3

import numpy as np

from memtools.schema import Speech, VideoGraph, macro_id, speech_id
from memtools.store.tables.voices import Voice, save_voices
from memtools.testing import kitchen_graph

LINES = [("S1", 10.0, 14.0, "Slice the onions thin."), ("S2", 130.0, 134.0, "The oil is smoking."),
         ("S1", 250.0, 255.0, "Cover the pan with the lid.")]


def voice(n: int) -> np.ndarray:
    v = np.random.default_rng(1000 + n).normal(size=256)
    return v / np.linalg.norm(v)


def near(n: int, seed: int, spread: float = 0.15) -> np.ndarray:
    """Person ``n``'s voice as another video's cluster hears it: cosine ~0.99 to ``voice(n)``."""
    v = voice(n) + spread * np.random.default_rng(seed).normal(size=256) / 16
    return v / np.linalg.norm(v)


def talk(video_id: str, lines=LINES) -> VideoGraph:
    graph = kitchen_graph(video_id)
    counts: dict[str, int] = {}
    graph.speech = []
    for speaker, start, end, text in lines:
        m = next(mc.id for mc in graph.macros if mc.t_start <= start <= mc.t_end)
        counts[m] = counts.get(m, 0) + 1
        graph.speech.append(Speech(id=speech_id(m, counts[m]), video_id=video_id, macro_id=m, t_start=start,
                                   t_end=end, text=text, speaker=speaker))
    graph.edges = [e for e in graph.edges if e.label != "SAYS" and e.category.value != "speech"]
    graph.check()
    return graph


def save(path, video_id: str, centroids: dict[str, np.ndarray]) -> None:
    save_voices(path, video_id, [Voice(label=k, centroid=[float(x) for x in v], utterances=2, seconds=8.0)
                                 for k, v in centroids.items()])


def people(path) -> dict[tuple[str, str], str]:
    """(video, label) -> person id, as the layer holds them."""
    with sqlite3.connect(f"file:{path}/library.sqlite?mode=ro", uri=True) as conn:
        return {(v, label): p for v, label, p in
                conn.execute("SELECT video_id, label, person_id FROM clusters ORDER BY video_id, label")}


__all__ = ["LINES", "macro_id", "near", "people", "save", "talk", "voice"]
