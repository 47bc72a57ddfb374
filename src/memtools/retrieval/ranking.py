"""Stages 2 and 3 of coarse-to-fine search: moments inside the opened videos.

A node's moment score adds ``macro_context`` x its macro event's similarity (the episode it
sits in); the combined score adds ``video_share`` x its video's score; adjacent leaves of one
video that score almost as well merge into one span (``retrieval.spans``); library-wide, the
list first takes at most ``per_video`` moments per video.

At 1,000 h the opened videos hold ~7k rows, so the ranking runs on columns (pyarrow and
numpy, no object per row) and makes moments only of the rows that can decide the head
(``_deciding``); ``tests/test_search_ranking_depth.py`` holds it equal to ranking every row.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memtools.retrieval.moments import Moment
from memtools.retrieval.spans import MERGEABLE, merge_adjacent
from memtools.store.base import Hit, HitColumns
from memtools.tools.search import SearchConfig

LEAF_KINDS = ("entity", "event", "ocr", "speech")
RANKED_DEPTH = 50  # rank_moments orders at least this many moments exactly (TOP_K_MAX of search_nodes)


def rank_moments(hits: Sequence[Hit] | HitColumns, config: SearchConfig, kinds: Sequence[str],
                 video_scores: dict[str, float] | None = None,
                 complete: Callable[[Sequence[Hit]], list[Hit]] | None = None,
                 shown: int | None = None) -> list[Moment]:
    """Moments of ``hits`` (every row of the opened videos), best first. The first
    ``max(RANKED_DEPTH, walk.seeds)`` are exact; later ones may be left out. ``hits`` may be the
    columns of a lite search; ``complete`` then reads the payload (text, context) of the rows of
    the first ``shown`` moments (all of them if None), and only those moments, exact, are returned."""
    rows = hits if isinstance(hits, HitColumns) else HitColumns.of(hits)
    beta = config.macro_context
    share = config.video_share if video_scores else 0.0
    kind, ids = _strings(rows.kinds), _strings(rows.ids)
    picked = np.flatnonzero(_member(kind, kinds))
    if not len(picked):
        return []
    # The same float64 operations as one row at a time (so the same scores).
    score = np.asarray(rows.scores, dtype=np.float64)
    macros = np.flatnonzero(_member(kind, ("macro",)))
    sim = score[picked]
    of_macro = _lookup(_strings(rows.macro_ids).take(picked), ids.take(macros), score[macros])
    context = np.where(_member(kind.take(picked), LEAF_KINDS) & ~np.isnan(of_macro), of_macro, sim)
    moment = (sim + beta * context) / (1 + beta)
    video_ids = _strings(rows.video_ids)
    video = (np.nan_to_num(_lookup(video_ids.take(picked), pa.array(list(video_scores), pa.string()),
                                   np.array(list(video_scores.values()), dtype=np.float64)), nan=0.0)
             if video_scores else np.zeros(len(picked)))
    combined = share * video + (1 - share) * moment
    by_id = np.asarray(rows.order)[picked] if rows.order is not None else _ranks(ids.take(picked))
    order = np.lexsort((by_id, -combined))  # best first, ties by id
    ranked = picked[order]
    scores, videos = combined[order], video[order]
    # only the shown moments (a lite search with ``shown``) must be exact, else the first RANKED_DEPTH
    depth = shown if complete is not None and shown is not None else max(RANKED_DEPTH, config.walk.seeds)
    keep = _deciding(scores, _member(kind.take(ranked), tuple(MERGEABLE)),
                     pc.dictionary_encode(video_ids.take(ranked)).indices.to_numpy(zero_copy_only=False),
                     config, share, bool(video_scores), depth)
    at = ranked[keep].tolist()
    found = hits.take(at) if isinstance(hits, HitColumns) else [hits[i] for i in at]
    moments = [Moment.from_hit(h, float(scores[j]), video_score=float(videos[j]))
               for j, h in zip(keep.tolist(), found, strict=True)]
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
    if complete is None:
        return moments
    return _with_payloads(moments[:shown] if shown is not None else moments, {h.id: h for h in found}, complete)


def _deciding(scores: np.ndarray, mergeable: np.ndarray, video: np.ndarray, config: SearchConfig, share: float,
              spread: bool, depth: int) -> np.ndarray:
    """Which of the scored rows (best first) can decide the first ``depth`` moments: each video's
    merge pool (mergeable leaves within the merge margin of its best one), each video's first
    ``per_video`` (counted after its merged members), and enough of the best after them.
    ``video`` holds a small integer per video."""
    n = len(scores)
    if n <= 4 * depth:
        return np.arange(n)
    keep = np.zeros(n, dtype=bool)
    keep[:depth] = True
    videos = int(video.max()) + 1
    pooled = np.zeros(videos, dtype=np.int64)
    if config.merge_spans:
        anchor = np.full(videos, np.inf)  # each video's first (best) mergeable score
        rows = np.flatnonzero(mergeable)
        seen, first = np.unique(video[rows], return_index=True)
        anchor[seen] = scores[rows[first]]
        pool = mergeable & (scores >= anchor[video] - config.merge_margin * (1 - share))
        keep |= pool
        pooled = np.bincount(video[pool], minlength=videos)
    if spread and config.per_video:
        grouped = np.argsort(video, kind="stable")  # each video's rows, still best first
        starts = np.searchsorted(video[grouped], np.arange(videos))
        place = np.empty(n, dtype=np.int64)
        place[grouped] = np.arange(n) - starts[video[grouped]]
        keep |= place < config.per_video + pooled[video]
    # merged members and per-video firsts move ahead of or out of the list: that many more of the best
    keep[:min(n, depth + int(keep.sum()))] = True
    return np.flatnonzero(keep)


def _with_payloads(moments: list[Moment], lite: dict[str, Hit],
                   complete: Callable[[Sequence[Hit]], list[Hit]]) -> list[Moment]:
    """``moments`` of lite hits with the text, macro label and context of their rows (a merged span's
    text joins its members' in time order, as ``merge_adjacent`` does)."""
    needed = list(dict.fromkeys(i for m in moments for i in (m.id, *m.members)))
    full = {h.id: h for h in complete([lite[i] for i in needed])}

    def text(i: str) -> str:
        return full[i].display or full[i].text

    return [replace(m, text=" … ".join(text(i) for i in m.members) if m.members else text(m.id),
                    macro_label=full[m.id].macro_label, context=full[m.id].context) for m in moments]


def _strings(values) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks()
    return values if isinstance(values, pa.Array) else pa.array(list(values), pa.string())


def _member(values: pa.Array, wanted: Sequence[str]) -> np.ndarray:
    return pc.is_in(values, value_set=pa.array(list(wanted), pa.string())).to_numpy(zero_copy_only=False)


def _lookup(keys: pa.Array, known: pa.Array, values: np.ndarray) -> np.ndarray:
    """``values`` of ``known`` at each of ``keys`` (NaN where a key is not known)."""
    at = pc.index_in(keys, value_set=known).to_numpy(zero_copy_only=False)
    out = np.full(len(keys), np.nan)
    found = ~np.isnan(at)
    out[found] = values[at[found].astype(np.int64)]
    return out


def _ranks(values: pa.Array) -> np.ndarray:
    """Each string's place in sorted order (equal strings share one)."""
    return pc.rank(values, sort_keys="ascending", tiebreaker="min").to_numpy(zero_copy_only=False)
