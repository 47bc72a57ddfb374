"""What a memory holds, for comparing a killed-and-resumed write with an uninterrupted one, and
the steps that follow a kill. Shared by the named-point crash tests (``crash_driver.py``) and the
random-instant harness (``benchmarks/crash_random.py``, ``test_faults_random.py``).

Run in a fresh process per graph engine (kuzu and ladybug cannot load in one):

    python crash_state.py describe MEMORY          # the memory as JSON
    python crash_state.py settle PLAN.json OUT.json  # per case: check, the one named command, the rerun, describe

``settle`` runs the real CLI (``memtools.cli.main``) in this process, one call after another.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

QUERIES = ("whisk the eggs", "slice the onion thinly", "fry until golden")
NAMED = re.compile(r"`(memtools [^`]+)`")


def describe(memory: str) -> dict:
    """What must equal between an interrupted-and-resumed write and an uninterrupted one, and the
    ids held twice (``duplicates``: must be empty)."""
    from memtools.schema import NodeKind
    from memtools.store import Memory
    from memtools.store.catalog.manifest import read_manifest
    from memtools.tools import MemoryTools
    from memtools.tools.search import SearchConfig

    with Memory.open(memory) as mem:
        mem.finish_indexes()  # the same index state for both (a resumed import folds rows in at other times)
        manifest = read_manifest(Path(memory))
        with mem.reading() as g:
            ids = g.ids_by_video(list(NodeKind))
            edges = g.counts_by_video()
            navigation = _navigation(g, sorted(v for v, e in manifest.videos.items() if e.status == "ready"))
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
        twice = _twice(tables)
    for vid, kinds in edges.items():  # a node id is a primary key per table: one id in two tables
        held = sum(n for kind, n in kinds.items() if kind != "edges")
        if held > len(ids.get(vid, ())):
            twice.append(f"graph: {held - len(ids.get(vid, ()))} node(s) of {vid} share an id")
    return {"videos": sorted(manifest.videos), "ready": sorted(v for v, e in manifest.videos.items()
                                                               if e.status == "ready"),
            "counts": {v: e.counts for v, e in sorted(manifest.videos.items())},
            "graph_ids": {v: sorted(s) for v, s in sorted(ids.items())}, "graph_counts": edges,
            "rows": rows, "node_rows": node_rows, "search": search, "engine": manifest.graph_engine,
            "navigation": navigation, "duplicates": twice}


def _navigation(graph, ready: list[str]) -> dict:
    """Per ready video, a digest of its navigation rows as stored (``navigation.sqlite``), and the videos
    whose stored rows are not the ones their graph gives (``out_of_step``: must be empty)."""
    import hashlib
    import sqlite3

    from memtools.store.graph.rows import DERIVED, columns, rows_for

    stored: dict[str, list] = {vid: [] for vid in ready}
    file = graph.path.parent / "navigation.sqlite"
    if file.exists():
        with contextlib.closing(sqlite3.connect(f"file:{file}?mode=ro", uri=True)) as conn:
            for name in DERIVED:
                for row in conn.execute(f"SELECT {', '.join(columns(name))} FROM {name} ORDER BY id"):
                    if row[1] in stored:
                        stored[row[1]].append([name, *row])
    out_of_step = []
    for vid in ready:
        video = graph.video_graph(vid)
        want = [] if video is None else sorted(
            [name, *(r[c] for c in columns(name))] for name, rows in rows_for([video]).items() for r in rows)
        if sorted(stored[vid]) != want:
            out_of_step.append(vid)
    digest = {vid: hashlib.sha256(json.dumps(sorted(rows)).encode()).hexdigest()[:16] for vid, rows in stored.items()}
    return {"digest": digest, "out_of_step": out_of_step}


def _twice(tables: dict) -> list[str]:
    """Ids held by more than one row of a lance table."""
    found = []
    for name, table in tables.items():
        if table is None:
            continue
        key = next((c for c in ("id", "entity_id", "keyframe_id", "path") if c in table.schema.names), None)
        if key is None:
            continue
        seen = Counter(table.search().select([key]).limit(None).to_arrow().column(key).to_pylist())
        found += [f"{name}: {k} x{n}" for k, n in seen.items() if n > 1][:5]
    return found


def _ranking(hits) -> dict:
    """The scores in order, and the ids ranked above the last score: the test embedder's vectors
    tie often, and lance orders equal scores by where rows lie, which depends on the history."""
    scores = [round(h.score, 4) for h in hits]
    return {"scores": scores, "above": sorted(h.id for h, s in zip(hits, scores, strict=True) if s > scores[-1])}


def bytes_gone(memory: str, texts: list[str]) -> tuple[int, str]:
    """``bytes-gone``: none of these texts is in the raw bytes of any file under the memory (a purge's proof;
    ``purge_support.holders`` also reads the zlib blobs of the SQLite files)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: purge_support
    from purge_support import holders

    found = {text: where for text, where in holders(Path(memory), {t: t.encode() for t in texts}).items() if where}
    return (1, f"still in the memory's files: {found}") if found else (0, "")


def cli(args: list[str], isolated: bool = False) -> tuple[int, str]:
    """One ``memtools`` command line: (exit status, stdout and stderr). In this process, or in a
    child (``isolated``: a command that may change the memory's graph engine, which this process
    could not load next to the one it has). ``delete-videos`` stands for the library's
    ``Memory.delete_video`` (memtools has no delete command), ``replica-equals`` compares what
    ``publish`` left on S3 with the memory."""
    if isolated:
        done = subprocess.run([sys.executable, __file__, "cli", *args], capture_output=True, text=True)
        return done.returncode, done.stdout + done.stderr
    if args[0] == "delete-videos":
        return delete_videos(args[2], args[3:]), ""
    if args[0] == "replica-equals":
        return replica_equals(args[2], args[3])
    if args[0] == "bytes-gone":
        return bytes_gone(args[2], args[3:])
    from memtools.cli import main

    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = main(args)
    except SystemExit as exc:  # argparse
        code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue()


def describe_apart(memory: str) -> dict:
    """``describe`` in a child process (for a memory whose graph engine this process may not load)."""
    done = subprocess.run([sys.executable, __file__, "describe", memory], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def replica_equals(memory: str, uri: str) -> tuple[int, str]:
    """The version ``LATEST.json`` names, downloaded whole (sizes and hashes checked), holds what
    the memory holds."""
    import tempfile

    from memtools.replica.bucket import Bucket
    from memtools.replica.fetch import download_version, latest_of

    bucket = Bucket(uri)
    with tempfile.TemporaryDirectory() as tmp:
        folder, _, _ = download_version(bucket, latest_of(bucket).version, Path(tmp))
        there, here = describe(str(folder)), describe(memory)
    differs = [k for k in here if there.get(k) != here[k]]
    return (1, f"the published version differs from the memory in {differs}") if differs else (0, "")


def delete_videos(memory: str, video_ids: list[str]) -> int:
    """Delete these videos one write at a time (those already gone are skipped)."""
    from memtools.store import Memory

    with Memory.open(memory) as mem:
        for vid in video_ids:
            mem.delete_video(vid)
    return 0


def named_commands(report: str, memory: str) -> list[str]:
    """The distinct commands a check report names, other than ``memtools check`` itself: one per
    subcommand and options (``memtools repair`` and ``memtools repair --memory M`` are one)."""
    found: dict[tuple[str, ...], str] = {}
    for command in NAMED.findall(report):
        words = shlex.split(command)
        if len(words) < 2 or words[1] == "check":
            continue
        if "--memory" not in words:
            command = f"{command} --memory {memory}"
        key = tuple(w for i, w in enumerate(words) if w != "--memory" and (i == 0 or words[i - 1] != "--memory"))
        found.setdefault(key, command)
    return list(found.values())


def settle(case: dict) -> dict:
    """After a kill: ``check``; when damaged, the one command it names (run once) and ``check``
    again; then the same command as the killed one, ``check`` and ``describe``. A case with
    ``first: rerun`` skips the first check: the same command runs again at once, as users do."""
    memory, args, alone = case["memory"], case["args"], case.get("isolated", False)
    out: dict = {"clean": False, "named": [], "stuck": "", "code": None, "state": None}
    if case.get("first") == "overlap":  # two runs of the command overlapped: no step of ours, only the outcome
        return _after_overlap(case, out)
    if case.get("first") == "reader":  # a tool call first, then the same command: the reader loses nothing
        out["reader"] = _read_first(memory, alone, case.get("before", []))
        if out["reader"].get("lost"):
            out["stuck"] = f"the reader after the kill lost {out['reader']['lost'][:5]}: {out['reader']['said']}"
            return out
    if case.get("first") in ("rerun", "reader"):  # the same command again at once, no check
        out["clean"] = True
    elif not (Path(memory) / "memtools.json").exists():  # killed before it made the memory: nothing to check
        out["clean"] = True
    else:
        code, report = cli(["check", "--memory", memory], alone)
        if code != 0 and "try again in a few seconds" in report:  # as it says, once
            time.sleep(3)
            code, report = cli(["check", "--memory", memory], alone)
        out["clean"] = code == 0
    if not out["clean"]:
        named = named_commands(report, memory)
        out["named"] = named
        if len(named) != 1:
            out["stuck"] = f"check names {len(named)} commands: {report[-700:]}"
            return out
        words = shlex.split(named[0])[1:]
        if words[0] != args[0]:  # (the killed command itself runs again below)
            done, said = cli(words, alone)
            again, report = cli(["check", "--memory", memory], alone)
            # A memory that was damaged before the killed command (repair's) may still name that command: it runs
            # again below, which is what "the same command again" means
            if again != 0 and [shlex.split(c)[1] for c in named_commands(report, memory)] != [args[0]]:
                out["stuck"] = f"`{named[0]}` exited {done}: {said[-500:]}; check still: {report[-700:]}"
                return out
    out["code"], output = cli(args, alone)
    if out["code"] != 0 and not any(s in output for s in case.get("done_when", [])):
        out["stuck"] = f"the same command again exited {out['code']}: {output[-900:]}"
        return out
    return _checked(case, out, "the rerun")


def _checked(case: dict, out: dict, after: str) -> dict:
    """The end of every path: check clean, the operation's own verification, and what the memory holds."""
    memory, alone = case["memory"], case.get("isolated", False)
    code, report = cli(["check", "--memory", memory], alone)
    if code != 0:
        out["stuck"] = f"check after {after}: {report[-900:]}"
        return out
    if case.get("verify"):
        code, said = cli(case["verify"], alone)
        if code != 0:
            out["stuck"] = f"`{' '.join(case['verify'])}` exited {code}: {said[-700:]}"
            return out
    try:
        out["state"] = describe_apart(memory) if alone else describe(memory)
    except Exception as exc:  # a refusal to read is a finding
        out["stuck"] = f"describe: {type(exc).__name__}: {exc}"
    return out


def _read_first(memory: str, alone: bool, before: list[str]) -> dict:
    """A tool call right after the kill (it may finish the killed write's recovery itself): every video
    that was ready before the killed command must still be listed (``before``: the case's start)."""
    if not (Path(memory) / "memtools.json").exists():
        return {"said": "no memory yet", "lost": []}
    code, said = cli(["tool", "list_videos", "--memory", memory, "--limit", "200"], alone)
    listed = set(re.findall(r"^- (\S+) \[", said, re.M))
    return {"code": code, "said": said[-400:], "lost": sorted(set(before) - listed) if code == 0 else before}


def _after_overlap(case: dict, out: dict) -> dict:
    """Both runs have ended: each exit says what happened (0, or the first killed: -9), check is clean at
    once, and the memory equals the uninterrupted one (``judge``)."""
    exits = case.get("exits", [])
    out["clean"] = True
    found_done = any(text in case.get("stderr", "") for text in case.get("done_when", []))  # "already one entity"
    if not found_done and (any(code not in (0, -9) for code in exits) or exits[-1:] != [0]):
        out["stuck"] = f"overlapping runs exited {exits}: {case.get('stderr', '')[-700:]}"
        return out
    out["code"] = 0
    return _checked(case, out, "overlapping runs")


def settle_all(plan_file: str, out_file: str) -> None:
    results = []
    for case in json.loads(Path(plan_file).read_text()):
        try:
            results.append({**case, **settle(case)})
        except Exception as exc:
            results.append({**case, "stuck": f"{type(exc).__name__}: {exc}", "state": None})
    Path(out_file).write_text(json.dumps(results))


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    if command == "describe":
        print(json.dumps(describe(rest[0])))
    elif command == "settle":
        settle_all(*rest)
    elif command == "cli":
        code, said = cli(rest)
        print(said)
        sys.exit(code)
