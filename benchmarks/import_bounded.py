"""Bounded caption imports (issue 9, item 2): peak memory and time of ``memtools import-captions``
on a large generated dense-caption file.

    python benchmarks/import_bounded.py              # a ~50 MB file (~10 min on 2 cores)
    python benchmarks/import_bounded.py --mb 5       # a quick run

The file has ActivityNet's shape (about 3.6 captions a video, sentences of 10-20 words drawn
from a fixed vocabulary, seed 0). The import runs in a subprocess under ``/usr/bin/time``-like
accounting (``resource.getrusage`` of the child: peak RSS) with the ``test:384`` embedder, so
the numbers are reading, grouping and storage, not the text model (embedding is measured in
``tool_latency.py`` and the import-speed benchmark).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import load_average, markdown_table

WORDS = ("person man woman child dog ball box table kitchen street field water boat car bike horse guitar "
         "piano drum paint brush wall floor knife onion pan oven door window camera crowd stage rope tree "
         "walks runs throws catches cuts pours plays holds lifts drops jumps climbs rides swims talks shows "
         "red blue green small large wooden metal slowly quickly again then while near behind across into").split()


def write_file(path: Path, megabytes: float, seed: int = 0) -> tuple[int, int]:
    rng = random.Random(seed)
    videos = captions = 0
    with open(path, "w", encoding="utf-8") as out:
        out.write("{")
        while out.tell() < megabytes * 1e6:
            n = rng.randint(2, 6)
            duration = round(rng.uniform(30, 600), 2)
            stamps = sorted([round(rng.uniform(0, duration - 5), 2) for _ in range(n)])
            entry = {"duration": duration,
                     "timestamps": [[s, round(min(duration, s + rng.uniform(3, 60)), 2)] for s in stamps],
                     "sentences": [" ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 20))).capitalize() + "."
                                   for _ in range(n)]}
            out.write(("," if videos else "") + json.dumps(f"v_{videos:07d}") + ": " + json.dumps(entry))
            videos, captions = videos + 1, captions + n
        out.write("}")
    return videos, captions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=50.0, help="size of the generated file in MB")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args()
    work = args.workdir / "memtools-import-bounded"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    source = work / "captions.json"
    videos, captions = write_file(source, args.mb)
    memory = work / "memory"
    memtools = Path(sys.executable).with_name("memtools")
    started = time.perf_counter()
    done = subprocess.run([str(memtools), "import-captions", str(source), "--memory", str(memory),
                           "--embedder", "test:384"], capture_output=True, text=True)
    seconds = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if done.returncode:
        sys.exit(f"import failed ({done.returncode}): {done.stderr[-2000:]}")
    check = subprocess.run([str(memtools), "check", "--memory", str(memory)], capture_output=True, text=True)
    size_mb = sum(f.stat().st_size for f in memory.rglob("*") if f.is_file()) / 1e6
    print(f"\n## Bounded caption import ({load_average()})\n")
    print(markdown_table(
        ["file", "videos", "captions", "import s", "captions/s", "peak RSS", "memory on disk", "memtools check"],
        [[f"{source.stat().st_size / 1e6:.1f} MB", f"{videos:,}", f"{captions:,}", f"{seconds:.0f}",
          f"{captions / seconds:,.0f}", f"{peak_mb:,.0f} MiB", f"{size_mb:,.0f} MB",
          "clean" if check.returncode == 0 else "DAMAGED"]]))
    first = next((ln for ln in done.stderr.splitlines() if ln.strip()), "")
    print(f"\nFirst progress line: {first!r}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
