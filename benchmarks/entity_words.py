"""Entities across days, in other words (issue 49, item 4): does library linking keep one thing one
library entity when the days name it differently, and two things two?

    python benchmarks/entity_words.py                  # Charades train + Charades-STA train
    python benchmarks/entity_words.py --min-videos 20  # only the subjects with many days

**Data** (train splits only, never a test split). Each Charades ``subject`` is one library; its videos
are its days in video-id order. A video's things are its annotated objects (``objects`` of
``Charades_v1_train.csv``, those annotated at least ``--min-count`` times in the file, without the
``a/b`` ones); its place is its ``scene``. Each thing is *worded* as a day would word it: when one of the
video's Charades-STA sentences names it, as that sentence does (a noun phrase of the sentence, with
a following prepositional phrase: "a switch by the door", "the refrigerator door", "a cup of
coffee"; one drawn per thing, seeded by the video), else by its annotated word. A noun phrase
*names* an annotated object when one of its words, lemmatised, is the object's word or one of its
synonyms (``SYNONYMS``, the answer key: "couch" names a "sofa"), and it names exactly one of the
video's objects (else it is left out: "the closet door" in a video with a closet and a door).

**Truth**: two things of one subject on different days are one entity when they are the same
annotated object (its words lemmatised, and ``CANONICAL``: "shoes" and "shoe", "fridge" and
"refrigerator" are one). Charades annotates classes, not instances: every door of one home is one door
here. **Linked**: each video goes
through the caption importer (``graph_from_captions``: the things as OBJECT entities, the scene a
LOCATION), the entity rows and their vectors (the default embedder, MiniLM, as a memory embeds them),
and the library layer's input (``video_layer``); ``Linker`` links them day by day under each rule set,
given the same embedder for the names (meaning evidence). Pairs of things on different days:
precision, recall and F1 of "same library entity", and precision and recall over the pairs worded
differently (``reworded``). Rules are chosen on the subjects of even rank (``choose``: the best F1,
then the best reworded precision within 0.001 of it) and checked on the others (``check``); the last
lines name the chosen rules' most frequent wrong links and the rules.
"""

from __future__ import annotations

import argparse
import csv
import random
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from math import comb
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CachedEmbedder, cpu_model, markdown_table, offline  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
DEFAULT_CSV = DATA / "charades" / "Charades_v1_train.csv"
DEFAULT_STA = DATA / "charades-sta" / "charades_sta_train.txt"
SYNONYMS = {
    "sofa": ("couch",), "couch": ("sofa",), "refrigerator": ("fridge",), "fridge": ("refrigerator",),
    "television": ("tv",), "tv": ("television",), "phone": ("cellphone", "smartphone"),
    "picture": ("photo", "photograph"), "stairs": ("staircase", "stairway"), "clothes": ("clothing",),
    "clothing": ("clothes",), "cabinet": ("cupboard",),
}
"""The answer key's synonyms: other words naming the annotated object."""
CANONICAL = {"couch": "sofa", "fridge": "refrigerator", "tv": "television", "clothing": "clothes"}
"""The answer key's classes: an annotated word and its synonym (or its plural: "shoes", "dishes") are one
class, as annotators use them."""
DETERMINERS = frozenset("the a an his her their some its my your our this that these those another".split())
BREAK = frozenset("of to at in on into onto from with by for and or as up down off out over under near next while "
                  "then also again just away back around through across inside outside behind beside aside is are "
                  "was were be they it them he she him".split())
ATTACH = frozenset("on in by near of with under behind beside at".split())
BEFORE = "name + vector (before)"
MEANINGS = (0.775, 0.8, 0.825, 0.85, 0.875)
PEOPLE = frozenset("person people man woman guy girl boy lady someone somebody persons".split())


def lemmas(word: str) -> dict[str, tuple[str, ...]]:
    import lemminflect

    return dict(lemminflect.getAllLemmas(word))


def noun_lemma(word: str) -> str:
    found = lemmas(word)
    return str(found["NOUN"][0]) if "NOUN" in found else word


def _noun_words(tokens: Sequence[str], start: int) -> list[str]:
    """The noun phrase's words from ``start`` (after its determiner): up to 3, ending before a function
    word or a verb form ("takes", "holding" after a noun)."""
    out: list[str] = []
    for w in tokens[start:start + 3]:
        found = lemmas(w)
        if w in BREAK or w in DETERMINERS or (found and "NOUN" not in found and "ADJ" not in found):
            break
        if out and "VERB" in found and found["VERB"][0] != w:
            break
        out.append(w)
    return out


def noun_phrases(sentence: str) -> list[tuple[list[str], str]]:
    """(core words, wording) of each determiner-led noun phrase of ``sentence``: "a switch by the door"."""
    tokens = re.findall(r"[a-z]+", sentence.lower())
    out: list[tuple[list[str], str]] = []
    i = 0
    while i < len(tokens):
        if tokens[i] not in DETERMINERS:
            i += 1
            continue
        core = _noun_words(tokens, i + 1)
        j = i + 1 + len(core)
        if core and core[-1] not in PEOPLE:
            words = [tokens[i], *core]
            if j + 1 < len(tokens) and tokens[j] in ATTACH and tokens[j + 1] in DETERMINERS:
                tail = _noun_words(tokens, j + 2)
                if tail:
                    words += [tokens[j], tokens[j + 1], *tail]
            out.append((core, " ".join(words)))
        i = max(j, i + 1)
    return out


@dataclass
class Thing:
    video_id: str
    gold: str  # the annotated object's class
    wording: str
    from_sentence: bool


@dataclass
class DayInput:
    video_id: str
    subject: str
    scene: str
    things: list[Thing]
    sentences: list[tuple[float, float, str]]


def load(csv_path: Path, sta_path: Path, min_count: int) -> dict[str, list[DayInput]]:
    """Subject -> its days (videos with STA sentences, in video-id order), things worded as above."""
    rows = {r["id"]: r for r in csv.DictReader(csv_path.open(encoding="utf-8"))}
    sentences: dict[str, list[tuple[float, float, str]]] = defaultdict(list)
    for line in sta_path.read_text(encoding="utf-8").splitlines():
        if "##" in line:
            head, text = line.split("##", 1)
            vid, start, end = head.split()
            sentences[vid].append((float(start), float(end), text.strip()))
    counts = Counter(o for r in rows.values() for o in r["objects"].split(";") if o)
    vocab = {o for o, n in counts.items() if n >= min_count and "/" not in o}
    by_subject: dict[str, list[DayInput]] = defaultdict(list)
    for vid in sorted(sentences):
        row = rows.get(vid)
        if row is None:
            continue
        objects = sorted({o for o in row["objects"].split(";") if o in vocab})
        terms = {o: {noun_lemma(w) for x in (o, *SYNONYMS.get(o, ())) for w in x.split()} for o in objects}
        named: dict[str, set[str]] = defaultdict(set)
        for _, _, text in sentences[vid]:
            for core, wording in noun_phrases(text):
                words = {noun_lemma(w) for w in core}
                hits = [o for o in objects if terms[o] & words]
                if len(hits) == 1:
                    named[hits[0]].add(wording)
        things, seen = [], set()
        for o in objects:
            gold = CANONICAL.get(o) or " ".join(noun_lemma(w) for w in o.split())
            if gold in seen:
                continue
            seen.add(gold)
            options = sorted(named.get(o, ()))
            wording = random.Random(f"{vid}/{o}").choice(options) if options else o
            things.append(Thing(vid, gold, wording, bool(options)))
        by_subject[row["subject"]].append(DayInput(vid, row["subject"], row["scene"], things, sentences[vid]))
    return by_subject


def layers(days: Sequence[DayInput], embedder) -> tuple[list, dict[str, Thing]]:
    """Each day's library-layer input (the caption importer's path) and canonical id -> its thing."""
    from memtools.importers.captions import Caption, CaptionedVideo, graph_from_captions
    from memtools.schema import EntityType
    from memtools.store.library.layer import video_layer
    from memtools.store.tables.entities import entity_rows

    out, truth = [], {}
    for day in days:
        entities = [(t.wording, EntityType.OBJECT) for t in day.things]
        if day.scene:
            entities.append((day.scene, EntityType.LOCATION))
        graph = graph_from_captions(CaptionedVideo(
            video_id=day.video_id, captions=[Caption(s, max(e, s), t) for s, e, t in day.sentences],
            duration=max(e for _, e, _ in day.sentences), title=day.video_id, entities=entities))
        rows = entity_rows([graph])
        vectors = embedder.embed_documents([r["text"] for r in rows])
        for r, v in zip(rows, vectors, strict=True):
            r["vector"] = v
        by_wording = {t.wording: t for t in day.things}
        for r in rows:
            if r["entity_type"] == "OBJECT":
                truth[r["id"]] = by_wording[r["name"]]
        out.append(video_layer(graph, rows))
    return out, truth


@dataclass
class Counts:
    true_pairs: int = 0
    linked_pairs: int = 0
    right_pairs: int = 0
    reworded_true: int = 0
    reworded_linked: int = 0
    reworded_right: int = 0
    libs: int = 0
    objects: int = 0

    def add(self, other: Counts) -> None:
        for k in vars(self):
            setattr(self, k, getattr(self, k) + getattr(other, k))


def _pairs(groups: Iterable[list[Thing]]) -> tuple[int, int]:
    """Pairs within groups, and those of them worded differently."""
    total = reworded = 0
    for g in groups:
        total += comb(len(g), 2)
        reworded += comb(len(g), 2) - sum(comb(n, 2) for n in Counter(norm(t.wording) for t in g).values())
    return total, reworded


def norm(text: str) -> str:
    from memtools.store.tables.entities import _norm

    return _norm(text)


def score(links: Mapping[str, str], truth: Mapping[str, Thing]) -> Counts:
    """Pair counts of one subject: ``links`` canonical id -> library id."""
    by_gold: dict[str, list[Thing]] = defaultdict(list)
    by_lib: dict[str, list[Thing]] = defaultdict(list)
    by_both: dict[tuple[str, str], list[Thing]] = defaultdict(list)
    for cid, thing in truth.items():
        by_gold[thing.gold].append(thing)
        by_lib[links[cid]].append(thing)
        by_both[(links[cid], thing.gold)].append(thing)
    true_pairs, reworded_true = _pairs(by_gold.values())
    linked_pairs, reworded_linked = _pairs(by_lib.values())
    right_pairs, reworded_right = _pairs(by_both.values())
    return Counts(true_pairs, linked_pairs, right_pairs, reworded_true, reworded_linked, reworded_right, len(by_lib),
                  len(by_gold))


def mistakes(links: Mapping[str, str], truth: Mapping[str, Thing]) -> Counter[tuple[str, str]]:
    """(wording, the usual wording of its library entity) of each thing linked to an entity that is mostly
    another thing."""
    by_lib: dict[str, list[Thing]] = defaultdict(list)
    for cid, thing in truth.items():
        by_lib[links[cid]].append(thing)
    out: Counter[tuple[str, str]] = Counter()
    for things in by_lib.values():
        usual = Counter(t.gold for t in things).most_common(1)[0][0]
        wording = Counter(norm(t.wording) for t in things if t.gold == usual).most_common(1)[0][0]
        out.update((norm(t.wording), wording) for t in things if t.gold != usual)
    return out


def link(days_layers: Sequence, rules, embed) -> dict[str, str]:
    from memtools.store.library.link_rules import Linker

    linker = Linker(rules=rules, embed=embed)
    out: dict[str, str] = {}
    for layer in days_layers:
        out.update((m.profile.id, m.lib_id) for m in linker.add_video(layer.profiles))
    return out


def _ratio(a: int, b: int) -> float:
    return a / b if b else 1.0


def measures(c: Counts) -> dict[str, float]:
    precision, recall = _ratio(c.right_pairs, c.linked_pairs), _ratio(c.right_pairs, c.true_pairs)
    return {"precision": precision, "recall": recall,
            "F1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
            "reworded precision": _ratio(c.reworded_right, c.reworded_linked),
            "reworded recall": _ratio(c.reworded_right, c.reworded_true)}


def row(name: str, c: Counts) -> list[object]:
    return [name, *(f"{v:.3f}" for v in measures(c).values()), c.libs, c.objects]


def rule_sets() -> dict[str, object]:
    from memtools.store.library.link_rules import BY_NAME, LinkRules

    out: dict[str, object] = {BEFORE: BY_NAME, "+ head": LinkRules(head=True, meaning=None)}
    for t in MEANINGS:
        out[f"+ meaning {t}"] = LinkRules(head=False, meaning=t)
    for t in MEANINGS:
        out[f"+ head + meaning {t}"] = LinkRules(head=True, meaning=t)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--annotations", type=Path, default=DEFAULT_CSV)
    parser.add_argument("--sta", type=Path, default=DEFAULT_STA)
    parser.add_argument("--min-count", type=int, default=20, help="objects annotated at least this often")
    parser.add_argument("--min-videos", type=int, default=2, help="subjects with at least this many days")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/memtools-bench"), help="the text vectors' cache")
    args = parser.parse_args()
    offline()
    from memtools.embed import default_embedder

    args.workdir.mkdir(parents=True, exist_ok=True)
    embedder = CachedEmbedder(default_embedder(), args.workdir / "memtools-entity-words-texts.npz")
    subjects = {s: d for s, d in sorted(load(args.annotations, args.sta, args.min_count).items())
                if len(d) >= args.min_videos}
    prepared = {s: layers(d, embedder) for s, d in subjects.items()}
    embedder.cache.save()
    things = [t for d in subjects.values() for day in d for t in day.things]
    print(f"{len(subjects)} subjects, {sum(len(d) for d in subjects.values())} days, {len(things)} things, "
          f"{sum(t.from_sentence for t in things)} worded by a sentence; CPU {cpu_model()}\n")
    halves = {"choose": list(subjects)[0::2], "check": list(subjects)[1::2]}
    results: dict[str, dict[str, Counts]] = {}
    for name, rules in rule_sets().items():
        results[name] = {}
        for half, members in halves.items():
            total = Counts()
            for s in members:
                layers_, truth = prepared[s]
                total.add(score(link(layers_, rules, embedder.embed_documents), truth))
            results[name][half] = total
    header = ["rules", "precision", "recall", "F1", "reworded precision", "reworded recall", "library entities",
              "true entities"]
    for half in halves:
        days = [day for s in halves[half] for day in subjects[s]]
        print(f"### {half} ({len(halves[half])} subjects, {len(days)} days, "
              f"{sum(len(day.things) for day in days)} things)\n")
        print(markdown_table(header, [row(name, r[half]) for name, r in results.items()]))
        print()
    best = max(measures(r["choose"])["F1"] for r in results.values())
    chosen = max((n for n, r in results.items() if measures(r["choose"])["F1"] >= best - 0.001),
                 key=lambda n: measures(results[n]["choose"])["reworded precision"])
    rules = rule_sets()[chosen]
    wrong: Counter[tuple[str, str]] = Counter()
    for s in halves["choose"]:
        layers_, truth = prepared[s]
        wrong.update(mistakes(link(layers_, rules, embedder.embed_documents), truth))
    print("most frequent wrong links of the chosen rules on 'choose' (a thing's wording, its library entity's "
          "usual wording): " + "; ".join(f"{a} / {b} ({n})" for (a, b), n in wrong.most_common(8)))
    print(f"chosen (the best F1 on 'choose', then the best reworded precision within 0.001 of it): {chosen}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
