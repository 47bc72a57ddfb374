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

VIDEOS = 24
QUERIES = ("whisk the eggs", "slice the onion thinly", "fry until golden")
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


def describe(memory: str) -> dict:
    """What must equal between an interrupted-and-resumed import and an uninterrupted one."""
    from memtools.schema import NodeKind
    from memtools.store import Memory
    from memtools.store.manifest import read_manifest
    from memtools.tools import MemoryTools
    from memtools.tools.search import SearchConfig

    with Memory.open(memory) as mem:
        mem.finish_indexes()  # the same index state for both (a resumed import folds rows in at other times)
        manifest = read_manifest(Path(memory))
        with mem.reading() as g:
            ids = g.ids_by_video(list(NodeKind))
            edges = g.counts_by_video()
        lance = mem.vectors_unchecked
        tables = {"nodes": lance.nodes(), "entities": mem.entities.table(),
                  "keyframes": mem.keyframes.table() if mem.keyframes is not None else None}
        rows = {name: table.count_rows() if table is not None else 0 for name, table in tables.items()}
        table = lance.nodes()  # None: no rows were ever kept (a first batch rolled back)
        node_rows = [] if table is None else sorted(
            table.search().select(["id", "text"]).limit(None).to_arrow().to_pylist(), key=lambda r: r["id"])
        # exact vector search: the ranking depends on the rows alone (the default strategy also
        # weighs full-text scores, whose statistics depend on the lance index history)
        tools = MemoryTools(mem, search=SearchConfig(mode="vector", strategy="flat"))
        search = {q: _ranking(tools.search_nodes(q, top_k=8).hits) for q in QUERIES}
    return {"videos": sorted(manifest.videos), "ready": sorted(v for v, e in manifest.videos.items()
                                                               if e.status == "ready"),
            "counts": {v: e.counts for v, e in sorted(manifest.videos.items())},
            "graph_ids": {v: sorted(s) for v, s in sorted(ids.items())}, "graph_counts": edges,
            "rows": rows, "node_rows": node_rows, "search": search}


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


def _ranking(hits) -> dict:
    """The scores in order, and the ids ranked above the last score: the test embedder's vectors
    tie often, and lance orders equal scores by where rows lie, which depends on the history."""
    scores = [round(h.score, 4) for h in hits]
    return {"scores": scores, "above": sorted(h.id for h, s in zip(hits, scores, strict=True) if s > scores[-1])}


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
