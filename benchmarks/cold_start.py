"""The cold paths of a fresh process: a navigation command (`memtools tool get_summary`, no model),
`memtools tool search_nodes` from the shell, and the first `search_nodes` through a freshly started
MCP server (spawn -> initialized, then the first answer).

    python benchmarks/cold_start.py --memory /tmp/memtools-bench-10h-seed7 \\
        --python before=/work/main/.venv/bin/python --python after=.venv/bin/python
    python benchmarks/cold_start.py --memory sample-memory-week --src before=/tmp/old/src --src after=src --runs 5

Each interpreter runs its own installed memtools (a checkout's venv), or this interpreter with the
sources of ``--src`` first on ``PYTHONPATH``, so one run compares versions side by side on the same
machine state. Runs alternate between the versions (``--runs`` each) and every query is new, so no
cache answers. Prints markdown tables (medians and bests, wall and the command's CPU time), the CPU
model, and for the last version the 15 largest imports (``python -X importtime``, cumulative) of
the navigation command and of the search. Compile the sources first (``python -m compileall src``)
where ``PYTHONDONTWRITEBYTECODE`` is set: an installed memtools has its bytecode.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import cpu_model, load_average, markdown_table, offline  # noqa: E402

# what the `memtools` command runs (a version from before `console` ran main)
CLI = ("import sys\ntry:\n    from memtools.cli import console\nexcept ImportError:\n"
       "    from memtools.cli import main\n    console = lambda: sys.exit(main())\nconsole()")
MCP = "import sys; from memtools.mcp import main; sys.exit(main())"
QUERIES = ["a man opens the fridge", "someone pours water into a glass", "the dog runs across the yard",
           "a woman reads a book on the sofa", "two people argue in the kitchen", "a child plays with a ball",
           "the lights go out", "someone repairs a bicycle", "a crowd cheers", "a cat jumps on the table"]


class Version:
    """One memtools to time: an interpreter, and the sources put first on its path (if any)."""

    def __init__(self, label: str, python: str, src: str = "") -> None:
        self.label, self.python = label, python
        self.env = dict(os.environ)
        if src:
            self.env["PYTHONPATH"] = str(Path(src).resolve())

    def command(self, code: str, *args: str, importtime: bool = False) -> list[str]:
        return [self.python, *(("-X", "importtime") if importtime else ()), "-c", code, *args]


def timed(version: Version, args: list[str], expect: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one CLI command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(version.command(CLI, *args), capture_output=True, text=True, env=version.env)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0 or expect not in out.stdout:
        raise SystemExit(f"{version.label}: {' '.join(args[:2])} failed: {out.stderr[-800:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


async def mcp_first_search(version: Version, memory: Path, query: str) -> tuple[float, float]:
    """(seconds from spawn to initialized, seconds from initialized to the first search's answer)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    start = time.perf_counter()
    server = StdioServerParameters(command=version.python, args=["-c", MCP, "--memory", str(memory)],
                                   env=version.env)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:  # mcp 1.x and 2.x
        await session.initialize()
        ready = time.perf_counter()
        result = await session.call_tool("search_nodes", {"query": query, "top_k": 10})
        done = time.perf_counter()
        if getattr(result, "isError", None) or getattr(result, "is_error", None):
            raise SystemExit(f"{version.label}: MCP search failed: {result.content[0].text}")
    return ready - start, done - ready


def first_video(version: Version, memory: Path) -> str:
    out = subprocess.run(version.command(CLI, "tool", "list_videos", "--memory", str(memory), "--json"),
                         capture_output=True, text=True, env=version.env, check=True)
    return json.loads(out.stdout)["videos"][0]["video_id"]


def top_imports(version: Version, args: list[str], n: int = 15) -> list[list[str]]:
    """The ``n`` largest imports by cumulative time (``-X importtime``) of one command."""
    out = subprocess.run(version.command(CLI, *args, importtime=True), capture_output=True, text=True,
                         env=version.env)
    rows = []
    for line in out.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "cumulative" not in line:
            _, cumulative, name = line.split("|")
            rows.append((int(cumulative), name.rstrip()))
    rows.sort(reverse=True)
    return [[f"{us / 1000:.0f}", f"`{name.strip()}`", str((len(name) - len(name.lstrip()) - 1) // 2)]
            for us, name in rows[:n]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memory", type=Path, required=True, help="a memory built with the default embedder")
    parser.add_argument("--python", action="append", default=[], metavar="LABEL=PATH",
                        help="an interpreter to time (repeatable; default: this one, labelled 'this')")
    parser.add_argument("--src", action="append", default=[], metavar="LABEL=PATH",
                        help="this interpreter with the memtools sources in PATH first on PYTHONPATH (repeatable)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-mcp", action="store_true", help="time the two commands only")
    args = parser.parse_args()
    offline()
    versions = ([Version(*p.split("=", 1)) for p in args.python]
                + [Version(label, sys.executable, src) for label, src in (s.split("=", 1) for s in args.src)])
    versions = versions or [Version("this", sys.executable)]
    video = first_video(versions[-1], args.memory)
    nav = ["tool", "get_summary", "--memory", str(args.memory), "--video-id", video]
    times: dict[str, dict[str, list[float]]] = {v.label: {k: [] for k in ("nav", "nav_cpu", "cli", "cli_cpu", "init",
                                                                          "first")} for v in versions}
    print(f"memory {args.memory}, CPU {cpu_model()} ({os.cpu_count()} CPUs), load {load_average()}")
    n = 0
    for _ in range(args.runs):
        for version in versions:
            got = times[version.label]
            wall, cpu = timed(version, nav, "Video ")
            got["nav"].append(wall)
            got["nav_cpu"].append(cpu)
            query = f"{QUERIES[n % len(QUERIES)]} {n}"
            wall, cpu = timed(version, ["tool", "search_nodes", "--memory", str(args.memory), "--query", query],
                              "match")
            got["cli"].append(wall)
            got["cli_cpu"].append(cpu)
            if not args.no_mcp:
                a, b = asyncio.run(mcp_first_search(version, args.memory, f"{QUERIES[(n + 5) % len(QUERIES)]} {n}"))
                got["init"].append(a)
                got["first"].append(b)
            n += 1

    def med(values: list[float]) -> str:
        return f"{statistics.median(values):.2f} s" if values else "n/a"

    rows = [[v.label, med(t["nav"]), f"{min(t['nav']):.2f} s", med(t["nav_cpu"]), med(t["cli"]),
             f"{min(t['cli']):.2f} s", med(t["cli_cpu"]), med(t["init"]),
             med([a + b for a, b in zip(t["init"], t["first"], strict=True)])]
            for v, t in ((v, times[v.label]) for v in versions)]
    print()
    print(markdown_table(["version", "`tool get_summary` (median)", "(best)", "(CPU)", "`tool search_nodes` (median)",
                          "(best)", "(CPU)", "MCP spawn -> initialized", "MCP spawn -> first search"], rows))
    print(f"\n{args.runs} run(s) each, alternated; CPU {cpu_model()}; load after: {load_average()}")
    last = versions[-1]
    for title, command in (("get_summary", nav),
                           ("search_nodes", ["tool", "search_nodes", "--memory", str(args.memory), "--query",
                                             "imports of a cold search"])):
        print(f"\n`python -X importtime` of `memtools tool {title}` ({last.label}), top 15 by cumulative time:\n")
        print(markdown_table(["ms (cumulative)", "module", "depth"], top_imports(last, command)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
