"""Who spoke: utterances' voice vectors clustered per video into speakers ``S1``, ``S2``, ...

    labels = cluster(vectors)                               # agglomerative, average linkage on cosine
    utterances, voices = assign_speakers(utterances, vectors)

Clustering is agglomerative with average linkage on cosine distance, stopped when the closest
two clusters are further apart than ``THRESHOLD``. The threshold was chosen on data with
``benchmarks/diarisation.py`` (docs/speech.md gives the numbers): 0.3 is the best of a sweep on
real two-speaker speech (pyannote.audio's sample), where one voice's short utterances sit
0.17-0.54 apart; synthetic espeak-ng voices sit much closer (0.1-0.25) and would prefer 0.15,
which splits real voices. Labels are numbered in order of first appearance. An utterance whose
speaker is already known keeps it; only the others are labelled. Each cluster's centroid is kept
(``memtools.store.tables.voices.Voice``), so a later matcher can compare voices across videos.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memtools.linkage import average_linkage, renumbered
from memtools.speech.base import Utterance
from memtools.store.tables.voices import Voice

THRESHOLD = 0.3  # cosine distance at which two clusters stop merging (benchmarks/diarisation.py)
PREFIX = "S"
MAX_ROWS = 1500  # clustered exactly up to this many utterances; above, a spread sample is, and the rest join


def cluster(vectors: np.ndarray, threshold: float = THRESHOLD, *, max_rows: int = MAX_ROWS) -> np.ndarray:
    """Cluster numbers (0, 1, ... in order of first row) for unit row vectors; average linkage on cosine distance.

    More than ``max_rows`` rows (hours of speech): an evenly spread sample of them is clustered and
    every other row joins the cluster whose centroid is nearest (time and memory stay bounded)."""
    x = np.asarray(vectors, dtype=np.float64)
    if len(x) == 0:
        return np.zeros(0, dtype=np.int64)
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    if len(x) <= max_rows:
        return renumbered(_agglomerate(x, threshold))
    sample = np.unique(np.linspace(0, len(x) - 1, max_rows).round().astype(np.int64))
    labels = _agglomerate(x[sample], threshold)
    centroids = np.array([x[sample][labels == k].mean(axis=0) for k in np.unique(labels)])
    return renumbered(np.argmax(x @ centroids.T, axis=1))


def _agglomerate(x: np.ndarray, threshold: float) -> np.ndarray:
    """Each row's cluster (any numbering): average linkage on the cosine distance of unit rows."""
    return average_linkage(1.0 - x @ x.T, threshold)


def assign_speakers(utterances: Sequence[Utterance], vectors: np.ndarray, threshold: float = THRESHOLD
                    ) -> tuple[list[Utterance], list[Voice]]:
    """Label the utterances without a speaker ``S1``, ``S2``, ... (``vectors`` has one row per utterance)."""
    todo = [n for n, u in enumerate(utterances) if not u.speaker]
    out = list(utterances)
    if not todo:
        return out, []
    rows = np.asarray(vectors, dtype=np.float64)[todo]
    labels = cluster(rows, threshold)
    voices = []
    for number in range(int(labels.max()) + 1):
        members = [todo[i] for i in np.flatnonzero(labels == number)]
        label = f"{PREFIX}{number + 1}"
        centroid = rows[labels == number].mean(axis=0)
        centroid /= max(float(np.linalg.norm(centroid)), 1e-12)
        for m in members:
            out[m] = out[m].model_copy(update={"speaker": label})
        voices.append(Voice(label=label, centroid=[round(float(v), 5) for v in centroid], utterances=len(members),
                            seconds=round(sum(utterances[m].t_end - utterances[m].t_start for m in members), 3)))
    return out, voices
