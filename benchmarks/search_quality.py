"""Search quality on real annotations.

    python benchmarks/search_quality.py --dataset activitynet            # the main yardstick (_annotations.py)
    python benchmarks/search_quality.py --dataset activitynet --limit 0  # all 8,393 val_2 queries
    python benchmarks/search_quality.py --dataset youcook2               # steps of 436 cooking videos
    python benchmarks/search_quality.py --dataset activitynet --headroom # what a reranker could add (_headroom.py)

The rest of this docstring is the ``charades`` dataset (the default, issue 2): Charades actions as
memory, Charades-STA sentences as queries.

    python benchmarks/search_quality.py                # 2,000 queries, a fixed sample (~12 min)
    python benchmarks/search_quality.py --limit 300    # a quick run (~2 min once the memory is cached)
    python benchmarks/search_quality.py --limit 0      # all 12,408 queries (~1 h on 2 cores)

The memory holds the 5,338 Charades train videos that Charades-STA queries, each built with
``graph_from_captions`` from what a perception model could see: its time-stamped actions
(class text of ``Charades_v1_classes.txt``, e.g. "Putting a book somewhere") as micro-events,
its objects (OBJECT entities) and scene (a LOCATION entity). Never the videos' descriptions or
scripts, which the STA sentences were written from. Annotations are read in place from
``--data`` (default ``../shared/data``).

Each STA query ``VIDEO start end##sentence`` is searched exactly as ``search_nodes`` ranks
(``LanceIndex.search`` with the tool's typed filter) in the three ``SearchConfig`` modes:

* within video: ``video_id`` filter; library-wide: no filter, and a hit counts only if it is
  in the query's video;
* a hit is correct when the temporal IoU of its window and the query's window is >= 0.5.
  A hit's window is the node's own ``t_start``/``t_end`` as the tool returns it: an event's
  is its action interval; an entity's or macro's is its macro event's span, a super event's
  its phase, so those rarely reach IoU 0.5 (that is the point of showing "all kinds" next
  to "events only": it is what an agent sees when it does not restrict node types). Both
  windows are clipped to the video's length (Charades action ends run past it).

Recall@1 and Recall@5 are the share of queries with a correct hit at rank 1 / in the top 5.
Embedding is the real all-MiniLM-L6-v2; document texts repeat a lot (157 action classes), so
each distinct text is embedded once (``CachedEmbedder``), and queries are embedded in batches
(the same vectors ``embed_query`` gives, up to float rounding). The memory is cached under
``--workdir`` and reused.
"""

from __future__ import annotations

import argparse
import csv
import math
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _annotations import Query, iou  # noqa: E402
from _common import CachedEmbedder, load_average, markdown_table, offline  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
DEFAULT_LIMIT = 2000
MODES = ("vector", "fulltext", "hybrid")
KIND_SETS = {"events only": ["event"], "all kinds": ["super", "macro", "entity", "event", "ocr"]}
DONE = "bench-build.txt"


def read_charades(data: Path):
    """(videos by id from the train CSV, class text by id, STA queries)."""
    classes = {}
    for line in (data / "charades" / "Charades_v1_classes.txt").read_text(encoding="utf-8").splitlines():
        if line.strip():
            cid, text = line.split(" ", 1)
            classes[cid] = text.strip()
    with open(data / "charades" / "Charades_v1_train.csv", encoding="utf-8", newline="") as handle:
        videos = {row["id"]: row for row in csv.DictReader(handle)}
    queries = []
    for line in (data / "charades-sta" / "charades_sta_train.txt").read_text(encoding="utf-8").splitlines():
        if "##" not in line:
            continue
        head, sentence = line.split("##", 1)
        vid, start, end = head.split()
        length = float(videos[vid]["length"])
        queries.append(Query(vid, min(float(start), length), min(float(end), length), sentence.strip()))
    return videos, classes, queries


def captioned(row: dict, classes: dict[str, str]):
    from memtools.importers.captions import Caption, CaptionedVideo
    from memtools.schema import EntityType

    length = float(row["length"])
    captions = []
    for action in filter(None, row["actions"].split(";")):
        cid, start, end = action.split()
        s, e = min(float(start), length), min(float(end), length)
        captions.append(Caption(s, max(s, e), classes[cid]))
    entities = [(o.strip(), EntityType.OBJECT) for o in row["objects"].split(";") if o.strip()]
    if row["scene"].strip():
        entities.append((row["scene"].strip(), EntityType.LOCATION))
    return CaptionedVideo(video_id=row["id"], captions=captions, duration=length, title=row["id"], entities=entities)


def build_memory(path: Path, videos: dict, classes: dict, video_ids: list[str], embedder) -> float:
    from memtools.importers.captions import graph_from_captions
    from memtools.store import Memory

    if (path / DONE).is_file():
        return float((path / DONE).read_text())
    import shutil

    shutil.rmtree(path, ignore_errors=True)
    start = time.perf_counter()
    with Memory.create(path, embedder) as memory:
        graphs = (graph_from_captions(captioned(videos[v], classes)) for v in video_ids)
        memory.write_videos(graphs, batch_size=1000, progress=lambda n: print(
            f"  {n}/{len(video_ids)} videos written, {time.perf_counter() - start:.0f} s, "
            f"{embedder.cache.model_calls} distinct texts embedded", file=sys.stderr))
    seconds = time.perf_counter() - start
    embedder.cache.save()
    (path / DONE).write_text(f"{seconds:.1f}")
    return seconds


def matching_actions(q: Query, video) -> list[str]:
    """Class texts of the video's actions whose window has IoU >= 0.5 with the query's."""
    return [c.text for c in video.captions if iou(c.start, c.end, q.start, q.end) >= 0.5]


def chance(queries: list[Query], captioned_by_id: dict) -> tuple[float, float]:
    """Expected Recall@1 / @5 of a random ranking of the query video's events (within video)."""
    r1 = r5 = 0.0
    for q in queries:
        caps = captioned_by_id[q.video_id].captions
        n, k = len(caps), sum(iou(c.start, c.end, q.start, q.end) >= 0.5 for c in caps)
        r1 += k / n
        r5 += 1 - math.comb(n - k, 5) / math.comb(n, 5) if n > 5 else float(k > 0)
    return 100 * r1 / len(queries), 100 * r5 / len(queries)


SCOPES = ("within video", "library-wide", "library-wide, same action class")


def evaluate(memory, queries: list[Query], vectors, captioned_by_id: dict, top_k: int = 5) -> tuple[dict, dict]:
    """(hits[(scope, kinds, mode)] = [r1 count, r5 count], seconds per search by mode).

    "library-wide, same action class" reuses the library-wide searches and counts a hit when
    its text is the class of an action of the query's video that matches the query's window
    (in any video): the 157 classes recur in thousands of videos, so this separates finding
    the right action from finding the right video, which the text alone cannot tell apart.
    """
    from memtools.store.base import SearchFilter, SearchQuery

    counts: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    seconds: dict[str, list[float]] = defaultdict(list)
    index = memory.vectors
    for n, (q, vector) in enumerate(zip(queries, vectors, strict=True), 1):
        classes = set(matching_actions(q, captioned_by_id[q.video_id]))
        for scope in SCOPES[:2]:
            for kinds_name, kinds in KIND_SETS.items():
                where = SearchFilter(video_ids=(q.video_id,) if scope == "within video" else None, kinds=kinds or ())
                for mode in MODES:
                    started = time.perf_counter()
                    hits = index.search(SearchQuery(mode, top_k, vector, q.text, where))
                    seconds[mode].append(time.perf_counter() - started)
                    good = [h.video_id == q.video_id and iou(h.t_start, h.t_end, q.start, q.end) >= 0.5 for h in hits]
                    _count(counts[(scope, kinds_name, mode)], good)
                    if scope == "library-wide":
                        _count(counts[(SCOPES[2], kinds_name, mode)],
                               [h.kind == "event" and h.text in classes for h in hits])
        if n % 250 == 0:
            print(f"  {n}/{len(queries)} queries", file=sys.stderr)
    return counts, seconds


def _count(cell: list[int], good: list[bool]) -> None:
    cell[0] += bool(good[:1] and good[0])
    cell[1] += any(good[:5])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder (read in place)")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp"), help="where the memory is built and cached")
    parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT,
                        help="queries to run, a fixed random sample (seed 0); 0 = all 12,408 "
                             f"(default {DEFAULT_LIMIT})")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dataset", choices=("charades", "activitynet", "youcook2"), default="charades")
    parser.add_argument("--presets", nargs="*",
                        help="SearchConfig presets to score (activitynet/youcook2; default all)")
    parser.add_argument("--headroom", action="store_true",
                        help="activitynet/youcook2: instead of scoring presets, measure candidate recall@N of the "
                             "first stage (the R@1 an oracle reranker over N would give) for the first preset "
                             "given (default: the default preset)")
    parser.add_argument("--open-videos", type=int, default=None, metavar="N",
                        help="--headroom: open this many videos in coarse-to-fine stage 2 (SearchConfig.videos) "
                             "instead of the preset's")
    args = parser.parse_args()
    if args.headroom and args.dataset == "charades":
        parser.error("--headroom runs on --dataset activitynet or youcook2")
    if args.headroom:
        from _headroom import run_headroom

        run_headroom(args, args.dataset)
        return
    if args.dataset != "charades":
        from _annotations import run

        run(args, args.dataset)
        return

    from memtools.embed import default_embedder
    from memtools.store import Memory

    videos, classes, queries = read_charades(args.data)
    video_ids = sorted({q.video_id for q in queries})
    embedder = CachedEmbedder(default_embedder(), args.workdir / "memtools-charades-texts.npz")
    path = args.workdir / "memtools-charades-sta"
    print(f"memory of {len(video_ids)} Charades videos -> {path}", file=sys.stderr)
    build_s = build_memory(path, videos, classes, video_ids, embedder)

    sample = queries if args.limit <= 0 or args.limit >= len(queries) else \
        sorted(random.Random(args.seed).sample(queries, args.limit), key=queries.index)
    started = time.perf_counter()
    texts = [q.text for q in sample]
    embedder.cache.fill(texts)  # batched real-model vectors for the query sentences
    vectors = [embedder.cache.vectors[t] for t in texts]
    embed_s = time.perf_counter() - started
    embedder.cache.save()

    captioned_by_id = {v: captioned(videos[v], classes) for v in {q.video_id for q in sample}}
    with Memory.open(path, embedder) as memory:
        rows = memory.vectors.count()
        started = time.perf_counter()
        counts, seconds = evaluate(memory, sample, vectors, captioned_by_id)
        eval_s = time.perf_counter() - started

    n = len(sample)
    table = []
    for scope in SCOPES:
        for kinds_name in KIND_SETS:
            row = [scope, kinds_name]
            for mode in MODES:
                r1, r5 = counts[(scope, kinds_name, mode)]
                row.append(f"{100 * r1 / n:.1f} / {100 * r5 / n:.1f}")
            table.append(row)
    print("\n## Search quality: Charades-STA train queries over a Charades actions+objects+scene memory\n")
    print(f"{n:,} of {len(queries):,} queries ({'all' if n == len(queries) else f'random sample, seed {args.seed}'}); "
          f"{len(video_ids):,} videos, {rows:,} searchable nodes; Recall@1 / Recall@5 in %, temporal IoU >= 0.5.\n")
    print(markdown_table(["scope", "node types", *(f"{m} R@1 / R@5" for m in MODES)], table))
    r1, r5 = chance(sample, captioned_by_id)
    print(f"\nChance (a random order of the video's events, within video): R@1 {r1:.1f} / R@5 {r5:.1f}.")
    speed = ", ".join(f"{m} {1000 * sum(s) / len(s):.1f} ms" for m, s in seconds.items())
    print(f"\nbuild {build_s:.0f} s (cached after the first run), query embedding {embed_s:.0f} s, "
          f"searches {eval_s:.0f} s (mean per search: {speed}); load {load_average()}")


if __name__ == "__main__":
    offline()
    main()
