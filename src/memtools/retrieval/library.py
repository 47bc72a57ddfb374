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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from memtools.retrieval.moments import Moment
from memtools.retrieval.spans import MERGEABLE, merge_adjacent
from memtools.store.base import Hit, HitColumns, SearchFilter, SearchQuery, VectorIndex
from memtools.tools.search import SearchConfig

LEAF_KINDS = ("entity", "event", "ocr", "speech")
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
    with ThreadPoolExecutor(1) as pool:  # the full-text query over the roots runs beside the vector query
        by_words = pool.submit(index.search, SearchQuery(
            "fulltext", max(4 * config.videos, 32), text=text, filter=filters.filter(kinds=["video"]), lite=True,
        )) if config.text_weight > 0 and text else None
        nodes = [h for h in index.search(SearchQuery("vector", config.candidates, vector,
                                                     filter=filters.filter(kinds=[]), lite=True))
                 if h.kind in searchable]
        found = by_words.result() if by_words else []
    sims = profiles.similarities(vector)
    keep = np.ones(len(sims), dtype=bool)  # a root spans its whole video: it passes a window that starts inside it
    if filters.as_of is not None:
        keep &= profiles.durations <= filters.as_of
    if filters.start is not None:
        keep &= profiles.durations >= filters.start
    root = {vid: float(s) for vid, s, k in zip(profiles.video_ids, sims, keep, strict=True) if k}
    top = max((h.score for h in found), default=0.0) or 1.0
    words = {h.video_id: h.score / top for h in found}
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


def rank_moments(hits: Sequence[Hit] | HitColumns, config: SearchConfig, kinds: Sequence[str],
                 video_scores: dict[str, float] | None = None,
                 complete: Callable[[Sequence[Hit]], list[Hit]] | None = None) -> list[Moment]:
    """Stage 2+3 over every row of the opened videos: moment score, combined score, spans,
    and (library-wide) at most ``per_video`` hits per video before the rest. The first
    ``max(RANKED_DEPTH, walk.seeds)`` moments are exact; later ones may be left out.
    ``hits`` may be the columns of a lite search; ``complete`` then reads the payload (text,
    context) of the few hundred rows that become moments."""
    rows = hits if isinstance(hits, HitColumns) else HitColumns.of(hits)
    beta = config.macro_context
    share = config.video_share if video_scores else 0.0
    wanted = set(kinds)
    picked = [i for i, k in enumerate(rows.kinds) if k in wanted]
    if not picked:
        return []
    # Scored with numpy, in the same float64 operations as one row at a time (so the same scores).
    macro_sim = {i: s for i, k, s in zip(rows.ids, rows.kinds, rows.scores, strict=True) if k == "macro"}
    sim = np.array([rows.scores[i] for i in picked], dtype=np.float64)
    context = np.array([macro_sim.get(rows.macro_ids[i], rows.scores[i]) if rows.kinds[i] in LEAF_KINDS
                        else rows.scores[i] for i in picked], dtype=np.float64)
    moment = (sim + beta * context) / (1 + beta)
    video = (np.array([video_scores.get(rows.video_ids[i], 0.0) for i in picked], dtype=np.float64)
             if video_scores else np.zeros(len(picked)))
    combined = share * video + (1 - share) * moment
    order = np.lexsort((np.array([rows.ids[i] for i in picked]), -combined))  # best first, ties by id
    ranked = [picked[j] for j in order.tolist()]
    scores, videos = combined[order].tolist(), video[order].tolist()
    keep = _deciding(scores, [rows.kinds[i] for i in ranked], [rows.video_ids[i] for i in ranked], config, share,
                     bool(video_scores))
    shown = [hits.hit(ranked[j]) if isinstance(hits, HitColumns) else hits[ranked[j]] for j in keep]
    moments = [Moment.from_hit(h, scores[j], video_score=videos[j])
               for j, h in zip(keep, complete(shown) if complete else shown, strict=True)]
    if config.merge_spans:
        # the margin is in moment-score units; combined scores carry (1 - share) of them
        moments = merge_adjacent(moments, config.merge_margin * (1 - share), config.merge_gap_sec)
    if video_scores and config.per_video and moments:
        # Candidates close to the best hit go first, at most per_video of each video; a video far
        # behind does not push a better video's next moment down.
        close = moments[0].score - config.diversity_margin
        first: list[Moment] = []
        rest: list[Moment] = []
        seen: defaultdict[str, int] = defaultdict(int)
        for m in moments:
            (first if m.score >= close and seen[m.video_id] < config.per_video else rest).append(m)
            seen[m.video_id] += 1
        moments = first + sorted(rest, key=lambda m: (-m.score, m.id))
    return moments


RANKED_DEPTH = 50  # rank_moments orders at least this many moments exactly (TOP_K_MAX of search_nodes)


def _deciding(scores: list[float], kinds: list[str], video_ids: list[str], config: SearchConfig, share: float,
              spread: bool) -> list[int]:
    """Which of the scored rows (best first) can decide the first ``max(RANKED_DEPTH, walk.seeds)``
    moments: each video's merge pool (leaves within the merge margin of its best mergeable leaf),
    each video's first ``per_video``, and enough of the best after them. Inside 8 opened videos
    at 1,000 h that is a few hundred of ~7k rows; making moments of all of them was most of a
    search's time."""
    depth = max(RANKED_DEPTH, config.walk.seeds)
    if len(scores) <= 4 * depth:
        return list(range(len(scores)))
    keep = set(range(depth))
    pooled: dict[str, int] = defaultdict(int)
    if config.merge_spans:
        margin, anchor = config.merge_margin * (1 - share), dict[str, float]()
        for i, (score, kind, vid) in enumerate(zip(scores, kinds, video_ids, strict=True)):
            if kind in MERGEABLE:
                best = anchor.setdefault(vid, score)
                if score >= best - margin:
                    keep.add(i)
                    pooled[vid] += 1
    if spread and config.per_video:
        taken: dict[str, int] = defaultdict(int)
        for i, vid in enumerate(video_ids):  # a video's firsts, counted after its merged members leave
            if taken[vid] < config.per_video + pooled[vid]:
                taken[vid] += 1
                keep.add(i)
    # merged members and per-video firsts move ahead of or out of the list: that many more of the best
    keep.update(range(min(len(scores), depth + len(keep))))
    return sorted(keep)


@dataclass(frozen=True)
class LibraryResult:
    moments: list[Moment]          # best first, not cut to top_k
    hits: list[Hit]                # every row of the opened videos, with its similarity (if hit_payloads)
    opened: list[str]              # the videos stage 2 searched, best first
    video_scores: dict[str, float]


def search_library(index: VectorIndex, vector: np.ndarray, text: str, config: SearchConfig, filters: Filters,
                   searchable: Sequence[str], video_rows: Callable[[str], int],
                   open_kinds: Sequence[str] | None = None, hit_payloads: bool = False) -> LibraryResult:
    """Coarse-to-fine moments. ``video_rows(video_id)`` gives a video's lance row count, so stage 2
    asks for exactly enough rows; ``open_kinds`` widens stage 2 beyond the caller's kinds (the
    graph walk needs every node of the opened videos). Stage 2 reads only what ranking needs
    and the text and context of the moments alone, unless ``hit_payloads`` asks for them on
    every hit (the graph walk shows any of them)."""
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
                               complete=index.complete)
    return LibraryResult(moments, hits, opened, video_scores)
