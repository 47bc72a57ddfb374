"""Crash testing at random instants, the way the world crashes (issue 29, item 3).

    python benchmarks/crash_random.py --kills 10                      # every operation, both engines
    python benchmarks/crash_random.py --ops import-fresh,delete --engines kuzu --kills 5 --seed 3
    python benchmarks/crash_random.py --audit --kills 8               # the outside audit (YouCook2)
    python benchmarks/crash_random.py --first rerun --kills 10        # after a kill, the same command at once
    python benchmarks/crash_random.py --first reader --kills 10       # a tool call first, then the command
    python benchmarks/crash_random.py --first overlap --kills 10      # the command started again while it runs

For each operation and graph engine it runs the real command (``_crash_ops.py``) once
uninterrupted (its duration, the graph COMMITs it makes, the memory it leaves), then per kill:

* ``random``: SIGKILL to the command's process group at an instant drawn uniformly in
  [0, duration];
* ``commit``: ``MEMTOOLS_FAULT_COMMIT=n:s``, n drawn over the run's commits and s in
  [0, 0.3] s, so the kill lands inside the engine's commit or checkpoint;
* ``audit`` (``--audit``): the outside audit: import the first 120 YouCook2 videos (batch 10,
  ``test:16``) fresh or over a finished memory, SIGKILL once ``videos.sqlite`` lists 20
  videos plus 0-3 s.

With ``--first overlap`` nothing is killed at first: the same command starts again at the drawn
instant while the first run goes; in half the cases the first is then killed at a second instant.
Both must end with exit 0 (the killed one -9), check clean at once and the memory equal to the
uninterrupted one. With ``--first reader`` a tool call (``list_videos``) comes first after the kill:
it must list every video that was ready before the killed command; then the same command again.

Then (``tests/faults/crash_state.py settle``): ``memtools check`` is clean, or names exactly
one command, which is run once and leaves it clean (or, for an operation that starts from a
damaged memory, ``repair``, names only that operation); the same command again exits 0; check is
clean; the memory equals the uninterrupted one (videos, node ids, rows per lance table, node
texts, search results) and holds no id twice. Exit status 1 if any run was stuck or differs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import _crash_ops as ops
from _common import load_average, markdown_table

MODES = ("random", "commit")
FIRST = {"check": "check first", "rerun": "the same command again at once",
         "reader": "a tool call (list_videos), then the same command",
         "overlap": "the same command started again while the first ran (the first killed in half the cases)"}
COLUMNS = ("operation", "engine", "mode", "kills", "killed-before-end", "clean-after-kill", "needed-one-command",
           "stuck", "resumed-equal", "mismatches")


@dataclass
class Baseline:
    prepared: ops.Prepared
    seconds: float
    commits: int
    state: dict


@dataclass
class Row:
    op: str
    engine: str
    mode: str
    cases: list[dict] = field(default_factory=list)

    def counts(self) -> list[object]:
        c = self.cases
        return [self.op, self.engine, self.mode, len(c), sum(x["killed"] for x in c),
                sum(bool(x.get("clean")) for x in c), sum(bool(x.get("named")) and not x.get("stuck") for x in c),
                sum(bool(x.get("stuck")) for x in c), sum(x.get("equal", False) for x in c),
                sum(bool(x.get("mismatch")) for x in c)]


def _fill(args: list[str], memory: Path) -> list[str]:
    return [a.replace("{memory}", str(memory)).replace("{name}", memory.name) for a in args]


def _start(work: Path, memory: Path, prepared: ops.Prepared, *, again: bool = False, **extra: str) -> subprocess.Popen:
    """The operation's command on a fresh copy of its starting memory (``again``: on the memory as it is,
    the same command a second time)."""
    if memory.exists() and not again:
        shutil.rmtree(memory)
    if prepared.base is not None and not again:
        shutil.copytree(prepared.base, memory)
    return subprocess.Popen(ops.command(_fill(prepared.args, memory)), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=ops.env(work, **prepared.env, **extra),
                            start_new_session=True)


def _finish(proc: subprocess.Popen, timeout: float = 900) -> tuple[int, str]:
    _, err = proc.communicate(timeout=timeout)
    return proc.returncode, err.decode(errors="replace")


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the whole group: migrate's children too
    except ProcessLookupError:
        pass


def baseline(work: Path, op: str, engine: str, prepared: ops.Prepared) -> Baseline:
    """The uninterrupted run: its duration (beside another run, as the killed ones), its
    commits, the memory it leaves."""
    memory, counter = work / f"whole-{op}-{engine}", work / f"commits-{op}-{engine}"
    counter.unlink(missing_ok=True)
    started = time.perf_counter()
    code, err = _finish(_start(work, memory, prepared, MEMTOOLS_FAULT_COMMIT=ops.NEVER,
                               CRASH_COMMITS_TO=str(counter)))
    seconds = time.perf_counter() - started
    if code != 0:
        raise RuntimeError(f"{op} on {engine} fails uninterrupted: {err[-2000:]}")
    commits = sum(int(n) for n in counter.read_text().split()) if counter.exists() else 0
    state = json.loads(subprocess.run([sys.executable, str(ops.STATE), "describe", str(memory)], check=True,
                                      capture_output=True, text=True, env=ops.env(work)).stdout)
    return Baseline(prepared, seconds, commits, state)


def _ready(memory: Path | None) -> list[str]:
    """The videos ready in an operation's starting memory (a reader after a kill must list them all)."""
    if memory is None or not (memory / "videos.sqlite").exists():
        return []
    with sqlite3.connect(f"file:{memory / 'videos.sqlite'}?mode=ro", uri=True) as db:
        return sorted(r[0] for r in db.execute("SELECT id FROM videos WHERE status = 'ready'"))


def _catalog_count(memory: Path) -> int:
    try:
        with sqlite3.connect(f"file:{memory / 'videos.sqlite'}?mode=ro", uri=True, timeout=0.1) as db:
            return int(db.execute("SELECT count(*) FROM videos").fetchone()[0])
    except sqlite3.Error:
        return 0


def _overlap(work: Path, case: dict, base: Baseline) -> dict:
    """The same command started again ``at`` seconds into the first run; the first killed ``kill_at``
    seconds after that when drawn. Both run to their end."""
    memory = Path(case["memory"])
    first = _start(work, memory, base.prepared)
    started = time.perf_counter()
    while first.poll() is None and time.perf_counter() - started < case["at"]:
        time.sleep(0.005)
    second = _start(work, memory, base.prepared, again=True)
    if case.get("kill_at") is not None:
        started = time.perf_counter()
        while first.poll() is None and time.perf_counter() - started < case["kill_at"]:
            time.sleep(0.005)
        _kill(first)
    (code1, err1), (code2, err2) = _finish(first), _finish(second)
    return {**case, "killed": code1 != 0, "exits": [code1, code2], "stderr": (err1[-300:] + err2[-600:])}


def kill_once(work: Path, case: dict, base: Baseline) -> dict:
    """One killed run; ``case`` says where (``mode``, ``at`` seconds or ``commit``)."""
    memory = Path(case["memory"])
    if case["first"] == "overlap":
        return _overlap(work, case, base)
    if case["mode"] == "commit":
        proc = _start(work, memory, base.prepared, MEMTOOLS_FAULT_COMMIT=case["commit"])
    else:
        proc = _start(work, memory, base.prepared)
        started = time.perf_counter()
        if case["mode"] == "audit":  # once the catalog lists 20 videos, then 0-3 s
            while proc.poll() is None and _catalog_count(memory) < 20:
                time.sleep(0.02)
            started = time.perf_counter()
        while proc.poll() is None and time.perf_counter() - started < case["at"]:
            time.sleep(0.005)
        _kill(proc)
    code, err = _finish(proc)
    return {**case, "killed": code != 0, "exit": code, "stderr": err[-600:]}


def plan_cases(work: Path, op: str, engine: str, mode: str, kills: int, base: Baseline, rng: random.Random,
               first: str = "check") -> Row:
    row = Row(op, engine, mode)
    for i in range(kills):
        case = {"op": op, "engine": engine, "mode": mode, "memory": str(work / f"{op}-{engine}-{mode}-{i}"),
                "first": first}
        if mode == "commit":
            if base.commits == 0:
                break
            case["commit"] = f"{rng.randint(1, base.commits)}:{rng.uniform(0, 0.3):.3f}"
        else:
            case["at"] = rng.uniform(0, 3.0 if mode == "audit" else base.seconds)
        if first == "overlap":
            case["kill_at"] = rng.uniform(0, base.seconds) if rng.random() < 0.5 else None
        gone = set(base.prepared.args[3:]) if base.prepared.args[0] == "delete-videos" else set()
        case["before"] = [v for v in _ready(base.prepared.base) if v not in gone]  # what the command keeps
        case["args"] = _fill(base.prepared.args, Path(case["memory"]))
        verify = base.prepared.verify
        case.update(done_when=base.prepared.done_when, isolated=base.prepared.isolated,
                    verify=_fill(verify, Path(case["memory"])) if verify else None)
        row.cases.append(case)
    return row


def settle(work: Path, cases: list[dict]) -> list[dict]:
    """``crash_state.py settle`` in one child process for these cases (one engine)."""
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        plan, out = Path(tmp) / "plan.json", Path(tmp) / "out.json"
        plan.write_text(json.dumps(cases))
        done = subprocess.run([sys.executable, str(ops.STATE), "settle", str(plan), str(out)], capture_output=True,
                              text=True, env=ops.env(work), timeout=1800)
        if done.returncode != 0:
            return [{**c, "stuck": f"settle crashed: {done.stderr[-800:]}"} for c in cases]
        return json.loads(out.read_text())


def judge(case: dict, base: Baseline) -> dict:
    state = case.get("state")
    if case.get("stuck") or state is None:
        return case
    differs = [k for k in base.state if state.get(k) != base.state[k]]
    if state.get("duplicates"):
        differs.append(f"duplicates {state['duplicates'][:3]}")
    if state.get("navigation", {}).get("out_of_step"):
        differs.append(f"navigation rows out of step with the graph {state['navigation']['out_of_step'][:3]}")
    return {**case, "equal": not differs, "mismatch": ", ".join(differs)}


def run(work: Path, plan: list[tuple[str, str, str, int]], *, seed: int, workers: int = 2, videos: int = 24,
        batch: int = 4, data: Path = ops.DATA, first: str = "check", log=print) -> list[Row]:
    """Kill, settle and judge every (operation, engine, mode, kills) of ``plan`` (the caption
    imports: ``videos`` videos, ``batch`` per batch); ``first``: ``check`` (check, the command it
    names, then the same command) or ``rerun`` (the same command at once, as users do)."""
    rng = random.Random(seed)
    ops.setup_work(work, videos, batch)
    table = {**ops.OPS, **ops.AUDIT}
    if any(op in ops.AUDIT for op, *_ in plan) and ops.youcook2(work, data) is None:
        log(f"skipping the audit rows: {data / 'youcook2' / 'val.json'} is not there (--data)")
        plan = [p for p in plan if p[0] not in ops.AUDIT]
    prepared = {}  # one after another: operations share their starting memories
    for op, engine, _, _ in plan:
        if (op, engine) not in prepared:
            prepared[op, engine] = table[op](work, engine)
    with ThreadPoolExecutor(workers) as pool:
        bases = dict(zip(prepared, pool.map(lambda k: baseline(work, *k, prepared[k]), prepared), strict=True))
        for (op, engine), b in bases.items():
            log(f"{op} on {engine}: {b.seconds:.1f} s uninterrupted, {b.commits} graph commit(s)")
        rows = [plan_cases(work, op, engine, mode, kills, bases[op, engine], rng, first)
                for op, engine, mode, kills in plan]
        cases = [c for r in rows for c in r.cases]
        killed = list(pool.map(lambda c: kill_once(work, c, bases[c["op"], c["engine"]]), cases))
        groups: list[list[dict]] = []
        for engine in sorted({c["engine"] for c in killed}):
            mine = [c for c in killed if c["engine"] == engine]
            apart = [[c] for c in mine if c["isolated"]]
            together = [c for c in mine if not c["isolated"]]
            groups += apart + [together[i::workers] for i in range(workers) if together[i::workers]]
        settled = [c for group in pool.map(lambda g: settle(work, g), groups) for c in group]
    by_memory = {c["memory"]: judge(c, bases[c["op"], c["engine"]]) for c in settled}
    for r in rows:
        r.cases = [by_memory[c["memory"]] for c in r.cases]
    return rows


def failures(rows: list[Row]) -> list[str]:
    found = []
    for r in rows:
        for c in r.cases:
            if c.get("stuck") or c.get("mismatch"):
                where = c.get("commit") or f"{c.get('at', 0):.2f} s"
                what = c.get("stuck") or f"differs in {c['mismatch']}"
                found.append(f"{r.op} {r.engine} {r.mode} @{where}: {what[-700:]}")
    return found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kills", type=int, default=10, help="kills per operation, engine and mode (default 10)")
    p.add_argument("--seed", type=int, default=29)
    p.add_argument("--ops", default=",".join(ops.OPS),
                   help=f"comma-separated, of {', '.join(ops.OPS)}; none: only --audit")
    p.add_argument("--engines", default="kuzu,ladybug")
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--audit", action="store_true", help="also the outside audit (YouCook2, kill after 20 videos)")
    p.add_argument("--data", type=Path, default=ops.DATA, help="where youcook2/val.json is (default ../shared/data)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary one)")
    p.add_argument("--first", choices=FIRST, default="check",
                   help="after a kill: check first (and the command it names), the same command again at once, "
                        "a tool call then the command, or (overlap) the command started again while it runs")
    args = p.parse_args(argv)
    names = [] if args.ops == "none" else args.ops.split(",")  # none: only the audit
    engines, modes = args.engines.split(","), args.modes.split(",")
    unknown = sorted(set(names) - set(ops.OPS)) + sorted(set(modes) - set(MODES))
    if unknown:
        p.error(f"unknown operation or mode {', '.join(unknown)}")
    plan = [(op, e, m, args.kills) for op in names for e in engines for m in modes]
    plan += [(op, e, "audit", args.kills) for op in ops.AUDIT for e in engines] if args.audit else []
    with _s3_server(any(op == "publish" for op, *_ in plan)), tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        rows = run(work, plan, seed=args.seed, workers=args.workers, data=args.data, first=args.first)
    print(f"After each kill: {FIRST[args.first]}\n")
    print(markdown_table(COLUMNS, [r.counts() for r in rows]))
    print(f"\n{time.perf_counter() - started:.0f} s, seed {args.seed}, load {load_average()}")
    problems = failures(rows)
    for line in problems:
        print(line)
    return 1 if problems else 0


class _s3_server:  # noqa: N801 (a context manager read as a phrase)
    """A moto S3 server on 127.0.0.1 with the bucket ``crash``, for publish (the AWS_* variables
    point this process and its children at it)."""

    def __init__(self, wanted: bool) -> None:
        self.wanted, self.server = wanted, None

    def __enter__(self) -> None:
        if not self.wanted:
            return
        import logging

        import boto3
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.server.start()
        host, port = self.server.get_host_and_port()
        os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_REGION="us-east-1",
                          AWS_ENDPOINT_URL=f"http://{host}:{port}")
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="crash")

    def __exit__(self, *exc: object) -> None:
        if self.server is not None:
            self.server.stop()


if __name__ == "__main__":
    sys.exit(main())
