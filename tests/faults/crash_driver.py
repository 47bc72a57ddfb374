"""Run by ``test_faults_resume.py`` in a fresh process per graph engine (kuzu and ladybug cannot
load in one process): write the caption files, import them, resume killed imports, and describe
a memory (videos, node ids, rows per lance table, search results) as JSON for comparison.

    python crash_driver.py captions FOLDER                   # a.json (first version), b.json (second)
    python crash_driver.py import MEMORY FILE BATCH ENGINE   # one import (the killed run: with MEMTOOLS_FAULT_POINT)
    python crash_driver.py resume PLAN.json OUT.json         # per plan entry: the same import again, check, describe
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

from crash_state import describe

VIDEOS = 24
WORDS = ("whisk the eggs", "slice the onion", "fry the garlic", "boil the pasta", "season with salt",
         "stir the sauce", "grate the cheese", "chop the parsley", "pour the oil", "bake the bread")


def captions(folder: Path) -> None:
    """Two versions of the same videos: b.json changes every video's captions and their number."""
    for name, per_video in (("a.json", 3), ("b.json", 4)):
        data = {}
        for v in range(VIDEOS):
            n = per_video + v % 2
            data[f"vid{v:02d}"] = {
                "duration": 10.0 * n,
                "timestamps": [[10.0 * i, 10.0 * i + 8.0] for i in range(n)],
                "sentences": [f"{WORDS[(v + i) % len(WORDS)]} for dish {v} ({name[0]}), step {i}" for i in range(n)],
            }
        (folder / name).write_text(json.dumps(data), encoding="utf-8")


def run_import(memory: str, file: str, batch: str, engine: str) -> tuple[int, str]:
    from memtools.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["import-captions", file, "--memory", memory, "--batch-size", batch, "--no-progress",
                     "--embedder", "test", "--graph-engine", engine])
    return code, out.getvalue() + err.getvalue()


def check(memory: str) -> tuple[int, str]:
    from memtools.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(["check", "--memory", memory])
    return code, out.getvalue()


def recovered(memory: str) -> tuple[dict, str]:
    """The memory after the next writer recovered the killed write (a write of nothing: the
    indexes folded in), its check report, and what it holds."""
    from memtools.store import Memory

    with Memory.open(memory) as mem:
        mem.finish_indexes()
    code, report = check(memory)
    return describe(memory), report if code else ""


def versions_of(state: dict, old: dict, new: dict) -> dict[str, str]:
    """Per video: "old" or "new" when its graph nodes and its lance rows are whole in that
    version (or both: "same"), else "torn"."""
    def rows(s: dict, vid: str) -> list:
        return [r for r in s["node_rows"] if r["id"].split("/")[0] == vid]

    def part(s: dict, vid: str) -> tuple:
        return s["graph_ids"].get(vid), s["counts"].get(vid), rows(s, vid)

    found = {}
    for vid in sorted(set(state["graph_ids"]) | set(state["videos"]) | {r["id"].split("/")[0]
                                                                        for r in state["node_rows"]}):
        have = part(state, vid)
        found[vid] = ("new" if have == part(new, vid) else "old" if have == part(old, vid) else "torn")
    return found


def resume(plan_file: str, out_file: str) -> None:
    results = []
    for case in json.loads(Path(plan_file).read_text()):
        old, new = case.pop("old"), case.pop("new")
        try:
            state, problems = recovered(case["memory"])
            halfway = {"problems": problems, "versions": versions_of(state, old, new)}
        except Exception as exc:
            halfway = {"problems": f"{type(exc).__name__}: {exc}", "versions": {}}
        code, output = run_import(case["memory"], case["file"], str(case["batch"]), case["engine"])
        checked, report = check(case["memory"])
        try:
            state = describe(case["memory"]) if code == 0 else None
        except Exception as exc:  # a refusal to read is a finding, reported by the test
            state = {"error": f"{type(exc).__name__}: {exc}"}
        results.append({**case, "halfway": halfway, "code": code, "output": output[-1500:], "check": checked,
                        "report": report[-1500:], "state": state})
    Path(out_file).write_text(json.dumps(results))


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "captions":
        captions(Path(args[0]))
    elif command == "import":
        code, output = run_import(*args)
        print(output)
        sys.exit(code)
    elif command == "describe":
        print(json.dumps(describe(args[0])))
    elif command == "resume":
        resume(*args)
