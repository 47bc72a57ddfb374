"""Coarse-to-fine search (MM-Mem's pyramid, WorldMM's multi-scale episodes): the right video
first, then the right moment inside it.

1. **Videos.** One similarity query over every row of the library (roots, super and macro
   events, leaves) and one over the root profiles alone. Each video is scored from what the
   hierarchy knows about it: its root profile, its best super/macro event and its best node,
   weighted by ``SearchConfig``. A component a video did not reach the candidate lists with is
   counted at the lowest similarity seen (it is at most that).
2. **Moments.** One query over every row of the best ``videos`` videos. A node's moment score
   adds ``macro_context`` x its macro event's similarity (the episode it sits in), so among
   similar sentences the one inside the right episode wins.
3. **Combined.** ``video_share`` x video score + the rest x moment score; adjacent leaves of one
   video that score almost as well merge into one span (``retrieval.spans``).

Inside one video (a ``video_id`` filter) only stages 2 and 3 run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from memtools.blas import row_dots
from memtools.retrieval.moments import Moment
from memtools.retrieval.root_words import root_words
from memtools.store.base import Hit, SearchFilter, SearchQuery, VectorIndex
from memtools.tools.search import SearchConfig

CONTEXT_KINDS = ("super", "macro")


@dataclass(frozen=True)
class Filters:
    """What the caller restricts a search to (all optional)."""

    kinds: Sequence[str]
    video_id: str | None = None
    start: float | None = None
    end: float | None = None
    as_of: float | None = None

    def filter(self, kinds: Sequence[str] | None = None, video_ids: Sequence[str] | None = None) -> SearchFilter:
        """The store's typed filter: these restrictions, with ``kinds`` (empty: any) and ``video_ids`` if given."""
        ids: tuple[str, ...] | None = None if self.video_id is None else (self.video_id,)
        if video_ids is not None:
            ids = tuple(v for v in video_ids if ids is None or v in ids)
        return SearchFilter(video_ids=ids, kinds=tuple(kinds if kinds is not None else self.kinds),
                            start=self.start, end=self.end, as_of=self.as_of)


def rank_videos(index: VectorIndex, vector: np.ndarray, text: str, config: SearchConfig, filters: Filters,
                searchable: Sequence[str]) -> dict[str, float]:
    """Video id -> score from the hierarchy (stage 1), best first."""
    profiles = index.video_profiles()
    nodes = [h for h in index.search(SearchQuery("vector", config.candidates, vector,
                                                 filter=filters.filter(kinds=[]), lite=True))
             if h.kind in searchable]
    sims = row_dots(profiles.vectors, np.asarray(vector, dtype=np.float32)) if len(profiles.video_ids) \
        else np.zeros(0)  # profiles.similarities, on this thread alone (memtools.blas.row_dots)
    keep = np.ones(len(sims), dtype=bool)  # a root spans its whole video: it passes a window that starts inside it
    if filters.as_of is not None:
        keep &= profiles.durations <= filters.as_of
    if filters.start is not None:
        keep &= profiles.durations >= filters.start
    root = {vid: float(s) for vid, s, k in zip(profiles.video_ids, sims, keep, strict=True) if k}
    words: dict[str, float] = {}
    if config.text_weight > 0 and text and len(profiles.texts) == len(profiles.video_ids):
        found = root_words(profiles).best(text, keep, max(4 * config.videos, 32))
        top = max(found.values(), default=0.0)
        words = {profiles.video_ids[i]: score / top for i, score in found.items()}  # max-normalised
    if not nodes and not root:
        return {}
    floor = min(h.score for h in nodes) if nodes else min(root.values())
    root_floor = min(root.values()) if root else floor
    context: dict[str, float] = defaultdict(lambda: floor)
    leaf: dict[str, float] = defaultdict(lambda: floor)
    for h in nodes:
        best = context if h.kind in CONTEXT_KINDS else leaf
        best[h.video_id] = max(best[h.video_id], h.score)
    # Candidates: videos with a matching node, plus the best profiles (a video can be right with no
    # single node in the library-wide top list).
    candidates = {*context, *leaf, *sorted(root, key=root.__getitem__, reverse=True)[:4 * config.videos]}
    total = config.root_weight + config.context_weight + config.node_weight + config.text_weight or 1.0
    scores = {
        vid: (config.root_weight * root.get(vid, root_floor) + config.context_weight * context[vid]
              + config.node_weight * leaf[vid] + config.text_weight * words.get(vid, 0.0)) / total
        for vid in candidates
    }
    return dict(sorted(scores.items(), key=lambda kv: -kv[1]))


@dataclass(frozen=True)
class LibraryResult:
    moments: list[Moment]          # best first, not cut to top_k
    hits: list[Hit]                # every row of the opened videos, with its similarity (if hit_payloads)
    opened: list[str]              # the videos stage 2 searched, best first
    video_scores: dict[str, float]


def search_library(index: VectorIndex, vector: np.ndarray, text: str, config: SearchConfig, filters: Filters,
                   searchable: Sequence[str], video_rows: Callable[[str], int],
                   open_kinds: Sequence[str] | None = None, hit_payloads: bool = False,
                   top_k: int | None = None) -> LibraryResult:
    """Coarse-to-fine moments. ``video_rows(video_id)`` gives a video's lance row count, so stage 2
    asks for exactly enough rows; ``open_kinds`` widens stage 2 beyond the caller's kinds (the
    graph walk needs every node of the opened videos). Stage 2 reads only what ranking needs
    and the text and context of the moments alone (the first ``top_k`` moments, and only those
    are returned, when given), unless ``hit_payloads`` asks for them on every hit (the graph
    walk shows any of them)."""
    from memtools.retrieval.ranking import rank_moments  # pyarrow.compute: only a search pays it (~40-80 ms)

    if filters.video_id is not None:
        opened = [filters.video_id]
        video_scores: dict[str, float] = {}
    else:
        video_scores = rank_videos(index, vector, text, config, filters, searchable)
        opened = list(video_scores)[:config.videos]
        if not opened:
            return LibraryResult([], [], [], {})
    limit = sum(video_rows(v) for v in opened) + 16
    kinds = list(dict.fromkeys([*(open_kinds or filters.kinds), "macro"]))
    query = SearchQuery("vector", limit, vector, filter=filters.filter(kinds=kinds, video_ids=opened))
    if hit_payloads:
        hits = index.search(query)
        moments = rank_moments(hits, config, filters.kinds, video_scores or None)
    else:
        hits = []
        moments = rank_moments(index.search_columns(query), config, filters.kinds, video_scores or None,
                               complete=index.complete, shown=top_k)
    return LibraryResult(moments, hits, opened, video_scores)
