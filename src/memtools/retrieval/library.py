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

from memtools.retrieval.moments import Moment
from memtools.retrieval.spans import MERGEABLE, merge_adjacent
from memtools.store.base import Hit, SearchFilter, SearchQuery, VectorIndex
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
    nodes = [h for h in index.search(SearchQuery("vector", config.candidates, vector, filter=filters.filter(kinds=[]),
                                                 lite=True))
             if h.kind in searchable]
    profiles = index.video_profiles()
    sims = profiles.similarities(vector)
    keep = np.ones(len(sims), dtype=bool)  # a root spans its whole video: it passes a window that starts inside it
    if filters.as_of is not None:
        keep &= profiles.durations <= filters.as_of
    if filters.start is not None:
        keep &= profiles.durations >= filters.start
    root = {vid: float(s) for vid, s, k in zip(profiles.video_ids, sims, keep, strict=True) if k}
    words: dict[str, float] = {}
    if config.text_weight > 0 and text:
        found = index.search(SearchQuery("fulltext", max(4 * config.videos, 32), text=text,
                                         filter=filters.filter(kinds=["video"]), lite=True))
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


def rank_moments(hits: Sequence[Hit], config: SearchConfig, kinds: Sequence[str],
                 video_scores: dict[str, float] | None = None,
                 complete: Callable[[Sequence[Hit]], list[Hit]] | None = None) -> list[Moment]:
    """Stage 2+3 over every row of the opened videos: moment score, combined score, spans,
    and (library-wide) at most ``per_video`` hits per video before the rest. The first
    ``max(RANKED_DEPTH, walk.seeds)`` moments are exact; later ones may be left out.
    ``complete`` reads the payload (text, context) of the hits that become moments, for
    ``hits`` from a lite search."""
    macro_sim = {h.id: h.score for h in hits if h.kind == "macro"}
    beta = config.macro_context
    share = config.video_share if video_scores else 0.0
    scored = []
    for h in hits:
        if h.kind not in kinds:
            continue
        context = macro_sim.get(h.macro_id, h.score) if h.kind in LEAF_KINDS else h.score
        moment = (h.score + beta * context) / (1 + beta)
        video = video_scores.get(h.video_id, 0.0) if video_scores else 0.0
        scored.append((share * video + (1 - share) * moment, h, video))
    scored.sort(key=lambda t: (-t[0], t[1].id))
    deciding = _deciding(scored, config, share, bool(video_scores))
    shown = [h for _, h, _ in deciding]
    moments = [Moment.from_hit(h, score, video_score=video)
               for (score, _, video), h in zip(deciding, complete(shown) if complete else shown, strict=True)]
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


def _deciding(scored: list[tuple[float, Hit, float]], config: SearchConfig, share: float,
              spread: bool) -> list[tuple[float, Hit, float]]:
    """The scored hits (best first) that can decide the first ``max(RANKED_DEPTH, walk.seeds)``
    moments: each video's merge pool (leaves within the merge margin of its best mergeable leaf),
    each video's first ``per_video``, and enough of the best after them. Inside 8 opened videos
    at 1,000 h that is a few hundred of ~7k rows; making moments of all of them was most of a
    search's time."""
    depth = max(RANKED_DEPTH, config.walk.seeds)
    if len(scored) <= 4 * depth:
        return scored
    keep = set(range(depth))
    pooled: dict[str, int] = defaultdict(int)
    if config.merge_spans:
        margin, anchor = config.merge_margin * (1 - share), dict[str, float]()
        for i, (score, h, _) in enumerate(scored):
            if h.kind in MERGEABLE:
                best = anchor.setdefault(h.video_id, score)
                if score >= best - margin:
                    keep.add(i)
                    pooled[h.video_id] += 1
    if spread and config.per_video:
        taken: dict[str, int] = defaultdict(int)
        for i, (_, h, _) in enumerate(scored):  # a video's firsts, counted after its merged members leave
            if taken[h.video_id] < config.per_video + pooled[h.video_id]:
                taken[h.video_id] += 1
                keep.add(i)
    # merged members and per-video firsts move ahead of or out of the list: that many more of the best
    keep.update(range(min(len(scored), depth + len(keep))))
    return [scored[i] for i in sorted(keep)]


@dataclass(frozen=True)
class LibraryResult:
    moments: list[Moment]          # best first, not cut to top_k
    hits: list[Hit]                # every row of the opened videos, with its similarity (lite unless asked)
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
    hits = index.search(SearchQuery("vector", limit, vector, filter=filters.filter(kinds=kinds, video_ids=opened),
                                    lite=not hit_payloads))
    moments = rank_moments(hits, config, filters.kinds, video_scores or None,
                           complete=None if hit_payloads else index.complete)
    return LibraryResult(moments, hits, opened, video_scores)
