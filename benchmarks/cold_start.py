"""The first search of a fresh process: `memtools tool search_nodes` from the shell, and the first
`search_nodes` through a freshly started MCP server (timed from the end of `initialize`).

    python benchmarks/cold_start.py --memory /tmp/memtools-bench-10h-seed7 \\
        --python before=/work/main/.venv/bin/python --python after=.venv/bin/python

Each interpreter runs its own installed memtools (a checkout's venv), so one run compares two
versions side by side on the same machine state. Runs alternate between the interpreters
(``--runs`` each) and every query is new, so no cache answers. Prints markdown tables.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, markdown_table, offline  # noqa: E402

CLI = "import sys; from memtools.cli import main; sys.exit(main())"
MCP = "import sys; from memtools.mcp import main; sys.exit(main())"
QUERIES = ["a man opens the fridge", "someone pours water into a glass", "the dog runs across the yard",
           "a woman reads a book on the sofa", "two people argue in the kitchen", "a child plays with a ball",
           "the lights go out", "someone repairs a bicycle", "a crowd cheers", "a cat jumps on the table"]


def cli_search(python: str, memory: Path, query: str) -> float:
    start = time.perf_counter()
    out = subprocess.run([python, "-c", CLI, "tool", "search_nodes", "--memory", str(memory), "--query", query],
                         capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if out.returncode != 0 or "match" not in out.stdout:
        raise SystemExit(f"{python}: search failed: {out.stderr[-800:]}")
    return elapsed


async def mcp_first_search(python: str, memory: Path, query: str) -> tuple[float, float]:
    """(seconds from spawn to initialized, seconds from initialized to the first search's answer)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    start = time.perf_counter()
    server = StdioServerParameters(command=python, args=["-c", MCP, "--memory", str(memory)])
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:  # mcp 1.x and 2.x
        await session.initialize()
        ready = time.perf_counter()
        result = await session.call_tool("search_nodes", {"query": query, "top_k": 10})
        done = time.perf_counter()
        if getattr(result, "isError", None) or getattr(result, "is_error", None):
            raise SystemExit(f"{python}: MCP search failed: {result.content[0].text}")
    return ready - start, done - ready


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memory", type=Path, required=True, help="a memory built with the default embedder")
    parser.add_argument("--python", action="append", metavar="LABEL=PATH",
                        help="an interpreter to time (repeatable; default: this one, labelled 'this')")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    offline()
    pythons = [p.split("=", 1) for p in (args.python or [f"this={sys.executable}"])]
    cli: dict[str, list[float]] = {label: [] for label, _ in pythons}
    init: dict[str, list[float]] = {label: [] for label, _ in pythons}
    first: dict[str, list[float]] = {label: [] for label, _ in pythons}
    print(f"memory {args.memory}, load {load_average()}")
    n = 0
    for _ in range(args.runs):
        for label, python in pythons:
            cli[label].append(cli_search(python, args.memory, f"{QUERIES[n % len(QUERIES)]} {n}"))
            a, b = asyncio.run(mcp_first_search(python, args.memory, f"{QUERIES[(n + 5) % len(QUERIES)]} {n}"))
            init[label].append(a)
            first[label].append(b)
            n += 1
    rows = [[label, f"{statistics.median(cli[label]):.2f} s", f"{min(cli[label]):.2f} s",
             f"{statistics.median(init[label]):.2f} s", f"{statistics.median(first[label]):.2f} s",
             f"{min(first[label]):.2f} s"] for label, _ in pythons]
    print()
    print(markdown_table(["version", "`memtools tool search_nodes` (median)", "(best)", "MCP spawn -> initialized",
                          "MCP first search after initialize (median)", "(best)"], rows))
    print(f"\n{args.runs} run(s) each, load after: {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
