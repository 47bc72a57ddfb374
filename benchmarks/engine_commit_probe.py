"""What a graph engine keeps of a transaction when the process is killed inside its COMMIT.

A child process loops over transactions that each add a batch of nodes and edges and set a
one-row mark to the batch number (the shape of memtools' write: bulk rows plus a mark); the
parent kills it with SIGKILL at a random instant, reopens the database and checks that the rows
match the mark. Variants (how the write is shaped):

* ``copy-mark``: COPY the rows and MERGE the mark in one transaction (memtools before round 5);
* ``insert-mark``: the same with UNWIND ... CREATE instead of COPY;
* ``copy-checkpoint``: as ``copy-mark`` with auto-checkpoint off and CHECKPOINT after COMMIT;
* ``copy-then-mark``: COPY in one transaction, the mark in a second one after the first COMMIT
  returned (memtools now): the mark may then lag the rows, never lead them.

    python benchmarks/engine_commit_probe.py --engine kuzu --runs 30
    python benchmarks/engine_commit_probe.py --engine ladybug --variants copy-mark,copy-then-mark

Prints, per variant: kills, kills that left the rows behind the mark (data lost under a kept
mark), and the median time of one transaction (2,000 nodes + 1,999 edges) without kills.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BATCH = 2000
CHILD = r'''
import sys, time, pyarrow as pa
BATCH = 2000
k = __import__(sys.argv[1]); variant, path, batches = sys.argv[2], sys.argv[3], int(sys.argv[4])
db = k.Database(path); c = k.Connection(db)
c.execute("CREATE NODE TABLE IF NOT EXISTS T(id STRING, v STRING, PRIMARY KEY(id))")
c.execute("CREATE NODE TABLE IF NOT EXISTS M(id STRING, token INT64, PRIMARY KEY(id))")
c.execute("CREATE REL TABLE IF NOT EXISTS R(FROM T TO T, label STRING)")
if variant == "copy-checkpoint":
    c.execute("CALL auto_checkpoint=false")
print("ready", flush=True)
i = 0
while batches <= 0 or i < batches:
    i += 1
    ids = [f"{i}-{j}" for j in range(BATCH)]
    start = time.perf_counter()
    c.execute("BEGIN TRANSACTION")
    if variant == "insert-mark":
        c.execute("UNWIND $rows AS r CREATE (:T {id: r.id, v: r.v})", {"rows": [{"id": x, "v": "x" * 50} for x in ids]})
        c.execute("UNWIND $rows AS r MATCH (a:T {id: r.a}), (b:T {id: r.b}) CREATE (a)-[:R {label: 'l'}]->(b)",
                  {"rows": [{"a": a, "b": b} for a, b in zip(ids, ids[1:])]})
    else:
        c.execute("COPY T FROM $rows", {"rows": pa.table({"id": ids, "v": ["x" * 50] * BATCH})})
        edges = pa.table({"from": ids[:-1], "to": ids[1:], "label": ["l"] * (BATCH - 1)})
        c.execute("COPY R FROM $rows", {"rows": edges})
    if variant == "copy-then-mark":
        c.execute("COMMIT")
        c.execute("BEGIN TRANSACTION")
    c.execute("MERGE (m:M {id: 'last'}) SET m.token = $t", {"t": i})
    c.execute("COMMIT")
    if variant == "copy-checkpoint":
        c.execute("CHECKPOINT")
    print(time.perf_counter() - start, flush=True)
'''
CHECK = r'''
import sys, json
k = __import__(sys.argv[1]); c = k.Connection(k.Database(sys.argv[2]))
rows = c.execute("MATCH (n:T) RETURN count(n)").get_all()[0][0]
edges = c.execute("MATCH ()-[r:R]->() RETURN count(r)").get_all()[0][0]
mark = c.execute("MATCH (m:M) RETURN m.token").get_all()
print(json.dumps([rows, edges, mark[0][0] if mark else 0]))
'''
VARIANTS = ("copy-mark", "insert-mark", "copy-checkpoint", "copy-then-mark")


def _one_kill(engine: str, variant: str, folder: Path, rng: random.Random) -> tuple[bool, bool]:
    """(the rows are behind the mark, a shadow file was left) after one kill."""
    path = folder / "db"
    child = subprocess.Popen([sys.executable, "-c", CHILD, engine, variant, str(path), "0"], stdout=subprocess.PIPE,
                             text=True)
    assert child.stdout is not None
    child.stdout.readline()
    time.sleep(rng.uniform(0.05, 1.5))
    child.send_signal(signal.SIGKILL)
    child.wait()
    shadow = any(p.name.endswith(".shadow") for p in folder.iterdir())
    done = subprocess.run([sys.executable, "-c", CHECK, engine, str(path)], capture_output=True, text=True)
    try:
        rows, edges, mark = json.loads(done.stdout)
    except ValueError:
        return True, shadow  # unreadable after the kill: counts as lost
    behind = rows < BATCH * mark or edges < (BATCH - 1) * mark
    torn = rows % BATCH != 0 or edges % (BATCH - 1) != 0
    return behind or torn, shadow


def _timing(engine: str, variant: str, folder: Path) -> float:
    done = subprocess.run([sys.executable, "-c", CHILD, engine, variant, str(folder / "t"), "7"], capture_output=True,
                          text=True, check=True)
    return statistics.median(float(x) for x in done.stdout.split()[1:][2:])  # the first two warm up


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engine", default="kuzu", choices=("kuzu", "ladybug"))
    parser.add_argument("--runs", type=int, default=20, help="kills per variant")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(f"{'variant':<16} {'kills':>5} {'rows lost under a kept mark':>28} {'shadow left':>11} "
          f"{'ms per transaction':>18}")
    for variant in args.variants.split(","):
        lost = shadows = 0
        for _ in range(args.runs):
            folder = Path(tempfile.mkdtemp(prefix="commit-probe-"))
            try:
                bad, shadow = _one_kill(args.engine, variant, folder, rng)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
            lost += bad
            shadows += shadow
        folder = Path(tempfile.mkdtemp(prefix="commit-probe-"))
        try:
            ms = _timing(args.engine, variant, folder) * 1000
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        print(f"{variant:<16} {args.runs:>5} {lost:>28} {shadows:>11} {ms:>18.1f}", flush=True)


if __name__ == "__main__":
    main()
