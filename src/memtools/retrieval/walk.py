"""Graph-walk retrieval: personalized PageRank over the typed graph (MAGIC-Video §3.4, HippoRAG).

Seeds are the best coarse-to-fine moments; their similarities (max-normalised, summed to 1)
are the restart vector. The walk runs undirected over the seed videos' graph — hierarchy
(video -> super -> macro -> leaf), the typed edges inside each macro event and between them —
with one weight per edge label (``WalkConfig.edge_weights``). Nodes are re-ranked by
walk score x similarity^power, so a node reached from several good seeds (the cause of a
matched event, the entity that performs it) rises, and each result names the path from its
nearest seed along the strongest edges.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

from memtools.retrieval.moments import Moment
from memtools.store.base import Hit
from memtools.tools.search import WalkConfig

UNKNOWN_EDGE_WEIGHT = 0.3


def personalized_pagerank(n: int, edges: Sequence[tuple[int, int, float]], reset: np.ndarray,
                          damping: float, iterations: int) -> np.ndarray:
    """Undirected weighted PPR by power iteration; dangling mass returns to the reset vector."""
    if not edges:
        return reset.copy()
    src = np.array([a for a, b, _ in edges] + [b for a, b, _ in edges])
    dst = np.array([b for a, b, _ in edges] + [a for a, b, _ in edges])
    w = np.array([x for *_, x in edges] * 2, dtype=np.float64)
    out = np.zeros(n)
    np.add.at(out, src, w)
    share = w / out[src]
    rank = reset.copy()
    for _ in range(iterations):
        flow = np.zeros(n)
        np.add.at(flow, dst, rank[src] * share)
        dangling = rank[out == 0].sum()
        rank = (1 - damping) * reset + damping * (flow + dangling * reset)
    return rank


def _paths(n: int, adjacency: dict[int, list[tuple[int, float, str]]], seeds: Iterable[int]
           ) -> dict[int, tuple[int, str, int]]:
    """For every node reached, (previous node, label, hops) on the strongest path from a seed
    (Dijkstra on -log weight)."""
    best: dict[int, float] = {}
    prev: dict[int, tuple[int, str, int]] = {}
    heap = [(0.0, s, s, "", 0) for s in seeds]
    while heap:
        cost, node, before, label, hops = heapq.heappop(heap)
        if node in best:
            continue
        best[node] = cost
        prev[node] = (before, label, hops)
        for other, weight, lab in adjacency.get(node, ()):
            if other not in best and weight > 0:
                heapq.heappush(heap, (cost - float(np.log(weight)), other, node, lab, hops + 1))
    return prev


def walk(hits: Sequence[Hit], seeds: Sequence[Moment], typed_edges: Sequence[tuple[str, str, str]],
         parents: dict[str, str], config: WalkConfig, kinds: Sequence[str]) -> list[Moment]:
    """Re-rank ``hits`` (every row of the seed videos, with similarities) by a walk from ``seeds``.

    ``parents`` maps a node id to its parent in the hierarchy (leaf -> macro -> super -> video).
    """
    by_id = {h.id: h for h in hits}
    ids = list(dict.fromkeys([*by_id, *parents, *parents.values(), *(x for e in typed_edges for x in e[:2])]))
    pos = {node: i for i, node in enumerate(ids)}
    weights = config.edge_weights
    edges: list[tuple[int, int, float]] = []
    adjacency: dict[int, list[tuple[int, float, str]]] = defaultdict(list)

    def add(a: str, b: str, label: str) -> None:
        w = weights.get(label, UNKNOWN_EDGE_WEIGHT)
        if w <= 0 or a not in pos or b not in pos:
            return
        edges.append((pos[a], pos[b], w))
        adjacency[pos[a]].append((pos[b], w, label))
        adjacency[pos[b]].append((pos[a], w, label))

    for child, parent in parents.items():
        add(parent, child, "CONTAINS")
    for a, b, label in typed_edges:
        add(a, b, label)
    reset = np.zeros(len(ids))
    top = max((s.similarity for s in seeds), default=0.0) or 1.0
    for s in seeds:
        if s.id in pos:
            reset[pos[s.id]] += max(s.similarity, 0.0) / top
    if reset.sum() == 0:
        return []
    reset /= reset.sum()
    rank = personalized_pagerank(len(ids), edges, reset, config.damping, config.iterations)
    prev = _paths(len(ids), adjacency, [pos[s.id] for s in seeds if s.id in pos])
    rank = rank / (rank.max() or 1.0)
    out = []
    for h in hits:
        if h.kind not in kinds:
            continue
        i = pos[h.id]
        score = float(rank[i]) * max(h.score, 0.0) ** config.similarity_power
        out.append(Moment.from_hit(h, score, path=_path_of(i, prev, ids)))
    out.sort(key=lambda m: (-m.score, m.id))
    return out


def _path_of(i: int, prev: dict[int, tuple[int, str, int]], ids: list[str]) -> tuple[str, ...]:
    """``(seed, "-LABEL->", node, ...)`` read back from the strongest-path tree."""
    if i not in prev:
        return ()
    steps: list[str] = [ids[i]]
    while True:
        before, label, hops = prev[i]
        if hops == 0 or before == i:
            break
        steps += [label, ids[before]]
        i = before
    return tuple(reversed(steps))
