"""The lone-query path (int16 weights, ``memtools.embed.bert_query``) answers as today's float32
query embedding does (issue 24).

    python benchmarks/query_embedding_check.py --workdir /tmp --limit 2000

On the ActivityNet protocol (``_annotations.py``: val_1 memory, val_2 queries), every query is
embedded twice by the numpy MiniLM, by the float32 encoder (``NumpyBert.encode``: what
``embed_query`` ran before) and by the lone-query path, and searched with each vector by
``search_nodes`` (default preset, top_k 5, within its video and library-wide) in one process on
one memory. Prints the cosine between the two vectors, the share of queries whose top-5 ids, times
and order are identical, R@1 / R@5 of both, and each path's median CPU time per query.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _annotations import dev_check_arguments, dev_memory, iou  # noqa: E402
from _common import offline  # noqa: E402


def main() -> None:
    args = dev_check_arguments(__doc__)

    from memtools.blas import blas_threads
    from memtools.embed import default_embedder
    from memtools.store import Memory
    from memtools.tools import MemoryTools

    model_embedder = default_embedder()
    path, embedder, queries, sample = dev_memory(args, model_embedder)

    model = model_embedder._numpy_model()
    lone = model.query_weights()
    vectors: dict[str, dict[str, np.ndarray]] = {"float32": {}, "int16": {}}
    cpu: dict[str, list[float]] = {"float32": [], "int16": []}
    with blas_threads(1):
        for q in sample:
            if q.text in vectors["float32"]:
                continue
            start = time.thread_time()
            vectors["float32"][q.text] = model.encode([q.text])[0]
            middle = time.thread_time()
            vectors["int16"][q.text] = lone.encode(model.tokenizer.encode(q.text).ids)
            cpu["float32"].append(middle - start)
            cpu["int16"].append(time.thread_time() - middle)
    cosines = np.array([float(vectors["float32"][t] @ vectors["int16"][t]) for t in vectors["float32"]])

    same = {"within video": 0, "library-wide": 0}
    recall = {(name, scope): [0, 0] for name in vectors for scope in same}
    with Memory.open(path, embedder) as memory:
        tools = MemoryTools(memory)
        memory.vectors.hold_rows()
        for n, q in enumerate(sample, 1):
            for scope in same:
                within = q.video_id if scope == "within video" else None
                answers = {}
                for name, by_text in vectors.items():
                    embedder.queries = {q.text: by_text[q.text]}
                    hits = tools.search_nodes(q.text, top_k=5, video_id=within).hits
                    answers[name] = [(h.id, h.t_start, h.t_end) for h in hits]
                    good = [h.video_id == q.video_id and iou(h.t_start, h.t_end, q.start, q.end) >= 0.5 for h in hits]
                    recall[(name, scope)][0] += bool(good[:1] and good[0])
                    recall[(name, scope)][1] += any(good[:5])
                same[scope] += answers["float32"] == answers["int16"]
            if n % 500 == 0:
                print(f"  {n}/{len(sample)} queries", file=sys.stderr)
    total = len(sample)
    print(f"ActivityNet dev, {total:,} val_2 queries ({'all' if total == len(queries) else f'seed {args.seed}'}), "
          f"default preset, top_k 5; query vectors float32 encoder vs lone-query path (int16)")
    print(f"cosine between the two vectors: min {cosines.min():.7f}, median {np.median(cosines):.7f} "
          f"({len(cosines):,} distinct texts)")
    for scope, count in same.items():
        (r1a, r5a), (r1b, r5b) = recall[("float32", scope)], recall[("int16", scope)]
        print(f"{scope}: identical top-5 {count / total:.4f}; R@1 {r1a / total:.4f} -> {r1b / total:.4f}, "
              f"R@5 {r5a / total:.4f} -> {r5b / total:.4f}")
    print(f"CPU time per query embedding (median, one BLAS thread): float32 {np.median(cpu['float32']) * 1000:.2f} ms, "
          f"int16 {np.median(cpu['int16']) * 1000:.2f} ms")


if __name__ == "__main__":
    offline()
    main()
