"""Average-linkage agglomerative clustering on a distance matrix (speakers by voice, faces by descriptor).

    owner = average_linkage(dist, threshold)     # each row's cluster (any numbering)
    labels = renumbered(owner)                   # 0, 1, ... in order of first row

The closest two clusters merge while they are within ``threshold``; the distance of a merged
cluster to another is the size-weighted mean of its parts' (Lance-Williams, average linkage). A
distance of ``inf`` never merges, and stays ``inf`` after merges: it is a cannot-link (two faces
on one keyframe are two people). Time is O(n^3) with n^2 memory: callers bound n.
"""

from __future__ import annotations

import numpy as np


def average_linkage(dist: np.ndarray, threshold: float) -> np.ndarray:
    """Each row's cluster (any numbering): average-linkage merges while the closest pair is within ``threshold``."""
    dist = np.array(dist, dtype=np.float64)
    n = len(dist)
    np.fill_diagonal(dist, np.inf)
    size = np.ones(n)
    owner = np.arange(n)
    for _ in range(n - 1):
        flat = int(np.argmin(dist))
        a, b = divmod(flat, n)
        if not dist[a, b] <= threshold:
            break
        a, b = min(a, b), max(a, b)
        merged = (size[a] * dist[a] + size[b] * dist[b]) / (size[a] + size[b])
        dist[a], dist[:, a] = merged, merged
        dist[a, a] = np.inf
        dist[b], dist[:, b] = np.inf, np.inf
        size[a] += size[b]
        owner[owner == b] = a
    return owner


def renumbered(owner: np.ndarray) -> np.ndarray:
    """Cluster numbers 0, 1, ... in order of each cluster's first row."""
    _, first = np.unique(owner, return_index=True)
    order = {int(owner[i]): rank for rank, i in enumerate(sorted(first))}
    return np.array([order[int(o)] for o in owner], dtype=np.int64)
