"""Activities by meaning (issue 49): does a moment, worded by a model, do what a question names?

A memory written by a vision model words every moment in its own words, differently every day
("person flipped the light switch near the door."), and a question uses its own ("when did I last
turn on a light?"). A sentence embedding alone ranks the two close, but it also ranks "turned off
the lamp" and "fixing the light" close: it hears the topic, not the act. So a question is matched
to a moment by four features, each of which any embedder can give:

* ``core``: the cosine of the two texts' cores (the words left when the doer and the helpers are
  dropped: "flipped the light switch near the door", "turning on a light");
* ``verb``: how well the question's verb is found among the moment's words (1.0 when its lemma is
  there or both verbs name one everyday act, ``_SAME_ACTS``: "switch on" is "turn on", "shut" is
  "close"; else the best cosine of single-word vectors);
* ``object``: the same for each of the question's other words, averaged (1.0 without any);
* ``conflict``: 1.0 when the moment carries the opposite of the question's verb or particle and not
  the word itself (on/off, open/close, put/take, ...): fitted as a weight, applied as a veto (the
  probability is 0: the opposite act is never an occurrence, nor a near miss).

They are combined by a logistic model whose weights were fitted once, on the Charades train split
only (``benchmarks/many_days.py --words sta``; docs/many-days.md says how), into a probability that
the moment is an occurrence of what the question names: ``MATCH`` and above is an occurrence,
``SURE`` and above a sure one, ``DOUBT`` to ``MATCH`` a doubtful near miss shown but never counted.

A question ``a/b`` (``cup/glass/bottle``) is asked once per alternative, the best kept. Words are
lemmatised with ``lemminflect`` (its dictionary ships in the wheel), so "flipped", "flips" and
"flipping" are one verb. The same score groups a library's activities (``group_activities``): a
new activity joins the group of the most alike leader when it is a sure match of it.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import lemminflect
import numpy as np

from memtools.embed.base import normalize

WEIGHTS = (7.142, 9.642, 9.67, -4.789)
"""core, verb, object, conflict: fitted on the Charades train split (issue 49), never on a test split."""
BIAS = -22.37
MATCH = 0.18
"""At and above: an occurrence (chosen on the train split: the best count and last-time accuracy)."""
SURE = 0.5
DOUBT = 0.03
"""From here to ``MATCH``: a doubtful near miss, shown (up to ``DOUBTFUL_SHOWN``) but not counted."""
DOUBTFUL_SHOWN = 10
GROUP = 0.88
"""A new activity joins the group of the leader it matches with at least this probability."""
CORE_FLOOR = 0.25
"""A label whose core cosine is below this is never scored further (cannot reach ``DOUBT``)."""
CANDIDATES = 2000
GROUP_CANDIDATES = 5

_WORD = re.compile(r"[a-z]+")
_DOERS = frozenset("person someone somebody man woman people i he she they we you another other one two guy girl "
                   "boy lady".split())
_HELPERS = frozenset("is are was were be been being am do does did begins begin began starts start started "
                     "continues continue tries try seems appears goes going".split())
_VAGUE = frozenset("something somewhere anything everything thing things".split())
_STOP = frozenset("a an the some their his her my your its our this that these those of to at in on into onto from "
                  "with by for and or as up down off out over under near next while then also again just".split())
_PARTICLES = frozenset("on off up down in out away back".split())
_OPPOSITES = (("on", "off"), ("up", "down"), ("in", "out"), ("open", "close"), ("put", "take"), ("start", "stop"),
              ("sit", "stand"), ("dress", "undress"), ("enter", "leave"), ("push", "pull"), ("give", "take"))
_OPPOSITE: dict[str, frozenset[str]] = {}
for _a, _b in _OPPOSITES:
    _OPPOSITE[_a] = _OPPOSITE.get(_a, frozenset()) | {_b}
    _OPPOSITE[_b] = _OPPOSITE.get(_b, frozenset()) | {_a}
_SAME_ACTS = (
    ("close", "shut"), ("turn on", "switch on", "flip on", "power on", "flip"),
    ("turn off", "switch off", "flip off", "power off", "shut off", "flip"), ("take", "grab", "pick up", "pick"),
    ("put", "place", "set", "lay", "put down", "set down"), ("throw", "toss"),
    ("look", "watch", "view", "gaze", "stare", "glance"), ("laugh", "giggle", "chuckle"), ("smile", "grin"),
    ("wake", "awaken", "wake up"), ("drink", "sip"), ("hold", "carry"), ("tidy", "straighten", "organize", "clean up"),
    ("fix", "repair"), ("talk", "speak", "chat"), ("snuggle", "cuddle"), ("run", "jog", "sprint"), ("walk", "stroll"),
    ("sit", "sit down"), ("stand", "stand up", "get up"),
)
"""Everyday verbs (with their particle) that name one act, whatever the embedder makes of single words:
"flipped the light switch" turns a light on (or off), "shuts" closes, "switches it on" turns it on."""
_ACT_GROUPS: dict[str, frozenset[int]] = {}
for _n, _group in enumerate(_SAME_ACTS):
    for _phrase in _group:
        _ACT_GROUPS[_phrase] = _ACT_GROUPS.get(_phrase, frozenset()) | {_n}
_ALTERNATIVES = re.compile(r"[A-Za-z]+(?:/[A-Za-z]+)+")


@dataclass(frozen=True)
class Parsed:
    """A text as matching sees it: its verb lemma (the first word that can be a verb), its particles
    and its content lemmas (the verb's included)."""

    verb: str | None
    particles: tuple[str, ...]
    words: tuple[str, ...]

    @property
    def objects(self) -> tuple[str, ...]:
        return tuple(w for w in self.words if w != self.verb)

    @property
    def acts(self) -> frozenset[int]:
        """The ``_SAME_ACTS`` groups its verb (alone, or with one of its particles) belongs to."""
        if self.verb is None:
            return frozenset()
        phrases = [self.verb, *(f"{self.verb} {p}" for p in self.particles)]
        return frozenset(n for phrase in phrases for n in _ACT_GROUPS.get(phrase, ()))


def _lemma(word: str, *, verb: bool) -> str:
    lemmas = lemminflect.getAllLemmas(word)
    if verb and "VERB" in lemmas:
        return str(lemmas["VERB"][0])
    for pos in ("NOUN", "VERB", "ADJ", "ADV"):
        if pos in lemmas:
            return str(lemmas[pos][0])
    return word


@functools.lru_cache(maxsize=65536)
def parse(text: str) -> Parsed:
    verb: str | None = None
    particles: list[str] = []
    words: list[str] = []
    for w in _WORD.findall(text.lower()):
        if w in _DOERS or w in _HELPERS or w in _VAGUE:
            continue
        if w in _PARTICLES:
            particles.append(w)
        elif w in _STOP:
            continue
        elif verb is None and "VERB" in lemmas_of(w):
            verb = _lemma(w, verb=True)
            words.append(verb)
        else:
            words.append(_lemma(w, verb=False))
    return Parsed(verb, tuple(particles), tuple(words))


@functools.lru_cache(maxsize=65536)
def lemmas_of(word: str) -> dict[str, tuple[str, ...]]:
    return dict(lemminflect.getAllLemmas(word))


def core(text: str) -> str:
    """The text without its doer, helpers and vague words ("person begins flipping the switch." ->
    "flipping the switch"): what the ``core`` cosine compares."""
    kept = [w for w in _WORD.findall(text.lower()) if w not in _DOERS and w not in _HELPERS and w not in _VAGUE]
    return " ".join(kept) or " ".join(text.lower().split())


def variants(query: str) -> list[str]:
    """One question per alternative of each ``a/b/c`` ("Drinking from a cup/glass" -> two), at most 16."""
    found = _ALTERNATIVES.search(query)
    if found is None:
        return [query]
    out = [v for alt in found.group(0).split("/")
           for v in variants(query[:found.start()] + alt + query[found.end():])]
    return out[:16]


def words_of(texts: Sequence[str]) -> set[str]:
    """The lemmas whose single-word vectors scoring ``texts`` needs."""
    return {w for t in texts for w in parse(t).words}


def _best(word: str, among: Sequence[str], vectors: Mapping[str, np.ndarray]) -> float:
    if word in among:
        return 1.0
    v = vectors.get(word)
    best = 0.0
    if v is not None:
        for other in among:
            u = vectors.get(other)
            if u is not None and len(u) == len(v):
                best = max(best, float(u @ v))
    return best


def features(question: Parsed, moment: Parsed, core_cosine: float, vectors: Mapping[str, np.ndarray]) -> np.ndarray:
    said = set(moment.words) | set(moment.particles)
    if question.verb is None or question.verb in said or question.acts & moment.acts:
        verb = 1.0
    else:
        verb = _best(question.verb, moment.words, vectors)
    objects = question.objects
    if not objects:
        obj = 1.0
    else:
        among = moment.objects or moment.words
        obj = sum(_best(w, among, vectors) for w in objects) / len(objects) if among else 0.0
    conflict = any(x not in said and _OPPOSITE.get(x, frozenset()) & said
                   for x in (question.verb, *question.particles) if x)
    return np.array([core_cosine, verb, obj, float(conflict)], dtype=np.float32)


def probability(question: Parsed, moment: Parsed, core_cosine: float, vectors: Mapping[str, np.ndarray]) -> float:
    """0 where the moment says the opposite (a veto: "turned off" is never a near miss of "turn on")."""
    found = features(question, moment, core_cosine, vectors)
    if found[3]:
        return 0.0
    logit = float(np.dot(WEIGHTS, found)) + BIAS
    return 1.0 / (1.0 + math.exp(-logit))


def unit(vector: object) -> np.ndarray:
    """A flat unit vector (``memtools.embed.base.normalize``; a zero vector stays zero)."""
    return normalize(np.asarray(vector, dtype=np.float32).ravel())


@dataclass(frozen=True)
class Scored:
    index: int
    probability: float


def score(questions: Sequence[tuple[str, np.ndarray]], labels: Sequence[str], label_vectors: np.ndarray,
          vectors_for: Callable[[set[str]], Mapping[str, np.ndarray]], *, floor: float = DOUBT) -> list[Scored]:
    """Each label's probability of being what one of ``questions`` ((text, core vector) per variant)
    names, for those at or above ``floor``, best first. ``label_vectors``: the labels' unit core
    vectors (rows); ``vectors_for``: unit single-word vectors of these lemmas (asked once)."""
    if not len(labels) or not questions:
        return []
    shortlists = []
    for text, qvec in questions:
        cosines = label_vectors @ unit(qvec)
        order = np.argsort(-cosines, kind="stable")[:CANDIDATES]
        shortlists.append((parse(text), [(int(i), float(cosines[i])) for i in order if cosines[i] >= CORE_FLOOR]))
    needed = {w for parsed, _ in shortlists for w in parsed.words}
    needed |= {w for _, short in shortlists for i, _ in short for w in parse(labels[i]).words}
    vectors = vectors_for(needed)
    best: dict[int, float] = {}
    for parsed, short in shortlists:
        for i, c in short:
            p = probability(parsed, parse(labels[i]), c, vectors)
            if p >= floor and p > best.get(i, -1.0):
                best[i] = p
    return sorted((Scored(i, p) for i, p in best.items()), key=lambda s: (-s.probability, s.index))


def group_of(label: str, vector: np.ndarray, leaders: Sequence[str], leader_vectors: np.ndarray,
             vectors: Mapping[str, np.ndarray]) -> tuple[int | None, float]:
    """The leader ``label`` joins (its index and the probability), or (None, 1.0): it leads a new group.
    Only the ``GROUP_CANDIDATES`` leaders of the highest core cosine are scored."""
    if not len(leaders):
        return None, 1.0
    cosines = leader_vectors @ unit(vector)
    parsed = parse(label)
    best: tuple[int | None, float] = (None, 1.0)
    top = 0.0
    for i in np.argsort(-cosines, kind="stable")[:GROUP_CANDIDATES]:
        p = probability(parsed, parse(leaders[i]), float(cosines[i]), vectors)
        if p >= GROUP and p > top:
            best, top = (int(i), p), p
    return best
