"""Questions across days on real annotations (issue 31, item 5): many videos, one life.

    python benchmarks/many_days.py                          # 5 subjects of the Charades train split
    python benchmarks/many_days.py --subjects 10 --max-days 60
    python benchmarks/many_days.py --annotations other.csv  # the same protocol on other subjects
    python benchmarks/many_days.py --words sta              # the memory in the model's words (issue 49)
    python benchmarks/many_days.py --words sta --annotations A.csv --sentences STA.txt

``--words sta`` is the protocol of ``_many_days_sta.py`` (its docstring): the memory holds the
Charades-STA sentences, the questions the class text. What follows is ``--words labels`` (the default).

**Libraries.** Each Charades ``subject`` filmed many videos in one home. The script takes the
first ``--subjects`` subjects (by subject id) with at least ``--min-videos`` videos, and treats
each subject's videos as consecutive days in a fixed order: **video id, alphabetical** (day 1 is
the smallest id; ``--max-days`` keeps the first days only). A subject is one library, imported
through the caption importer (``graph_from_captions``, as ``memtools import-captions`` does):
each action (class text of ``Charades_v1_classes.txt``, times clipped to the video's length) a
micro-event, each object an OBJECT entity, the scene a LOCATION entity; never the scripts or
descriptions. Video ``day007-46GP8`` is day 7, recorded at 09:00 UTC on 2026-01-07 (day 1 is
2026-01-01), so the library's days are dates. Libraries are cached under ``--workdir`` (a
marker holds a digest of the subject's rows, so other annotations build again).

**Questions** (from the annotations only, every one that qualifies; nothing is tuned per question):

* ``last-time``: "when did I last <action>?" for each action on >= 2 days; right when the day is
  the last day with it and the window has temporal IoU >= 0.5 with its latest occurrence there;
* ``count``: "on how many days did I <action>?" (actions on >= 2 days); exact;
* ``where``: "in which room do I usually <action>?" (actions on >= 3 days whose most frequent
  scene, counted in days, is unique); the scene's name, exact;
* ``order``: "did I <A> before <B> on day N?" for one pair per day of actions that occur once
  that day, A ending before B starts; half the pairs (seeded) asked the other way round; yes/no;
* ``what-changed``: "which objects were in the <scene> on day i and are not on day j?" for each
  two consecutive days in the same scene with such objects; the exact set.

**Answers.** The library path answers each question with one call: ``get_event_chain(activity)``
for last-time (its last occurrence), count (its days: recording dates) and where (its most
frequent place); ``get_entity_timeline(name=<scene>)`` for what-changed (the place's appearances
on the two days and the entities seen there); order is a question inside one day, answered by
``search_nodes(query="<A>; <B>", video_id=<day>, node_types=["event"])`` on both paths. The
baseline uses per-video tools only (today's path): one library-wide ``search_nodes(<action>,
node_types=["event"], top_k=50)``, reading the hits whose text is the action (the latest for
last-time, their videos for count, and for where each of those videos' LOCATION from
``search_entities("room", video_id=...)``); for what-changed ``search_entities("object",
video_id=..., top_k=50)`` of the two days. The last lines are one per
type: ``TYPE accuracy=X baseline=Y n=N``.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import random
import shutil
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _many_days_sta as sta  # noqa: E402
from _annotations import iou  # noqa: E402
from _common import CachedEmbedder, markdown_table, offline  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
DEFAULT_ANNOTATIONS = DATA / "charades" / "Charades_v1_train.csv"
DEFAULT_SENTENCES = DATA / "charades-sta" / "charades_sta_train.txt"
TYPES = ("last-time", "count", "where", "order", "what-changed")
DONE = "bench-build.txt"


def norm(text: str) -> str:
    return " ".join(text.lower().replace("-", " ").split()).strip(" .")


@dataclass
class Day:
    n: int
    video_id: str  # in the memory: day007-46GP8
    length: float
    scene: str
    objects: list[str]
    actions: list[tuple[str, float, float]]  # (class text, start, end), clipped to the length


@dataclass
class Question:
    type: str
    subject: str
    args: dict
    gold: object
    answers: dict = field(default_factory=dict)


def read_days(annotations: Path, classes_file: Path, subjects: int, min_videos: int,
              max_days: int) -> dict[str, list[Day]]:
    classes = dict(line.split(" ", 1) for line in classes_file.read_text(encoding="utf-8").splitlines() if line.strip())
    with open(annotations, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    by_subject: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_subject[row["subject"]].append(row)
    chosen = [s for s in sorted(by_subject) if len(by_subject[s]) >= min_videos][:subjects]
    out = {}
    for subject in chosen:
        ordered = sorted(by_subject[subject], key=lambda r: r["id"])[:max_days or None]
        days = []
        for n, row in enumerate(ordered, 1):
            length = float(row["length"])
            days.append(Day(n, f"day{n:03d}-{row['id']}", length, row["scene"].strip(),
                            [o.strip() for o in row["objects"].split(";") if o.strip()], actions_of(row, classes)))
        out[subject] = days
    return out


def actions_of(row: dict, classes: dict[str, str]) -> list[tuple[str, float, float]]:
    """A Charades row's actions as (class text, start, end), clipped to the video's length."""
    length, out = float(row["length"]), []
    for action in filter(None, row["actions"].split(";")):
        cid, start, end = action.split()
        s, e = min(float(start), length), min(float(end), length)
        out.append((classes[cid].strip(), s, max(s, e)))
    return out


def _start(n: int) -> str:
    """Day ``n``'s recording start: 09:00 UTC, day 1 on 2026-01-01."""
    return (datetime(2026, 1, 1, 9, tzinfo=timezone.utc) + timedelta(days=n - 1)).isoformat()


def build(path: Path, days: list[Day], embedder) -> float:
    """The subject's library, imported once through the caption importer and cached."""
    from memtools.importers.captions import Caption, CaptionedVideo, graph_from_captions
    from memtools.schema import EntityType
    from memtools.store import Memory

    digest = hashlib.sha256(repr([(d.video_id, d.scene, d.objects, d.actions, _start(d.n)) for d in days]
                                 ).encode()).hexdigest()
    if (path / DONE).is_file() and (path / DONE).read_text().split()[1:] == [digest]:
        return float((path / DONE).read_text().split()[0])
    shutil.rmtree(path, ignore_errors=True)
    start = time.perf_counter()

    def graph(d: Day):
        entities = [(o, EntityType.OBJECT) for o in d.objects] + ([(d.scene, EntityType.LOCATION)] if d.scene else [])
        return graph_from_captions(CaptionedVideo(
            video_id=d.video_id, captions=[Caption(s, e, t) for t, s, e in d.actions], duration=d.length,
            title=d.video_id, entities=entities, recorded_at=_start(d.n)))

    with Memory.create(path, embedder) as memory:
        memory.write_videos((graph(d) for d in days if d.actions), batch_size=50)
    seconds = time.perf_counter() - start
    embedder.cache.save()
    (path / DONE).write_text(f"{seconds:.1f} {digest}")
    return seconds


def questions(subject: str, days: list[Day], rng: random.Random) -> list[Question]:
    held = [d for d in days if d.actions]  # a video without actions is not imported
    out = []
    for text, occ, day_set in sta.repeated((t, d.n, s, e) for d in held for t, s, e in d.actions):
        last = sta.last_of(occ, day_set)
        out.append(Question("last-time", subject, {"action": text}, last))
        out.append(Question("count", subject, {"action": text}, len(day_set)))
        scenes = Counter(held_day.scene for held_day in held if held_day.n in day_set)
        top = scenes.most_common(2)
        if len(day_set) >= 3 and (len(top) == 1 or top[0][1] > top[1][1]):
            out.append(Question("where", subject, {"action": text}, top[0][0]))
    for d in held:
        once = [a for a in d.actions if sum(b[0] == a[0] for b in d.actions) == 1]
        pairs = [(a, b) for a in once for b in once if a[2] <= b[1]]
        if pairs:
            a, b = rng.choice(sorted(pairs))
            flip = rng.random() < 0.5
            first, second = (b, a) if flip else (a, b)
            out.append(Question("order", subject, {"a": first[0], "b": second[0], "day": d.n}, not flip))
    last_in: dict[str, Day] = {}
    for d in held:
        before = last_in.get(d.scene)
        if before is not None:
            gone = {norm(o) for o in before.objects} - {norm(o) for o in d.objects}
            if gone:
                out.append(Question("what-changed", subject, {"scene": d.scene, "i": before.n, "j": d.n}, gone))
        last_in[d.scene] = d
    return out


def _day_of(video_id: str) -> int:
    return int(video_id[3:6])


def _event_hits(tools, text: str, **kwargs) -> list:
    hits = tools.search_nodes(text, node_types=["event"], **kwargs).hits
    return [h for h in hits if norm(text) in norm(h.text)]


def _order(tools, q: Question, vid: str) -> bool | None:
    a, b = q.args["a"], q.args["b"]
    hits = tools.search_nodes(f"{a}; {b}", video_id=vid, node_types=["event"], top_k=20).hits
    starts = {}
    for h in sorted(hits, key=lambda h: h.t_start):
        for text in (a, b):
            if norm(text) in norm(h.text):
                starts.setdefault(text, h.t_start)
    return starts[a] < starts[b] if a in starts and b in starts else None


def _objects(names) -> set[str]:
    return {norm(n) for n in names}


def answer_library(tools, q: Question, vids: dict[int, str]):
    if q.type in ("last-time", "count", "where"):
        chain = tools.get_event_chain(q.args["action"])
        if not chain.chain:
            return None
        if q.type == "last-time":
            last = chain.chain[-1]
            return (_day_of(last.video_id), last.t_start, last.t_end)
        if q.type == "count":
            return chain.days if chain.days is not None else chain.videos
        return chain.places[0] if chain.places else None
    if q.type == "order":
        return _order(tools, q, vids[q.args["day"]])
    timeline = tools.get_entity_timeline(name=q.args["scene"])
    seen: dict[int, set[str]] = defaultdict(set)
    for item in timeline.library:
        if item.entity.entity_type == "LOCATION" and norm(item.entity.name) == norm(q.args["scene"]):
            for a in item.appearances:
                seen[_day_of(a.video_id)] |= _objects(a.present)
    return seen[q.args["i"]] - seen[q.args["j"]]


def answer_baseline(tools, q: Question, vids: dict[int, str]):
    if q.type in ("last-time", "count", "where"):
        hits = _event_hits(tools, q.args["action"], top_k=50)
        if not hits:
            return None
        if q.type == "last-time":
            last = max(hits, key=lambda h: (_day_of(h.video_id), h.t_start))
            return (_day_of(last.video_id), last.t_start, last.t_end)
        if q.type == "count":
            return len({h.video_id for h in hits})
        places = Counter()
        for vid in dict.fromkeys(h.video_id for h in hits):
            rooms = [e.name for e in tools.search_entities("room", video_id=vid, top_k=50).entities
                     if e.entity_type == "LOCATION"]
            places.update(rooms[:1])
        return places.most_common(1)[0][0] if places else None
    if q.type == "order":
        return _order(tools, q, vids[q.args["day"]])

    def objects(n: int) -> set[str]:
        found = tools.search_entities("object", video_id=vids[n], top_k=50).entities
        return _objects(e.name for e in found if e.entity_type == "OBJECT")
    return objects(q.args["i"]) - objects(q.args["j"])


def correct(q: Question, answer) -> bool:
    if answer is None:
        return False
    if q.type == "last-time":
        day, s, e = answer
        gold_day, gs, ge = q.gold  # type: ignore[misc]
        return day == gold_day and iou(s, e, gs, ge) >= 0.5
    if q.type == "where":
        return norm(answer) == norm(q.gold)  # type: ignore[arg-type]
    return answer == q.gold


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--annotations", type=Path, default=DEFAULT_ANNOTATIONS,
                        help="Charades-format CSV (default: the train split in ../shared/data/charades)")
    parser.add_argument("--classes", type=Path, default=None,
                        help="class id -> text (default: Charades_v1_classes.txt beside the annotations)")
    parser.add_argument("--words", choices=("labels", "sta"), default="labels",
                        help="what the memory holds: the class labels (the questions' words) or the STA sentences")
    parser.add_argument("--sentences", type=Path, default=DEFAULT_SENTENCES,
                        help="Charades-STA 'VIDEO start end##sentence' file, for --words sta (default: train)")
    parser.add_argument("--subjects", type=int, default=5, help="how many subjects (libraries), by subject id")
    parser.add_argument("--min-videos", type=int, default=20, help="a subject needs at least this many videos")
    parser.add_argument("--max-days", type=int, default=0, help="keep the first days of each subject (0: all)")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/memtools-bench"), help="cached libraries")
    parser.add_argument("--seed", type=int, default=0, help="order questions: which pair, and which way round")
    args = parser.parse_args()
    offline()
    from memtools.embed import default_embedder

    classes = args.classes or args.annotations.with_name("Charades_v1_classes.txt")
    args.workdir.mkdir(parents=True, exist_ok=True)
    embedder = CachedEmbedder(default_embedder(), args.workdir / "memtools-many-days-texts.npz")
    if args.words == "sta":
        return run_sta(args, classes, embedder)
    from memtools.store import Memory
    from memtools.tools import MemoryTools

    subjects = read_days(args.annotations, classes, args.subjects, args.min_videos, args.max_days)
    scores: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # type -> [library, baseline, n]
    rows = []
    for subject, days in subjects.items():
        path = args.workdir / f"memtools-many-days-{subject}"
        seconds = build(path, days, embedder)
        asked = questions(subject, days, random.Random(f"{args.seed}:{subject}"))
        vids = {d.n: d.video_id for d in days}
        with Memory.open(path, embedder) as memory:
            tools = MemoryTools(memory)
            for q in asked:
                cell = scores[q.type]
                cell[0] += correct(q, answer_library(tools, q, vids))
                cell[1] += correct(q, answer_baseline(tools, q, vids))
                cell[2] += 1
        rows.append([subject, len(days), len(asked), f"{seconds:.0f}"])
        print(f"  {subject}: {len(days)} days, {len(asked)} questions", file=sys.stderr)
    embedder.cache.save()
    print(markdown_table(["subject", "days", "questions", "import s"], rows))
    print()
    for kind in TYPES:
        lib, base, n = scores[kind]
        print(f"{kind} accuracy={lib / n if n else 0:.3f} baseline={base / n if n else 0:.3f} n={n}")
    return 0


def run_sta(args: argparse.Namespace, classes: Path, embedder) -> int:
    """``--words sta``: the memory in the model's words (``_many_days_sta``)."""
    from memtools.store import Memory
    from memtools.tools import MemoryTools

    subjects = sta.read_days(args.annotations, classes, args.sentences, args.subjects, args.min_videos,
                             args.max_days)
    cells: dict[str, Counter] = defaultdict(Counter)
    rows = []
    for subject, sdays in subjects.items():
        days = [Day(d.n, d.video_id, d.length, d.scene, d.objects, [(m.sentence, m.start, m.end) for m in d.moments])
                for d in sdays]
        seconds = build(args.workdir / f"memtools-many-days-sta-{subject}", days, embedder)
        asked = sta.questions(subject, sdays, random.Random(f"{args.seed}:{subject}"))
        vids = {d.n: d.video_id for d in days}
        with Memory.open(args.workdir / f"memtools-many-days-sta-{subject}", embedder) as memory:
            tools = MemoryTools(memory)
            for q in asked:
                cell = cells[q.type]
                answer, evidence, counted = sta.answer_library(tools, q, vids)
                cell["library"] += correct(q, answer)  # type: ignore[arg-type]
                cell["baseline"] += correct(q, sta.answer_baseline(tools, q, vids))  # type: ignore[arg-type]
                cell["evidence"] += sta.found_all(q, evidence)
                cell["n"] += 1
                if q.type == "count" and counted is not None:
                    gold = {d for d, _, _ in q.moments}
                    cell["precision"] += len(counted & gold) / len(counted) if counted else 0.0
                    cell["recall"] += len(counted & gold) / len(gold)
        rows.append([subject, len(days), sum(bool(d.moments) for d in sdays), len(asked), f"{seconds:.0f}"])
        print(f"  {subject}: {len(days)} days, {len(asked)} questions", file=sys.stderr)
    embedder.cache.save()
    print(markdown_table(["subject", "days", "days with sentences", "questions", "import s"], rows))
    print()
    for kind in sta.TYPES:
        c = cells[kind]
        n = c["n"] or 1
        extra = (f" day_precision={c['precision'] / n:.3f} day_recall={c['recall'] / n:.3f}"
                 if kind == "count" else "")
        print(f"{kind} evidence_recall@10={c['evidence'] / n:.3f}{extra}")
    for kind in sta.TYPES:
        c = cells[kind]
        n = c["n"] or 1
        print(f"{kind} accuracy={c['library'] / n:.3f} baseline={c['baseline'] / n:.3f} n={c['n']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
