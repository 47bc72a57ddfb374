"""The graph-engine policy, measured (issue 33, item 5): kuzu and ladybug side by side in one run.

    python benchmarks/engine_policy.py                          # 100 h and 1,000 h (long: builds both)
    python benchmarks/engine_policy.py --hours 10 --import-mb 2 # a quick run

For each engine, one after the other on the same machine and load:

* the conformance suite (``tests/conformance``) in a child pytest with
  ``MEMTOOLS_TEST_ENGINE=<engine>``: passed, failed, seconds;
* real kills (``crash_random.py --kills K``: SIGKILL at drawn instants and inside the engine's
  commits, every operation): runs, stuck, differing, per engine;
* ``tool_latency.py --hours ...`` on a memory built on that engine (``MEMTOOLS_BENCH_ENGINE``):
  p50 of every tool, warm;
* a ``--import-mb`` MB dense-caption import (``import_bounded.write_file``, the ``test:384``
  embedder) with ``--graph-engine``: seconds and the child's peak RSS.

Prints one table per part, the CPU model and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, markdown_table, p50_p99  # noqa: E402
from import_bounded import write_file  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ENGINES = ("kuzu", "ladybug")


def cpu_model() -> str:
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def pytest_counts(engine: str, paths: list[str]) -> list[str]:
    env = {**os.environ, "MEMTOOLS_TEST_ENGINE": engine}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *paths],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    tail = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-200:]
    count = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|error|errors|skipped|xfailed)", tail)}
    return [str(count.get("passed", 0)), str(count.get("failed", 0) + count.get("error", 0) + count.get("errors", 0)),
            str(count.get("skipped", 0) + count.get("xfailed", 0)), f"{seconds:.0f}"]


def latency(engine: str, hours: str, calls: int, workdir: Path) -> dict[float, dict[str, float]]:
    out = workdir / f"latency-{engine}.json"
    env = {**os.environ, "MEMTOOLS_BENCH_ENGINE": engine}
    subprocess.run([sys.executable, str(ROOT / "benchmarks/tool_latency.py"), "--hours", hours, "--calls", str(calls),
                    "--reopen-calls", "5", "--cold-repeats", "1", "--workdir", str(workdir / engine),
                    "--json", str(out)], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    found: dict[float, dict[str, float]] = {}
    for size in json.loads(out.read_text()):
        found[size["hours"]] = {tool: p50_p99(row["times"])[0] for tool, row in size["tools"].items()}
    return found


def caption_import(engine: str, source: Path, workdir: Path) -> list[str]:
    memory = workdir / f"import-{engine}"
    shutil.rmtree(memory, ignore_errors=True)
    memtools = Path(sys.executable).with_name("memtools")
    # a fresh parent whose only child is the import: its RUSAGE_CHILDREN peak is the import's alone
    parent = ("import resource, subprocess, sys; code = subprocess.run(sys.argv[1:], capture_output=True).returncode; "
              "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", parent, str(memtools), "import-captions", str(source), "--memory",
                           str(memory), "--embedder", "test:384", "--graph-engine", engine],
                          capture_output=True, text=True)
    seconds = time.perf_counter() - started
    code, peak_kib = (int(v) for v in done.stdout.split()[-2:])
    if code:
        return ["FAILED", f"exit {code}", ""]
    check = subprocess.run([str(memtools), "check", "--memory", str(memory)], capture_output=True, text=True)
    rss = f"{peak_kib / 1024:,.0f} MiB"
    return [f"{seconds:.0f}", rss, "clean" if check.returncode == 0 else "DAMAGED"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hours", default="100,1000", help="library sizes for tool_latency.py")
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--import-mb", type=float, default=10.0)
    parser.add_argument("--kills", type=int, default=3, help="crash_random.py kills per operation, engine and mode")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "memtools-engine-policy")
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: tests,latency,import")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    args.workdir.mkdir(parents=True, exist_ok=True)
    print(f"# Graph engines side by side ({cpu_model()}, {os.cpu_count()} CPUs, {load_average()})\n")

    if "tests" not in skip:
        rows = [[engine, *pytest_counts(engine, ["tests/conformance"])] for engine in ENGINES]
        print("The conformance suite:\n")
        print(markdown_table(["engine", "passed", "failed", "skipped/xfailed", "seconds"], rows), "\n")
        print(f"Real kills ({args.kills} per operation, engine and mode):\n", flush=True)
        subprocess.run([sys.executable, str(ROOT / "benchmarks/crash_random.py"), "--kills", str(args.kills),
                        "--engines", ",".join(ENGINES)], cwd=ROOT, check=False)
        print()

    if "import" not in skip:
        source = args.workdir / "captions.json"
        videos, captions = write_file(source, args.import_mb)
        rows = [[engine, *caption_import(engine, source, args.workdir)] for engine in ENGINES]
        print(f"{args.import_mb:g} MB caption import ({videos:,} videos, {captions:,} captions):\n")
        print(markdown_table(["engine", "seconds", "peak RSS", "memtools check"], rows), "\n")

    if "latency" not in skip:
        measured = {engine: latency(engine, args.hours, args.calls, args.workdir) for engine in ENGINES}
        for hours in sorted(measured[ENGINES[0]]):
            tools = sorted(measured[ENGINES[0]][hours])
            rows = [[tool, *(f"{measured[e][hours].get(tool, float('nan')):.1f}" for e in ENGINES)] for tool in tools]
            print(f"Warm p50 in ms at {hours:g} h:\n")
            print(markdown_table(["tool", *ENGINES], rows), "\n")
    print(f"(load at the end: {load_average()})")


if __name__ == "__main__":
    main()
