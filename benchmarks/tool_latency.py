"""Tool latency, memory and disk on synthetic libraries of 100 h, 1,000 h and 3,000 h of video
(issue 2 item 8, issue 24 item 5).

    python benchmarks/tool_latency.py --workdir /work/bench-cache --json out.json   # 100, 1,000, 3,000 h
    python benchmarks/tool_latency.py --hours 2,10 --calls 50                       # a quick run (~2 min)

For each size it builds (or reuses, or resumes a stopped build of, under ``--workdir``; see
``_bench_build.py``) a memory of realistic shape (``_synthetic.py``), then measures:

* build time (generation + ``Memory.write_videos`` in batches), its peak RSS, the seconds per
  100 h along the build, and size on disk by part (graph, lance, frames, manifest);
* in fresh subprocesses (median of ``--cold-repeats``), as a server would start:
  ``import memtools`` (reported apart), ``Memory.open``, the first ``get_summary``, the first
  ``search_nodes`` (loads MiniLM), then ``hold_rows`` (the search rows read into memory) and
  the process RSS after it, with the MiB the held arrays take;
* p50/p99 of every tool, call + ``render()``, with the graph handle kept open between
  calls ("warm", back-to-back calls, the search rows held) and re-opened for every call
  ("reopen": what an agent sees when its calls are more than ``idle_release`` = 1 s apart);
* where the time goes: kuzu queries, lance search, query embedding (mean ms per call);
* with two sizes or more, a projection to 10,000 and 100,000 h (``_projection.py``).

Embeddings. Payload vectors come from ``ClauseEmbedder`` (``_common.py``): every distinct
clause is embedded by the real all-MiniLM-L6-v2 and a payload's vector is the normalised sum
of its clauses' vectors (the clause cache persists in ``--workdir``), so build times are the
store's writing plus the model on new clauses only (reported apart), never the model on every
payload. The memory's manifest names the real default embedder, so the memory is opened
exactly as a user's would be and every search query is embedded by the real MiniLM at search
time (queries never repeat, so the embedder's query cache never answers): the search
latencies include a real query embedding. Keyframes are stored nodes that all point to one
small JPEG, so ``inspect_frames`` reads real files without 30k images on disk.

Run on an otherwise idle machine: the script prints the load average next to its numbers.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_build import build, disk_parts_mb, lance_live_mb, progress_lines  # noqa: E402
from _common import (  # noqa: E402
    dir_size_mb,
    load_average,
    offline,
    rss_mb,
)
from _latency_report import NAVIGATION, report  # noqa: E402
from _projection import projection  # noqa: E402

# --- cold start (child process) ---------------------------------------------------------


def cold_child(path: str, video_id: str, query: str) -> None:
    """Runs in a fresh interpreter, as a server would: open, a first navigation call, a first
    search, then the search rows read into memory. Prints one JSON line."""
    t0 = time.perf_counter()
    from memtools.store import Memory
    from memtools.tools import MemoryTools
    t1 = time.perf_counter()
    memory = Memory.open(path)  # the embedder named in the manifest, loaded lazily
    t_open = time.perf_counter()
    tools = MemoryTools(memory)
    tools.get_summary(video_id).render()
    t2 = time.perf_counter()
    rss_nav = rss_mb()
    tools.search_nodes(query).render()
    t3 = time.perf_counter()
    rss_search = rss_mb()
    rows = memory.vectors.hold_rows() if hasattr(memory.vectors, "hold_rows") else None
    t4 = time.perf_counter()
    print(json.dumps({"import_s": t1 - t0, "open_s": t_open - t1, "open_first_call_s": t2 - t1,
                      "first_search_s": t3 - t2, "rss_nav_mb": rss_nav, "rss_search_mb": rss_search,
                      "hold_s": t4 - t3, "rss_held_mb": rss_mb(),
                      "held_mb": held_mb(rows) if rows is not None else None}))


def cold_start(path: Path, video_id: str, query: str, repeats: int) -> dict:
    runs = []
    for i in range(repeats):
        out = subprocess.run([sys.executable, __file__, "--child-cold", str(path), video_id, f"{query} {i}"],
                             capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {key: None if runs[0][key] is None else sorted(r[key] for r in runs)[len(runs) // 2] for key in runs[0]}


# --- warm tool calls --------------------------------------------------------------------


class Profile:
    """Time spent inside kuzu queries/opens, lance searches and query embedding."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)

    @contextmanager
    def installed(self, embedder):
        from memtools.store.graph.cypher import KuzuGraph
        from memtools.store.tables.vectors import LanceIndex

        patches = [(KuzuGraph, "_run", "kuzu"), (KuzuGraph, "__init__", "kuzu"),
                   (LanceIndex, "search", "lance"), (type(embedder), "embed_query", "embed")]
        originals = [(cls, name, getattr(cls, name)) for cls, name, _ in patches]
        for cls, name, bucket in patches:
            setattr(cls, name, self._timed(getattr(cls, name), bucket))
        try:
            yield self
        finally:
            for cls, name, original in originals:
                setattr(cls, name, original)

    def _timed(self, fn, bucket):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.spent[bucket] += time.perf_counter() - start
        return wrapper


def tool_calls(memory, rng: random.Random, n: int, queries: list[str]) -> dict[str, list]:
    """name -> list of zero-argument callables (each a distinct, valid call)."""
    from memtools.tools import MemoryTools, SearchConfig

    tools = {mode: MemoryTools(memory, search=SearchConfig(mode=mode)) for mode in ("vector", "fulltext", "hybrid")}
    default = MemoryTools(memory)
    bare = MemoryTools(memory, search=SearchConfig.default().model_copy(update={"context_per_hit": 0}))
    videos = memory.manifest.videos
    vids = sorted(videos)
    qs = iter(queries)

    def macro(vid):
        return f"{vid}/macro_{rng.randrange(videos[vid].counts['macro']):04d}"

    def window(vid, lo, hi):
        start = rng.uniform(0, max(0.0, videos[vid].duration - hi))
        return start, start + rng.uniform(lo, hi)

    calls: dict[str, list] = defaultdict(list)
    for _ in range(n):
        vid = rng.choice(vids)
        sup = f"{vid}/super_{rng.randrange(videos[vid].counts['super']):02d}"
        m = macro(vid)
        node = rng.choice([m, f"{m}/ent_{rng.randint(1, 11):03d}", f"{m}/evt_{rng.randint(1, 14):03d}"])
        s1, e1 = window(vid, 60, 600)
        s2, e2 = window(vid, 120, 600)
        calls["list_videos"].append(lambda: default.list_videos())
        calls["get_summary"].append(lambda vid=vid: default.get_summary(vid))
        calls["get_super_events"].append(lambda vid=vid: default.get_super_events(vid))
        calls["get_macro_events"].append(lambda sup=sup: default.get_macro_events(super_id=sup))
        calls["get_subgraph"].append(lambda m=m: default.get_subgraph(m))
        calls["search_by_time"].append(lambda s=s1, e=e1, vid=vid: default.search_by_time(s, e, vid))
        calls["get_relations"].append(lambda node=node: default.get_relations(node))
        calls["inspect_frames"].append(lambda s=s2, e=e2, vid=vid: default.inspect_frames(vid, s, e))
        q1, q2, q3 = next(qs), next(qs), next(qs)
        calls["search_nodes (default)"].append(lambda q=q1: default.search_nodes(q))
        calls["search_nodes (default, video_id)"].append(lambda q=q2, vid=vid: default.search_nodes(q, video_id=vid))
        calls["search_nodes (default, context_per_hit=0)"].append(lambda q=q3: bare.search_nodes(q))
        for mode in ("vector", "fulltext", "hybrid"):
            q = next(qs)
            calls[f"search_nodes ({mode})"].append(lambda q=q, t=tools[mode]: t.search_nodes(q))
    return calls


# hours -> (seconds to read the search rows, RSS before, RSS after, MiB the held arrays take)
HELD: dict[float, tuple[float, float, float, float]] = {}


def held_mb(rows) -> float:
    """MiB of memory the held search rows' arrays take (numpy and arrow; files not counted)."""
    total = 0
    for value in vars(rows).values():
        if isinstance(value, dict):
            total += 100 * len(value)  # the video slices
        total += getattr(value, "nbytes", 0) if not isinstance(value, int) else 0
        inner = None if hasattr(value, "nbytes") else getattr(value, "offsets", None)  # payloads' offsets
        total += getattr(inner, "nbytes", 0)
    return total / (1 << 20)



def measure(path: Path, hours: float, n: int, seed: int, reopen_n: int, first_n: int = 50,
            only: str = "") -> dict[str, dict]:
    import _synthetic
    from memtools.embed import default_embedder
    from memtools.store import Memory

    embedder = default_embedder()
    # Queries differ per library size too: one process measures several sizes, and the
    # embedder's LRU must never answer (a real agent's queries are new text).
    queries = _synthetic.queries(13 * (n + reopen_n) + 80, seed * 100_000 + round(hours * 10))
    results: dict[str, dict] = {}
    with Memory.open(path, embedder) as memory:
        for query in queries[-80:-40]:  # torch's first calls per input length are slow
            embedder.embed_query(query)
        if hasattr(memory.vectors, "hold_rows"):  # a running server's state: its search rows are in memory
            before, start = rss_mb(), time.perf_counter()
            rows = memory.vectors.hold_rows()
            HELD[hours] = (time.perf_counter() - start, before, rss_mb(), held_mb(rows) if rows else float("nan"))
        warmup = tool_calls(memory, random.Random(seed + 1), 2, queries[-40:])
        for fns in warmup.values():
            for fn in fns:
                fn().render()
        calls = {k: v for k, v in tool_calls(memory, random.Random(seed), n, queries).items() if k.startswith(only)}
        profile = Profile()
        with profile.installed(embedder):
            for name, fns in calls.items():
                times, cpu = [], []
                profile.spent.clear()
                for fn in fns:
                    start, cpu_start = time.perf_counter(), time.process_time()
                    fn().render()
                    times.append(time.perf_counter() - start)
                    cpu.append(time.process_time() - cpu_start)  # all threads: what a loaded machine inflates less
                per_call = {k: v / len(fns) * 1000 for k, v in profile.spent.items()}
                results[name] = {"times": times, "cpu": cpu, "profile": per_call}
        # The first call per video: the cached outlines (root, super and macro events) dropped
        # before every call, so each call reads its video's outline from the graph again.
        for name in NAVIGATION:
            if name not in calls:
                continue
            times = []
            for fn in calls[name][:first_n]:
                memory._outlines.clear()
                start = time.perf_counter()
                fn().render()
                times.append(time.perf_counter() - start)
            results[name]["first"] = times
    if reopen_n:
        # idle_release=0: the read-only graph is opened and closed around every call.
        with Memory.open(path, embedder, idle_release=0) as memory:
            if hasattr(memory.vectors, "hold_rows"):
                memory.vectors.hold_rows()
            calls = {k: v for k, v in tool_calls(memory, random.Random(seed + 2), reopen_n, queries[13 * n:]).items()
                     if k.startswith(only)}
            for name, fns in calls.items():
                times = []
                for fn in fns:
                    start = time.perf_counter()
                    fn().render()
                    times.append(time.perf_counter() - start)
                results[name]["reopen"] = times
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hours", default="100,1000,3000", help="comma-separated library sizes in hours")
    parser.add_argument("--calls", type=int, default=200, help="warm calls per tool and size")
    parser.add_argument("--reopen-calls", type=int, default=30,
                        help="calls per tool with the graph re-opened each time")
    parser.add_argument("--cold-repeats", type=int, default=3, help="fresh subprocesses per size (median kept)")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp"), help="where memories are built and cached")
    parser.add_argument("--rebuild", action="store_true", help="rebuild memories even when cached")
    parser.add_argument("--batch-hours", type=float, default=100.0, help="hours of video per write batch")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--only", default="", help="measure only the tools whose name starts with this")
    parser.add_argument("--json", type=Path, help="also write the raw numbers here")
    parser.add_argument("--build-only", action="store_true", help="build (or find) the memories and stop")
    parser.add_argument("--child-cold", nargs=3, metavar=("PATH", "VIDEO", "QUERY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_cold:
        cold_child(*args.child_cold)
        return
    import _synthetic

    args.workdir.mkdir(parents=True, exist_ok=True)
    sizes = []
    for hours in [float(h) for h in args.hours.split(",")]:
        path, stats = build(hours, args.seed, args.workdir, args.rebuild, args.batch_hours)
        if args.build_only:
            print(json.dumps(stats))
            continue
        load_start = load_average()
        print(f"measuring {hours:g} h (load {load_start})", file=sys.stderr)
        video = _synthetic.plan_videos(hours, args.seed)[0][0]
        started = time.perf_counter()
        cold = cold_start(path, video, "man with glasses repairing a bicycle", args.cold_repeats)
        cold_s, started = time.perf_counter() - started, time.perf_counter()
        tools = measure(path, hours, args.calls, args.seed, args.reopen_calls, only=args.only)
        print(f"  measured in {cold_s:.0f} s (cold) + {time.perf_counter() - started:.0f} s (warm, reopen); "
              f"load {load_average()}", file=sys.stderr)
        sizes.append({"hours": hours, "build": stats, "disk_mb": dir_size_mb(path),
                      "disk_parts_mb": disk_parts_mb(path), "lance_live_mb": lance_live_mb(path),
                      "progress": progress_lines(path), "cold": cold,
                      "tools": tools, "rss_mb": rss_mb(),
                      "held": HELD.get(hours), "load": [load_start, load_average()],
                      "measure_s": [cold_s, time.perf_counter() - started]})
        if args.json:  # after every size: a run stopped at a larger size keeps the smaller ones
            args.json.write_text(json.dumps(sizes, indent=1, default=str))
    if args.build_only:
        return
    print(f"\n## Tool latency (load average at the end: {load_average()}; "
          f"{args.calls} warm + {args.reopen_calls} reopen calls per tool)\n")
    print(report(sizes, HELD))
    if len(sizes) >= 2:
        measured = ", ".join(f"{s['hours']:g}" for s in sizes)
        print(f"\n## Projection (fitted over {measured} h; how: benchmarks/_projection.py)\n")
        print(projection(sizes))


if __name__ == "__main__":
    offline()
    main()
