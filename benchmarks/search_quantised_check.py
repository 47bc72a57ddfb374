"""Held search rows with int8 vectors answer as the exact float32 path does (issue 24).

    python benchmarks/search_quantised_check.py --workdir /tmp --limit 2000

On the ActivityNet protocol (``_annotations.py``: val_1 memory, val_2 queries), every query is
searched twice by ``search_nodes`` (default preset, top_k 5, within its video and library-wide)
in one process on one memory: once as shipped (rows ranked by their int8 vectors, the rows that
can reach the top re-scored in float32) and once with every row scored in float32 (what held
rows did before). Prints the share of queries whose top-5 ids and order are identical, and
R@1 / R@5 of both.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _annotations import dev_check_arguments, dev_memory, iou  # noqa: E402
from _common import offline  # noqa: E402


def main() -> None:
    args = dev_check_arguments(__doc__)

    from memtools.embed import default_embedder
    from memtools.store import Memory
    from memtools.store.tables import resident
    from memtools.tools import MemoryTools

    path, embedder, queries, sample = dev_memory(args, default_embedder())
    embedder.cache.fill([q.text for q in sample])
    embedder.queries = {q.text: embedder.cache.vectors[q.text] for q in sample}

    quantised = resident.candidates

    def every_row(scores: np.ndarray, bounds: np.ndarray, limit: int) -> np.ndarray:
        return np.arange(len(scores))  # every row re-scored in float32: the exact path

    same = {"within video": 0, "library-wide": 0}
    recall = {(path, scope): [0, 0] for path in ("exact", "int8") for scope in same}
    rescored: list[float] = []
    with Memory.open(path, embedder) as memory:
        tools = MemoryTools(memory)
        held = memory.vectors.hold_rows()
        assert held is not None, "the memory's rows were not held (MEMTOOLS_RESIDENT_MB?)"

        def counting(scores: np.ndarray, bounds: np.ndarray, limit: int) -> np.ndarray:
            kept = quantised(scores, bounds, limit)
            rescored.append(len(kept) / max(len(scores), 1))
            return kept

        for n, q in enumerate(sample, 1):
            for scope in same:
                within = q.video_id if scope == "within video" else None
                answers = {}
                for name, pick in (("exact", every_row), ("int8", counting)):
                    resident.candidates = pick
                    hits = tools.search_nodes(q.text, top_k=5, video_id=within).hits
                    answers[name] = [(h.id, h.t_start, h.t_end) for h in hits]
                    good = [h.video_id == q.video_id and iou(h.t_start, h.t_end, q.start, q.end) >= 0.5 for h in hits]
                    recall[(name, scope)][0] += bool(good[:1] and good[0])
                    recall[(name, scope)][1] += any(good[:5])
                same[scope] += answers["exact"] == answers["int8"]
            if n % 500 == 0:
                print(f"  {n}/{len(sample)} queries", file=sys.stderr)
        resident.candidates = quantised
    total = len(sample)
    print(f"ActivityNet dev, {total:,} val_2 queries ({'all' if total == len(queries) else f'seed {args.seed}'}), "
          f"{len(held):,} held rows, default preset, top_k 5")
    for scope, count in same.items():
        (r1e, r5e), (r1q, r5q) = recall[("exact", scope)], recall[("int8", scope)]
        print(f"{scope}: identical top-5 {count / total:.4f}; R@1 {r1e / total:.4f} -> {r1q / total:.4f}, "
              f"R@5 {r5e / total:.4f} -> {r5q / total:.4f}")
    if rescored:
        print(f"rows re-scored in float32 where a query asked for fewer than it filtered: "
              f"median {np.median(rescored):.4f}, max {max(rescored):.4f} of them ({len(rescored)} queries)")


if __name__ == "__main__":
    offline()
    main()
