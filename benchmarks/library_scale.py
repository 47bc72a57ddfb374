"""A library of many videos over a year (issue 31, targets): what the layer above videos costs and how fast it reads.

    python benchmarks/library_scale.py                       # 1,000 Charades videos over 365 days
    python benchmarks/library_scale.py --videos 300 --days 100 --rounds 1

**Library.** The first ``--videos`` videos of the Charades train split (by subject id, then video
id) with actions, imported as ``many_days.py`` imports a subject (each action a micro-event, each
object an OBJECT entity, the scene a LOCATION), spread over ``--days`` consecutive days: video i is
recorded on day ``1 + i * days // videos`` at 09:00 UTC plus one hour per earlier video of that day.

**Import cost of the layer.** The same import, alternated ``--rounds`` times in fresh child
processes: as memtools writes it, and with the library layer's update replaced by nothing
(``memtools.store.library.layer.after_write``); the share is the difference in wall and CPU time.
By default the embedder is the test embedder (``test:384``, a hash: no model time), so the share
is of the write itself and is the largest it can be; ``--embedder default`` imports as a user does
(all-MiniLM-L6-v2 on numpy), where the embedding dominates and the layer's share is smaller.

**Reads.** On the memory with the layer: ``get_entity_timeline(name=...)`` of the library's most
seen entities (one timeline across many videos), ``get_event_chain`` of its most frequent
activities, and ``search_by_time`` over one whole day by clock time; p50 and p95 of ``--calls``
warm calls each. Prints the CPU model and load.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import cpu_model, load_average, markdown_table  # noqa: E402
from many_days import actions_of  # noqa: E402

CHARADES = Path(__file__).resolve().parents[2] / "shared" / "data" / "charades"

IMPORT = r"""
import json, resource, sys, time
from datetime import datetime
from memtools.embed import embedder_from_spec
from memtools.importers.captions import Caption, CaptionedVideo, graph_from_captions
from memtools.schema import EntityType
from memtools.store import Memory

plan, path, layer, spec = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3] == "on", sys.argv[4]
if not layer:
    from memtools.store.library import layer as library
    library.after_write = lambda *args, **kwargs: None

def graph(v):
    entities = [(o, EntityType.OBJECT) for o in v["objects"]] + [(v["scene"], EntityType.LOCATION)]
    return graph_from_captions(CaptionedVideo(
        video_id=v["id"], captions=[Caption(s, e, t) for t, s, e in v["actions"]], duration=v["length"],
        title=v["id"], entities=entities, recorded_at=v["recorded_at"]))

wall, cpu = time.perf_counter(), time.process_time()
with Memory.create(path, embedder_from_spec(spec)) as memory:
    memory.write_videos((graph(v) for v in plan), batch_size=50)
print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}))
"""


def read_plan(annotations: Path, classes_file: Path, videos: int, days: int) -> list[dict]:
    classes = dict(line.split(" ", 1) for line in classes_file.read_text(encoding="utf-8").splitlines() if line.strip())
    with open(annotations, encoding="utf-8", newline="") as handle:
        rows = sorted((r for r in csv.DictReader(handle) if r["actions"].strip()),
                      key=lambda r: (r["subject"], r["id"]))
    plan, per_day = [], {}
    for i, row in enumerate(rows[:videos]):
        day = 1 + i * days // videos
        hour = per_day.get(day, 0)
        per_day[day] = hour + 1
        length, actions = float(row["length"]), actions_of(row, classes)
        start = datetime(2026, 1, 1, 9, tzinfo=timezone.utc) + timedelta(days=day - 1, hours=hour)
        plan.append({"id": f"d{day:03d}-{row['id']}", "length": length, "scene": row["scene"].strip() or "room",
                     "objects": [o.strip() for o in row["objects"].split(";") if o.strip()], "actions": actions,
                     "recorded_at": start.isoformat(), "day": day})
    return plan


def timed_import(plan_file: Path, path: Path, layer: bool, embedder: str) -> dict:
    done = subprocess.run([sys.executable, "-c", IMPORT, str(plan_file), str(path), "on" if layer else "off", embedder],
                          capture_output=True, text=True, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    return json.loads(done.stdout.strip().splitlines()[-1])


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000


def reads(path: Path, plan: list[dict], calls: int, embedder: str) -> list[list[object]]:
    from collections import Counter

    from memtools.embed import embedder_from_spec
    from memtools.store import Memory
    from memtools.tools import MemoryTools

    objects = [o for o, _ in Counter(o.lower() for v in plan for o in v["objects"]).most_common(5)]
    actions = [a for a, _ in Counter(a for v in plan for a, _, _ in v["actions"]).most_common(5)]
    day = Counter(v["day"] for v in plan).most_common(1)[0][0]
    start = datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(days=day - 1)
    window = (start.isoformat(), (start + timedelta(days=1)).isoformat())
    rows = []
    with Memory.open(path, embedder_from_spec(embedder)) as memory:
        tools = MemoryTools(memory)
        cases = [("get_entity_timeline(name=<a most seen object>)",
                  lambda i: tools.get_entity_timeline(name=objects[i % len(objects)])),
                 ("get_event_chain(<a most frequent activity>)",
                  lambda i: tools.get_event_chain(actions[i % len(actions)])),
                 (f"search_by_time(one day: {window[0][:10]}, clock time)",
                  lambda i: tools.search_by_time(start_time=window[0], end_time=window[1]))]
        for name, call in cases:
            for i in range(3):
                call(i)  # warm
            samples = []
            for i in range(calls):
                t = time.perf_counter()
                result = call(i)
                samples.append(time.perf_counter() - t)
            p50, p95 = _percentiles(samples)
            rows.append([name, f"{p50:.1f}", f"{p95:.1f}", len(result.render().splitlines())])
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--annotations", type=Path, default=CHARADES / "Charades_v1_train.csv")
    p.add_argument("--classes", type=Path, default=CHARADES / "Charades_v1_classes.txt")
    p.add_argument("--videos", type=int, default=1000)
    p.add_argument("--days", type=int, default=365)
    p.add_argument("--rounds", type=int, default=2, help="alternated imports with and without the layer")
    p.add_argument("--calls", type=int, default=50, help="warm calls per read")
    p.add_argument("--embedder", default="test:384",
                   help="test:384 (a hash: the write alone, the largest share) or default (MiniLM, as users import)")
    p.add_argument("--keep", type=Path, help="work here and keep it (default: a temporary folder)")
    args = p.parse_args(argv)
    if not args.annotations.is_file():
        p.error(f"{args.annotations} is not there (--annotations: the Charades train CSV)")
    plan = read_plan(args.annotations, args.classes, args.videos, args.days)
    print(f"{len(plan)} videos over {len({v['day'] for v in plan})} days; {cpu_model()}, load {load_average()}")
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        plan_file = work / "plan.json"
        plan_file.write_text(json.dumps(plan))
        times: dict[bool, list[dict]] = {True: [], False: []}
        for r in range(args.rounds):
            for layer in (True, False) if r % 2 == 0 else (False, True):
                path = work / f"memory-{'layer' if layer else 'none'}"
                if path.exists():
                    import shutil

                    shutil.rmtree(path)
                times[layer].append(timed_import(plan_file, path, layer, args.embedder))
        table = []
        for layer in (False, True):
            walls, cpus = [t["wall"] for t in times[layer]], [t["cpu"] for t in times[layer]]
            table.append(["with the layer" if layer else "the layer's update replaced by nothing",
                          " / ".join(f"{w:.1f}" for w in walls), " / ".join(f"{c:.1f}" for c in cpus)])
        share_wall = statistics.median(t["wall"] for t in times[True]) / statistics.median(
            t["wall"] for t in times[False]) - 1
        share_cpu = statistics.median(t["cpu"] for t in times[True]) / statistics.median(
            t["cpu"] for t in times[False]) - 1
        print(markdown_table(("import", "wall s (per round)", "CPU s (per round)"), table))
        print(f"\nthe layer adds {share_wall:+.1%} wall, {share_cpu:+.1%} CPU (medians); load {load_average()}\n")
        print(markdown_table(("read (warm)", "p50 ms", "p95 ms", "lines answered"),
                             reads(work / "memory-layer", plan, args.calls, args.embedder)))
    print(f"\n{cpu_model()}, load {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
