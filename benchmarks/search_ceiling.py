"""How far can the memory's own text signals rank the right video? (issue 8, evidence for its targets)

    python benchmarks/search_quality.py --dataset activitynet     # builds and caches the memory first
    python benchmarks/search_ceiling.py                           # then this (~1 min)

Reads the cached ActivityNet memory (``/tmp/memtools-activitynet``: val_1 captions) and the
cached query vectors of ``search_quality.py``'s 2,000-query sample, and scores every video for
every query with each signal the hierarchy offers, computed exactly over the whole library (no
candidate cut-off): the best caption (event row), the best macro / super event, the root
profile, the centroid of the video's captions, BM25 over all its captions, and z-score fusions
of them. It prints the share of queries whose video ranks in the top 1/2/3/5/10, and the
within-video ceilings of temporal IoU >= 0.5 for single captions and for any span of
consecutive captions. Nothing here is tuned per query.
"""

from __future__ import annotations

import argparse
import math
import random
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _annotations import iou, read_queries  # noqa: E402
from _common import markdown_table  # noqa: E402

STOP = set("a an the is are was were be been of to and in on with his her their he she they it its as at by for "
           "from this that while then into up down out over there who which them him".split())


def load(workdir: Path, data: Path, limit: int, seed: int):
    import lancedb

    table = lancedb.connect(str(workdir / "memtools-activitynet" / "vectors")).open_table("nodes").to_arrow()
    cols = {c: table.column(c).to_pylist() for c in ("video_id", "kind", "t_start", "t_end", "text")}
    vectors = np.array(table.column("vector").to_pylist(), dtype=np.float32)
    queries = read_queries(data / "activitynet-dev" / "val_2.json")
    sample = sorted(random.Random(seed).sample(queries, limit), key=queries.index)
    cache = np.load(workdir / "memtools-activitynet-texts.npz", allow_pickle=False)
    where = {t: i for i, t in enumerate(cache["texts"].tolist())}
    missing = [q.text for q in sample if q.text not in where]
    if missing:
        sys.exit(f"{len(missing)} query vectors are not cached; run search_quality.py --dataset activitynet first")
    q_vectors = cache["vectors"][[where[q.text] for q in sample]].astype(np.float32)
    return cols, vectors, sample, q_vectors


def per_video_max(sims: np.ndarray, rows: np.ndarray, row_video: np.ndarray, n_videos: int) -> np.ndarray:
    out = np.full((sims.shape[0], n_videos), -1.0, dtype=np.float32)
    order = rows[np.argsort(row_video[rows], kind="stable")]
    bounds = np.searchsorted(row_video[order], np.arange(n_videos + 1))
    for v in range(n_videos):
        if bounds[v + 1] > bounds[v]:
            out[:, v] = sims[:, order[bounds[v]:bounds[v + 1]]].max(1)
    return out


def bm25(texts_by_video: dict[int, list[str]], n_videos: int, queries: list[str]) -> np.ndarray:
    tokens = {v: [w for t in ts for w in re.findall(r"[a-z0-9]+", t.lower()) if w not in STOP]
              for v, ts in texts_by_video.items()}
    df = Counter(w for ws in tokens.values() for w in set(ws))
    idf = {w: math.log(1 + (n_videos - n + 0.5) / (n + 0.5)) for w, n in df.items()}
    avg = np.mean([len(ws) for ws in tokens.values()])
    postings = defaultdict(list)
    for v, ws in tokens.items():
        for w, f in Counter(ws).items():
            postings[w].append((v, f, len(ws)))
    out = np.zeros((len(queries), n_videos), dtype=np.float32)
    for k, q in enumerate(queries):
        for w in set(re.findall(r"[a-z0-9]+", q.lower())) - STOP:
            for v, f, n in postings.get(w, ()):
                out[k, v] += idf[w] * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * n / avg))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp"), help="search_quality.py's --workdir")
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    parser.add_argument("--limit", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    cols, vectors, sample, q = load(args.workdir, args.data, args.limit, args.seed)
    kind = np.array(cols["kind"])
    videos = sorted(set(cols["video_id"]))
    index = {v: i for i, v in enumerate(videos)}
    row_video = np.array([index[v] for v in cols["video_id"]])
    right = np.array([index[x.video_id] for x in sample])
    sims = q @ vectors.T
    signal = {name: per_video_max(sims, np.where(kind == k)[0], row_video, len(videos))
              for name, k in (("best caption", "event"), ("best macro", "macro"), ("best super", "super"),
                              ("root profile", "video"))}
    events = np.where(kind == "event")[0]
    centroid = np.zeros((len(videos), vectors.shape[1]), dtype=np.float32)
    np.add.at(centroid, row_video[events], vectors[events])
    centroid /= np.linalg.norm(centroid, axis=1, keepdims=True) + 1e-9
    signal["caption centroid"] = q @ centroid.T
    captions = defaultdict(list)
    for i in events:
        captions[row_video[i]].append(cols["text"][i])
    signal["BM25, all captions"] = bm25(captions, len(videos), [x.text for x in sample])

    def z(x):
        return (x - x.mean(1, keepdims=True)) / (x.std(1, keepdims=True) + 1e-9)

    signal["z: caption + root + centroid"] = (z(signal["best caption"]) + z(signal["root profile"])
                                              + z(signal["caption centroid"]))
    signal["z: caption + root + centroid + 0.2 BM25"] = signal["z: caption + root + centroid"] + \
        0.2 * z(signal["BM25, all captions"])
    rows = []
    for name, score in signal.items():
        rank = (score > score[np.arange(len(right)), right][:, None]).sum(1)
        rows.append([name, *(f"{np.mean(rank < k):.3f}" for k in (1, 2, 3, 5, 10))])
    print(f"\n## Video ranking ceilings: ActivityNet, {len(sample):,} queries, {len(videos):,} videos\n")
    print(markdown_table(["signal (exact, whole library)", "video @1", "@2", "@3", "@5", "@10"], rows))
    spans = defaultdict(list)
    for i in events:
        spans[row_video[i]].append((cols["t_start"][i], cols["t_end"][i]))
    single = union = 0
    for x, v in zip(sample, right, strict=True):
        caps = sorted(spans[v])
        single += any(iou(s, e, x.start, x.end) >= 0.5 for s, e in caps)
        union += any(iou(min(caps[a][0] for a in range(i, j + 1)), max(caps[a][1] for a in range(i, j + 1)),
                         x.start, x.end) >= 0.5 for i in range(len(caps)) for j in range(i, len(caps)))
    print(f"\nWithin the right video, a window at temporal IoU >= 0.5 exists for {single / len(sample):.3f} of the "
          f"queries among single captions and {union / len(sample):.3f} among spans of consecutive captions.")


if __name__ == "__main__":
    main()
