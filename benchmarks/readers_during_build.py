"""Reader errors while another process writes, per graph engine (kuzu 0.11.3 vs ladybug 0.22).

For each engine, in a process of its own (kuzu and ladybug cannot be imported together):
a memory holding one video is made; a writer process then writes ``--videos`` videos, one atomic
write each (as ``memtools build`` does), while this process calls tools in a loop through
``MemoryTools`` (get_summary, search_nodes, get_subgraph, get_relations, search_by_time, in
turn), as an MCP server beside a build would. Printed per engine: calls, busy errors ("memory is
being updated"), other errors, p50/p99 call latency, and the writer's wall time.

    python benchmarks/readers_during_build.py                 # both engines, 20 videos, --busy-timeout 3
    python benchmarks/readers_during_build.py --busy-timeout 0 --videos 40

Embeddings come from the test embedder (hash vectors): what is measured is the graph engine's
sharing rule, not the model.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, markdown_table, offline, p50_p99  # noqa: E402

WRITER = textwrap.dedent("""
    import sys
    from memtools.embed.testing import TestEmbedder
    from memtools.store import Memory
    from memtools.testing import kitchen_graph
    memory = Memory.open(sys.argv[1], TestEmbedder(64))
    for i in range(int(sys.argv[2])):
        memory.write_video(kitchen_graph(f"w{i:03d}"))
""")

CALLS = (
    lambda t: t.get_summary("kitchen"),
    lambda t: t.search_nodes("pan catches fire", top_k=5),
    lambda t: t.get_subgraph("kitchen/macro_0002"),
    lambda t: t.get_relations("kitchen/macro_0002/evt_001"),
    lambda t: t.search_by_time(100, 200, video_id="kitchen"),
)


def measure(engine: str, videos: int, busy_timeout: float, workdir: Path) -> dict:
    """One engine, in this process: the reader loop beside a writer process."""
    from memtools.embed.testing import TestEmbedder
    from memtools.errors import MemoryBusy, ToolBusy
    from memtools.store import Memory
    from memtools.testing import kitchen_graph
    from memtools.tools import MemoryTools

    path = workdir / f"memory-{engine}"
    shutil.rmtree(path, ignore_errors=True)
    with Memory.create(path, TestEmbedder(64), graph_engine=engine) as memory:
        memory.write_video(kitchen_graph())
    reader = Memory.open(path, TestEmbedder(64), busy_timeout=busy_timeout)
    tools = MemoryTools(reader)
    CALLS[0](tools)  # open the graph and the tables once, as a warm server would have
    seconds: list[float] = []
    busy = other = 0
    errors: list[str] = []
    reasons: set[str] = set()
    started = time.perf_counter()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(videos)], stderr=subprocess.PIPE,
                              text=True)
    n = 0
    while writer.poll() is None:
        call = CALLS[n % len(CALLS)]
        n += 1
        t0 = time.perf_counter()
        try:
            call(tools)
        except (MemoryBusy, ToolBusy) as exc:
            busy += 1
            root: BaseException = exc
            while root.__cause__ is not None:  # the engine's own text, at the end of the chain
                root = root.__cause__
            reasons.add(str(root).splitlines()[0][:160])
        except Exception as exc:  # noqa: BLE001 - counted and shown: any other error is a finding
            other += 1
            errors.append(f"{type(exc).__name__}: {exc}"[:200])
        seconds.append(time.perf_counter() - t0)
    wall = time.perf_counter() - started
    _, err = writer.communicate()
    if writer.returncode != 0:
        raise SystemExit(f"the {engine} writer failed:\n{err}")
    written = len(reader.video_ids()) - 1
    reader.close()
    p50, p99 = p50_p99(seconds)
    return {"engine": engine, "calls": len(seconds), "busy": busy, "other": other, "p50_ms": p50,
            "p99_ms": p99, "writer_s": wall, "written": written, "errors": sorted(set(errors))[:5],
            "busy_reasons": sorted(reasons)[:5]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engines", default="kuzu,ladybug")
    parser.add_argument("--videos", type=int, default=20, help="videos the writer writes, one write each")
    parser.add_argument("--busy-timeout", type=float, default=3.0,
                        help="seconds a read waits for a writer before answering busy (Memory's default: 3)")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    offline()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="readers-during-build-"))
    workdir.mkdir(parents=True, exist_ok=True)
    if args.child:
        print(json.dumps(measure(args.child, args.videos, args.busy_timeout, workdir)))
        return
    rows = []
    for engine in args.engines.split(","):
        run = subprocess.run([sys.executable, __file__, "--child", engine, "--videos", str(args.videos),
                              "--busy-timeout", str(args.busy_timeout), "--workdir", str(workdir)],
                             capture_output=True, text=True)
        if run.returncode != 0:
            print(f"{engine}: failed\n{run.stdout[-2000:]}{run.stderr[-2000:]}", file=sys.stderr)
            continue
        r = json.loads(run.stdout.strip().splitlines()[-1])
        rows.append([r["engine"], r["written"], f"{r['writer_s']:.1f}", r["calls"], r["busy"], r["other"],
                     f"{r['p50_ms']:.1f}", f"{r['p99_ms']:.0f}"])
        for line in r["errors"]:
            print(f"{engine} error: {line}", file=sys.stderr)
        for line in r["busy_reasons"]:
            print(f"{engine} busy because: {line}", file=sys.stderr)
    print(f"Reader tool calls while a writer process writes {args.videos} videos one write each "
          f"(busy timeout {args.busy_timeout:g} s):\n")
    print(markdown_table(["engine", "videos written", "writer wall s", "calls", "busy errors", "other errors",
                          "p50 ms", "p99 ms"], rows))
    print(f"\nload average: {load_average()}")
    shutil.rmtree(workdir, ignore_errors=True) if args.workdir is None else None


if __name__ == "__main__":
    main()
