"""The many-days protocol in the model's words (issue 49): ``many_days.py --words sta``.

The memory holds, per video, the Charades-STA sentence written for each annotated moment (the first
one written for an interval), as a vision model would word it; the questions use the action class
text of ``Charades_v1_classes.txt``. A moment is linked to a class by the interval's exact start and
end, and only intervals that one class alone annotates are kept (a shared interval's sentence names
one of them): in the memory and in the questions. Days as in ``many_days.py``: each subject's videos
in video-id order, day 1 the smallest id; a day without a kept sentence is not imported.

Questions (every one that qualifies):

* ``last-time`` / ``first-time``: "when did I last (first) <class>?" for classes on >= 2 days; right
  when the day is right and the window has temporal IoU >= 0.5 with the true moment;
* ``count``: "on how many days did I <class>?" (classes on >= 2 days); exact;
* ``order``: "did I <A> before <B> on day N?" for one pair per day of classes that occur once that
  day, A ending before B starts (both moments in the model's words); half asked the other way round.

Answers: ``get_event_chain(<class text>)`` (its last, first item, its ``days``), for order
``get_event_chain(A, video_id=day)`` and the same for B, the likeliest occurrence of each. The
baseline: ``search_nodes(<class text>, node_types=["event"], top_k=10)`` (the latest, earliest hit,
its distinct days, the first hit of each in the day). **Evidence recall**: the share of questions
whose true moments are all among the first 10 occurrences the tool returns (chain and near misses,
likeliest first): a calling model's chance to read the answer, beside the tool's own.
"""

from __future__ import annotations

import csv
import random
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

TYPES = ("last-time", "first-time", "count", "order")


@dataclass
class Moment:
    text: str  # the class text (what questions use)
    sentence: str  # the model's words (what the memory holds)
    start: float
    end: float


@dataclass
class StaDay:
    n: int
    video_id: str
    length: float
    scene: str
    objects: list[str]
    moments: list[Moment] = field(default_factory=list)


def read_sentences(path: Path) -> dict[str, dict[tuple[float, float], str]]:
    """video id -> (start, end) -> the first sentence written for that interval."""
    out: dict[str, dict[tuple[float, float], str]] = defaultdict(dict)
    for line in path.read_text(encoding="utf-8").splitlines():
        head, sep, sentence = line.partition("##")
        parts = head.split()
        if not sep or len(parts) != 3:
            continue
        out[parts[0]].setdefault((float(parts[1]), float(parts[2])), sentence.strip())
    return out


def read_days(annotations: Path, classes_file: Path, sentences: Path, subjects: int, min_videos: int,
              max_days: int) -> dict[str, list[StaDay]]:
    classes = {k: v.strip() for k, v in (line.split(" ", 1) for line in
                                         classes_file.read_text(encoding="utf-8").splitlines() if line.strip())}
    written = read_sentences(sentences)
    with open(annotations, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    by_subject: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_subject[row["subject"]].append(row)
    chosen = [s for s in sorted(by_subject) if sum(r["id"] in written for r in by_subject[s]) >= min_videos]
    out = {}
    for subject in chosen[:subjects]:
        days = []
        for n, row in enumerate(sorted(by_subject[subject], key=lambda r: r["id"])[:max_days or None], 1):
            length = float(row["length"])
            by_interval: dict[tuple[float, float], list[str]] = defaultdict(list)
            for action in filter(None, row["actions"].split(";")):
                cid, start, end = action.split()
                by_interval[(float(start), float(end))].append(classes[cid])
            day = StaDay(n, f"day{n:03d}-{row['id']}", length, row["scene"].strip(),
                         [o.strip() for o in row["objects"].split(";") if o.strip()])
            for (start, end), sentence in sorted(written.get(row["id"], {}).items()):
                named = by_interval.get((start, end), [])
                if len(named) == 1:
                    s = min(start, length)
                    day.moments.append(Moment(named[0], sentence, s, max(s, min(end, length))))
            days.append(day)
        out[subject] = days
    return out


@dataclass
class Question:
    type: str
    subject: str
    args: dict
    gold: object
    moments: list[tuple[int, float, float]]  # the true moments: (day, start, end)


def repeated(moments: Iterable[tuple[str, int, float, float]]) -> Iterator[tuple[str, list, list[int]]]:
    """Each action (text, day, start, end) seen on >= 2 days: (text, its occurrences (day, start, end) in
    order, its days), by text; the questions of both protocols ask about these."""
    on: dict[str, list[tuple[int, float, float]]] = defaultdict(list)
    for text, day, start, end in moments:
        on[text].append((day, start, end))
    for text in sorted(on):
        occ = sorted(on[text])
        day_set = sorted({n for n, _, _ in occ})
        if len(day_set) >= 2:
            yield text, occ, day_set


def last_of(occ: list[tuple[int, float, float]], day_set: list[int]) -> tuple[int, float, float]:
    """The latest occurrence on the last day (by start, then end)."""
    return max((o for o in occ if o[0] == day_set[-1]), key=lambda o: (o[1], o[2]))


def questions(subject: str, days: list[StaDay], rng: random.Random) -> list[Question]:
    held = [d for d in days if d.moments]
    out = []
    for text, occ, day_set in repeated((m.text, d.n, m.start, m.end) for d in held for m in d.moments):
        last = last_of(occ, day_set)
        first = min(o for o in occ if o[0] == day_set[0])
        out.append(Question("last-time", subject, {"action": text}, last, [last]))
        out.append(Question("first-time", subject, {"action": text}, first, [first]))
        out.append(Question("count", subject, {"action": text}, len(day_set),
                            [min(o for o in occ if o[0] == n) for n in day_set]))
    for d in held:
        once = [m for m in d.moments if sum(x.text == m.text for x in d.moments) == 1]
        pairs = [(a, b) for a in once for b in once if a.end <= b.start]
        if pairs:
            a, b = rng.choice(sorted(pairs, key=lambda p: (p[0].start, p[1].start, p[0].text, p[1].text)))
            flip = rng.random() < 0.5
            first, second = (b, a) if flip else (a, b)
            out.append(Question("order", subject, {"a": first.text, "b": second.text, "day": d.n}, not flip,
                                [(d.n, a.start, a.end), (d.n, b.start, b.end)]))
    return out


def _day_of(video_id: str) -> int:
    return int(video_id[3:6])


def _likeliest(chain) -> object | None:
    items = [*chain.chain, *chain.doubtful]
    return max(items, key=lambda c: (c.score, -c.t_start)) if items else None


def answer_library(tools, q: Question, vids: dict[int, str]):
    """(answer, the occurrences the tool returned (likeliest first), the days it counted)."""
    if q.type == "order":
        found = [_likeliest(tools.get_event_chain(q.args[k], video_id=vids[q.args["day"]])) for k in ("a", "b")]
        evidence = [(_day_of(c.video_id), c.t_start, c.t_end) for c in found if c is not None]
        if None in found:
            return None, evidence, None
        return found[0].t_start < found[1].t_start, evidence, None  # type: ignore[union-attr]
    chain = tools.get_event_chain(q.args["action"])
    ranked = sorted([*chain.chain, *chain.doubtful], key=lambda c: -c.score)
    evidence = [(_day_of(c.video_id), c.t_start, c.t_end) for c in ranked]
    days = {_day_of(c.video_id) for c in chain.chain}
    if q.type == "count":
        return (chain.days if chain.days is not None else chain.videos), evidence, days
    if not chain.chain:
        return None, evidence, days
    item = chain.chain[-1] if q.type == "last-time" else chain.chain[0]
    return (_day_of(item.video_id), item.t_start, item.t_end), evidence, days


def answer_baseline(tools, q: Question, vids: dict[int, str]):
    if q.type == "order":
        hits = {k: tools.search_nodes(q.args[k], video_id=vids[q.args["day"]], node_types=["event"], top_k=1).hits
                for k in ("a", "b")}
        if not hits["a"] or not hits["b"]:
            return None
        return hits["a"][0].t_start < hits["b"][0].t_start
    hits = tools.search_nodes(q.args["action"], node_types=["event"], top_k=10).hits
    if q.type == "count":
        return len({h.video_id for h in hits})
    if not hits:
        return None
    pick = max if q.type == "last-time" else min
    h = pick(hits, key=lambda h: (_day_of(h.video_id), h.t_start))
    return (_day_of(h.video_id), h.t_start, h.t_end)


def found_all(q: Question, evidence: list[tuple[int, float, float]], top: int = 10) -> bool:
    shown = evidence[:top]
    return all(any(d == gd and abs(s - gs) < 1e-6 and abs(e - ge) < 1e-6 for d, s, e in shown)
               for gd, gs, ge in q.moments)
