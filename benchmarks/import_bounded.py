"""Bounded caption imports (issue 9, item 2): peak memory and time of ``memtools import-captions``
on a large generated dense-caption file.

    python benchmarks/import_bounded.py              # a ~50 MB file (~10 min on 2 cores)
    python benchmarks/import_bounded.py --mb 5       # a quick run
    python benchmarks/import_bounded.py --src before=/old/src --src after=src --rounds 2   # compare, alternated

The file has ActivityNet's shape (about 3.6 captions a video, sentences of 10-20 words drawn
from a fixed vocabulary, seed 0). The import runs in a subprocess whose peak RSS
(``VmHWM`` in ``/proc``, sampled every 50 ms, with how many videos were written when it peaked) is
reported, with the ``test:384`` embedder, so
the numbers are reading, grouping and storage, not the text model (embedding is measured in
``tool_latency.py`` and the import-speed benchmark).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from _common import cpu_model, load_average, markdown_table

WORDS = ("person man woman child dog ball box table kitchen street field water boat car bike horse guitar "
         "piano drum paint brush wall floor knife onion pan oven door window camera crowd stage rope tree "
         "walks runs throws catches cuts pours plays holds lifts drops jumps climbs rides swims talks shows "
         "red blue green small large wooden metal slowly quickly again then while near behind across into").split()


def write_file(path: Path, megabytes: float, seed: int = 0, prefix: str = "v_") -> tuple[int, int]:
    """A dense-caption file of about ``megabytes`` MB; video ids ``<prefix>0000000``, ..."""
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
            out.write(("," if videos else "") + json.dumps(f"{prefix}{videos:07d}") + ": " + json.dumps(entry))
            videos, captions = videos + 1, captions + n
        out.write("}")
    return videos, captions


def add_file_args(parser: argparse.ArgumentParser) -> None:
    """The options of the generated file and of the import (shared with ``import_phases.py``)."""
    parser.add_argument("--mb", type=float, default=50.0, help="size of the generated file in MB")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--batch-size", type=int, default=None,
                        help="import-captions' --batch-size (default: the command's own)")


def fresh_file(workdir: Path, name: str, megabytes: float) -> tuple[Path, Path, int, int]:
    """An empty folder ``workdir/name`` holding a new caption file: the folder, the file, its videos and captions."""
    work = workdir / name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    source = work / "captions.json"
    videos, captions = write_file(source, megabytes)
    return work, source, videos, captions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_file_args(parser)
    parser.add_argument("--src", action="append", default=[], metavar="NAME=PATH",
                        help="import with the memtools sources in PATH (PYTHONPATH); repeat to compare versions, "
                             "run in turn (default: the installed memtools)")
    parser.add_argument("--rounds", type=int, default=1, help="times each version runs, alternated")
    args = parser.parse_args()
    work, source, videos, captions = fresh_file(args.workdir, "memtools-import-bounded", args.mb)
    versions = [tuple(v.split("=", 1)) for v in args.src] or [("installed", "")]
    rows, rates = [], []
    for _ in range(args.rounds):
        for name, src in versions:
            run = _import(source, work / "memory", src, videos, args.batch_size)
            rows.append([name, f"{source.stat().st_size / 1e6:.1f} MB", f"{videos:,}", f"{captions:,}",
                         f"{run['seconds']:.0f}", f"{captions / run['seconds']:,.0f}", f"{run['peak']:,.0f} MiB",
                         f"{run['anon']:,.0f} MiB",
                         run["peak_at"], f"{run['size']:,.0f} MB", run["check"]])
            first, last = run["rates"]
            rates.append([name, f"{first:,.0f}", f"{last:,.0f}", f"{last / first:.2f}" if first else "n/a",
                          f"{run['open_ms']:,.0f} ms"])
            print(f"{name}: {rows[-1]} {rates[-1]}", flush=True)
    print(f"\n## Bounded caption import ({load_average()}; CPU {cpu_model()})\n")
    print(markdown_table(
        ["version", "file", "videos", "captions", "import s", "captions/s", "peak RSS", "anonymous (sampled)",
         "peak at (videos written)",
         "memory on disk", "memtools check"], rows))
    print("\nThroughput by part of the import (videos/s, from the progress bar's 1 s updates):\n")
    print(markdown_table(["version", "first 10% of videos", "last 10% of videos", "last / first", "open the memory"],
                         rates))
    shutil.rmtree(work, ignore_errors=True)


def _import(source: Path, memory: Path, src: str, videos: int, batch_size: int | None = None) -> dict:
    """One import into a fresh ``memory`` in a subprocess (``src``: its PYTHONPATH, if any): its time,
    peak RSS (and how far the import was when it peaked), throughput, size and check."""
    shutil.rmtree(memory, ignore_errors=True)
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    memtools = Path(sys.executable).with_name("memtools")
    started = time.perf_counter()
    batch = ["--batch-size", str(batch_size)] if batch_size else []
    child = subprocess.Popen([str(memtools), "import-captions", str(source), "--memory", str(memory),
                              "--embedder", "test:384", *batch],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    marks: list[tuple[float, int]] = []  # (seconds since the start, videos written) from the progress bar
    reader = threading.Thread(target=_progress, args=(child.stderr, started, marks, videos), daemon=True)
    reader.start()
    samples: list[tuple[float, int, int]] = []  # (seconds since the start, peak RSS, anonymous RSS in KiB)
    sampler = threading.Thread(target=_sample_rss, args=(child, started, samples), daemon=True)
    sampler.start()
    out = child.stdout.read().decode(errors="replace") if child.stdout else ""
    code = child.wait()
    seconds = time.perf_counter() - started
    reader.join()
    sampler.join()
    if code:
        sys.exit(f"import failed ({code}): {out[-2000:]}")
    # the child's own peak (wait4's rusage), not the largest of all children so far
    peak = max((kib for _, kib, _ in samples), default=0) / 1024
    anon = max((kib for _, _, kib in samples), default=0) / 1024
    at = max(samples, key=lambda s: s[1])[0] if samples else 0.0
    done = max((n for t, n in marks if t <= at), default=0)
    peak_at = "at the end (final indexes)" if done >= videos else f"{done:,} ({done / max(videos, 1):.0%})"
    check = subprocess.run([str(memtools), "check", "--memory", str(memory)], capture_output=True, text=True, env=env)
    return {"seconds": seconds, "peak": peak, "anon": anon, "peak_at": peak_at, "rates": _rates(marks, videos),
            "open_ms": _open_ms(memory, env),
            "size": sum(f.stat().st_size for f in memory.rglob("*") if f.is_file()) / 1e6,
            "check": "clean" if check.returncode == 0 else "DAMAGED"}


def _sample_rss(child: subprocess.Popen, started: float, samples: list[tuple[float, int, int]]) -> None:
    """The child's peak resident set (``VmHWM``) and its anonymous part now (``RssAnon``: the heap and
    other private memory, without the shared libraries' code pages, which the kernel can drop and read
    again) every 50 ms until it exits."""
    status = Path(f"/proc/{child.pid}/status")
    while child.poll() is None:
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
        except OSError:
            break
        kib = int(fields.get("VmHWM", fields.get("VmRSS", "0 kB")).split()[0])
        samples.append((time.perf_counter() - started, kib, int(fields.get("RssAnon", "0 kB").split()[0])))
        time.sleep(0.05)


def _progress(stream, started: float, marks: list[tuple[float, int]], total: int) -> None:
    """Timestamp each update of the import's progress bar (tqdm writes ``n/total`` after each ``\\r``)."""
    pending = ""
    while chunk := os.read(stream.fileno(), 4096):  # what has arrived, at once (a text read waits to fill up)
        pending += chunk.decode(errors="replace")
        *parts, pending = re.split(r"[\r\n]", pending)
        for part in parts:
            found = re.search(rf"(\d+)/{total}\b", part)
            if found:
                marks.append((time.perf_counter() - started, int(found.group(1))))


def _rates(marks: list[tuple[float, int]], total: int) -> tuple[float, float]:
    """Videos per second over the first and the last tenth of the videos (between the bar's updates
    nearest those points)."""
    def at(share: float) -> tuple[float, int]:
        return min(marks, key=lambda m: abs(m[1] - share * total))

    if len(marks) < 4:
        return 0.0, 0.0
    (t0, n0), (t1, n1) = at(0.0), at(0.1)  # from the bar's first line: not the reading of the file before it
    (t2, n2), (t3, n3) = at(0.9), at(1.0)
    return (n1 - n0) / max(t1 - t0, 1e-9), (n3 - n2) / max(t3 - t2, 1e-9)


def _open_ms(memory: Path, env: dict[str, str]) -> float:
    """Opening the memory and passing the check run before every read, in a fresh process (best of 3)."""
    code = ("import sys, time\nfrom memtools.store import Memory\nbest = 1e9\nfor _ in range(3):\n"
            "    t = time.perf_counter()\n    with Memory.open(sys.argv[1]) as m, m.reading():\n        pass\n"
            "    best = min(best, time.perf_counter() - t)\nprint(best * 1000)")
    done = subprocess.run([sys.executable, "-c", code, str(memory)], capture_output=True, text=True, check=True,
                          env=env)
    return float(done.stdout.strip())


if __name__ == "__main__":
    main()
