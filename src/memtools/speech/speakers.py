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
        return _renumbered(_agglomerate(x, threshold))
    sample = np.unique(np.linspace(0, len(x) - 1, max_rows).round().astype(np.int64))
    labels = _agglomerate(x[sample], threshold)
    centroids = np.array([x[sample][labels == k].mean(axis=0) for k in np.unique(labels)])
    return _renumbered(np.argmax(x @ centroids.T, axis=1))


def _renumbered(owner: np.ndarray) -> np.ndarray:
    _, first = np.unique(owner, return_index=True)
    order = {int(owner[i]): rank for rank, i in enumerate(sorted(first))}
    return np.array([order[int(o)] for o in owner], dtype=np.int64)


def _agglomerate(x: np.ndarray, threshold: float) -> np.ndarray:
    """Each row's cluster (any numbering): average-linkage merges while the closest pair is within ``threshold``."""
    n = len(x)
    dist = 1.0 - x @ x.T
    np.fill_diagonal(dist, np.inf)
    size = np.ones(n)
    owner = np.arange(n)
    for _ in range(n - 1):
        flat = int(np.argmin(dist))
        a, b = divmod(flat, n)
        if dist[a, b] > threshold:
            break
        a, b = min(a, b), max(a, b)
        # Lance-Williams update for average linkage: the merged cluster's distance is the size-weighted mean
        merged = (size[a] * dist[a] + size[b] * dist[b]) / (size[a] + size[b])
        dist[a], dist[:, a] = merged, merged
        dist[a, a] = np.inf
        dist[b], dist[:, b] = np.inf, np.inf
        size[a] += size[b]
        owner[owner == b] = a
    return owner


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
