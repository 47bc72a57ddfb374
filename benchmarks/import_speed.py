"""Caption import throughput: `memtools import-captions` of the ActivityNet dev half and of YouCook2 val
into a fresh memory, per interpreter (a checkout's venv), side by side in one run.

    python benchmarks/import_speed.py --python before=/work/main/.venv/bin/python --python after=.venv/bin/python

The annotation files are read in place from ``--data`` (default ``../shared/data``). Prints the
wall time of each import (process start to exit, embedding with the default all-MiniLM-L6-v2
included), videos/s and captions/s.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, markdown_table, offline  # noqa: E402

CLI = "import sys; from memtools.cli import main; sys.exit(main())"
SETS = {"ActivityNet val_1 (dev half)": "activitynet-dev/val_1.json", "YouCook2 val": "youcook2/val.json"}


def counts(path: Path) -> tuple[int, int]:
    data = json.loads(path.read_text())
    data = data.get("database", data)
    return len(data), sum(len(v["sentences"]) for v in data.values())


def run_import(python: str, source: Path, workdir: Path) -> float:
    memory = Path(tempfile.mkdtemp(dir=workdir)) / "memory"
    start = time.perf_counter()
    out = subprocess.run([python, "-c", CLI, "import-captions", str(source), "--memory", str(memory)],
                         capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    shutil.rmtree(memory.parent, ignore_errors=True)
    if out.returncode != 0:
        raise SystemExit(f"{python}: import of {source} failed: {out.stderr[-800:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", action="append", metavar="LABEL=PATH",
                        help="an interpreter to time (repeatable; default: this one)")
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1] / ".." / "shared" / "data")
    parser.add_argument("--sets", default=",".join(SETS), help="comma-separated names of SETS to run")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args()
    offline()
    pythons = [p.split("=", 1) for p in (args.python or [f"this={sys.executable}"])]
    rows = []
    print(f"load before: {load_average()}")
    for name in args.sets.split(","):
        source = args.data / SETS[name]
        videos, captions = counts(source)
        for label, python in pythons:
            seconds = run_import(python, source, args.workdir)
            rows.append([name, label, videos, captions, f"{seconds:.1f} s", f"{videos / seconds:.1f}",
                         f"{captions / seconds:.1f}"])
            print(f"  {name} {label}: {seconds:.1f} s", file=sys.stderr)
    print()
    print(markdown_table(["set", "version", "videos", "captions", "import (wall)", "videos/s", "captions/s"], rows))
    print(f"\nload after: {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
