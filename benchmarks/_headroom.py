"""Reranking headroom on the ActivityNet protocol (``search_quality.py --headroom``).

A reranker reorders the first N moments of the first stage (``SearchConfig.rerank_candidates``);
it can only promote a correct moment that is among them. So, per scope, this measures
**candidate recall@N**: the share of queries with a correct moment (right video, temporal IoU
>= 0.5) among the first N moments of ``search_nodes``' first stage, for N = 5, 10, 20, 50, 100.
An oracle reranker over those N puts a correct one first, so its R@1 (and R@5) equals
recall@N: the most any reranker can reach on this data, next to the first stage's own R@1/R@5.

The moments are the tool's own: ``search_library`` called as ``search_nodes`` calls it, asked
for 100 moments (the first N of those are exactly the first N the tool ranks for any top_k).
"""

from __future__ import annotations

import sys
import time

from _annotations import iou, prepare
from _common import markdown_table

DEPTHS = (5, 10, 20, 50, 100)
SCOPES = ("within video", "library-wide")


def first_correct(memory, tools, config, query, scope: str) -> int | None:
    """0-based place of the first correct moment among the first max(DEPTHS), or None."""
    from memtools.retrieval.library import search_library
    from memtools.retrieval.moments import Moment
    from memtools.store.base import SearchQuery
    from memtools.tools.searching import SEARCHABLE

    within = query.video_id if scope == "within video" else None
    text, filters = tools._filters(query.text, 5, None, within, None, None, None)
    vector = memory.embedder.embed_query(text)
    with tools._reading():
        if config.strategy == "flat":
            hits = memory.vectors.search(SearchQuery(config.mode, max(DEPTHS), vector, text, filters.filter()))
            moments = [Moment.from_hit(h) for h in hits]
        else:
            moments = search_library(memory.vectors, vector, text, config, filters, SEARCHABLE, tools._video_rows,
                                     top_k=max(DEPTHS)).moments
    for place, m in enumerate(moments[:max(DEPTHS)]):
        if m.video_id == query.video_id and iou(m.t_start, m.t_end, query.start, query.end) >= 0.5:
            return place
    return None


def run_headroom(args, dataset: str) -> None:
    from memtools.store import Memory
    from memtools.tools import MemoryTools
    from memtools.tools.search import DEFAULT_PRESET, PRESETS

    ready = prepare(args, dataset)
    path, embedder, videos, queries, sample = ready.path, ready.embedder, ready.videos, ready.queries, ready.sample
    name = (args.presets or [DEFAULT_PRESET])[0]
    config = PRESETS[name]
    if getattr(args, "open_videos", None):
        config = config.model_copy(update={"videos": args.open_videos})
        name += f", videos={args.open_videos}"
    places: dict[str, list[int | None]] = {scope: [] for scope in SCOPES}
    started = time.perf_counter()
    with Memory.open(path, embedder) as memory:
        tools = MemoryTools(memory, search=config)
        for n, q in enumerate(sample, 1):
            for scope in SCOPES:
                places[scope].append(first_correct(memory, tools, config, q, scope))
            if n % 500 == 0:
                print(f"  {n}/{len(sample)} queries", file=sys.stderr)
    seconds = time.perf_counter() - started
    n = len(sample)

    def share(scope: str, depth: int) -> str:
        return f"{sum(p is not None and p < depth for p in places[scope]) / n:.3f}"

    rows = [["first stage R@1 / R@5", *(f"{share(s, 1)} / {share(s, 5)}" for s in SCOPES)]]
    rows += [[f"recall@{d} = oracle-reranked R@1 over {d}", *(share(s, d) for s in SCOPES)] for d in DEPTHS]
    print(f"\n## Reranking headroom: {dataset}, preset {name}\n")
    print(f"{n:,} of {len(queries):,} queries ({'all' if n == len(queries) else f'random sample, seed {args.seed}'});"
          f" {videos:,} videos; a moment is correct when in the query's video at temporal IoU >= 0.5.\n")
    print(markdown_table(["", *SCOPES], rows))
    print(f"\nAn oracle reranker's R@5 over N equals its R@1 (it puts a correct candidate first). "
          f"Evaluation {seconds:.0f} s.")
