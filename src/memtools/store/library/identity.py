"""Who is who, as rules: voice and face clusters attached to a video's PERSON entity, and matched across
videos into one library-level person (``lib/person_0001``). Pure functions; ``memtools.store.library.people``
feeds them and keeps the result in ``library.sqlite``.

**A cluster** is generic: its kind (``voice``: a speaker label ``S1`` of a video, kept in
``voices/<video>.json``; ``face``: a face cluster ``F1`` from ``faces/<video>.json``; ``name``: a speaker a
subtitle or a diarising server named, with no vector), its video, label, unit centroid (``None`` once
forgotten) and the times it is heard or seen.

**Within a video** a cluster attaches to one canonical PERSON entity, by the strongest evidence there is:
``user`` (the user named the cluster: ``label_person``), ``name`` (the speaker's name is the entity's name),
``model`` (the model's entity SAYS the cluster's utterances, or is the only person on screen while it speaks:
co-occurrence in time). Clusters attached to one entity are one person of that video.

**Across videos** each video's persons, in library order, join the library person with the strongest
evidence: ``user`` (the same name given by the user), ``name`` (the same known name), ``voice`` / ``face``
(centroid cosine at least ``LINK[kind]``). Never when the evidence conflicts: a library person already holding
a person of that video (two clusters of one video are two people unless the user merged their entities),
different user-given names (or different known names), or one kind matching while another kind is clearly
apart (below ``APART[kind]``: a face that contradicts a voice). The user's names win over vectors.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

LINK = {"voice": 0.93, "face": 0.82}
"""Centroid cosine at or above which two videos' clusters are one person. Voice (Resemblyzer GE2E, cluster
centroids of a few utterances): chosen with ``benchmarks/voice_identity.py`` (docs/people.md gives the table).
Face (dlib's 128-d embedder): its documented same-person distance 0.6 on unit vectors, 1 - 0.6**2 / 2."""
APART = {"voice": 0.75, "face": 0.6}
"""Below this cosine two clusters of a kind are clearly different people: a match by another kind is refused."""
USER_MARK = re.compile(r"^Named by the user as the person of (voice|face) (\S+)\.")
SPEAKER_LABEL = re.compile(r"^[SF]\d+$")
SOURCES = ("user", "name", "model", "voice", "face")
CONFIDENCE = {"user": 1.0, "name": 0.9, "model": 0.8}
WEAK = 0.5
"""An attachment by co-occurrence in time scores at most this: too weak to make two clusters one person."""


def user_mark(kind: str, label: str) -> str:
    """A distinctive feature of the entity mention ``label_person`` adds: the cluster it is the person of."""
    return f"Named by the user as the person of {kind} {label}."


def norm_name(name: str | None) -> str:
    return " ".join((name or "").lower().split()).strip(" .")


@dataclass
class Cluster:
    """One voice, face or named-speaker cluster of a video, and what it is attached to there."""

    kind: str
    video_id: str
    label: str
    spans: list[tuple[float, float]]
    centroid: np.ndarray | None = None
    name: str | None = None
    user_named: bool = False
    canonical_id: str | None = None
    sources: list[str] = field(default_factory=list)
    confidence: float = 0.0

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.video_id, self.kind, self.label)

    @property
    def t_first(self) -> float:
        return min((a for a, _ in self.spans), default=0.0)


@dataclass(frozen=True)
class PersonEntity:
    """A canonical PERSON entity of a video: its id, name, mention ids and appearance times."""

    id: str
    name: str
    mentions: frozenset[str]
    spans: tuple[tuple[float, float], ...]


def _overlap(a: Sequence[tuple[float, float]], b: Sequence[tuple[float, float]]) -> float:
    return sum(max(0.0, min(x1, y1) - max(x0, y0)) + (1e-3 if x0 <= y1 and y0 <= x1 else 0.0)
               for x0, x1 in a for y0, y1 in b)


def attach(cluster: Cluster, persons: Sequence[PersonEntity], user_mentions: Mapping[tuple[str, str], str],
           says: Mapping[str, int]) -> None:
    """Attach ``cluster`` to one of its video's PERSON entities (sets ``canonical_id``, ``sources``, ``confidence``).

    ``user_mentions``: (kind, label) -> the mention the user named it by; ``says``: mention id -> how many of the
    cluster's utterances it SAYS (edges from the model)."""
    of_mention = {m: p for p in persons for m in p.mentions}
    mention = user_mentions.get((cluster.kind, cluster.label))
    if mention is not None and mention in of_mention:
        cluster.canonical_id, cluster.sources, cluster.confidence = of_mention[mention].id, ["user"], 1.0
        return
    wanted = norm_name(cluster.name)
    named = [p for p in persons if wanted and norm_name(p.name) == wanted]
    if named:
        cluster.canonical_id, cluster.sources, cluster.confidence = named[0].id, ["name"], CONFIDENCE["name"]
        return
    spoken: dict[str, int] = {}
    for m, n in says.items():
        if m in of_mention:
            spoken[of_mention[m].id] = spoken.get(of_mention[m].id, 0) + n
    if spoken:
        best = max(sorted(spoken), key=lambda k: spoken[k])
        share = spoken[best] / max(1, sum(spoken.values()))
        cluster.canonical_id, cluster.sources = best, ["model"]
        cluster.confidence = round(CONFIDENCE["model"] * share, 4)
        return
    together = sorted(((_overlap(cluster.spans, p.spans), p.id) for p in persons), reverse=True)
    together = [t for t in together if t[0] > 0]
    if together and (len(together) == 1 or together[0][0] >= 2 * together[1][0]):
        total = sum(b - a for a, b in cluster.spans) or 1.0
        cluster.canonical_id, cluster.sources = together[0][1], ["model"]
        cluster.confidence = round(WEAK * min(1.0, together[0][0] / total), 4)


@dataclass
class Person:
    """A library-level person: the clusters of one or more videos."""

    id: str
    clusters: list[Cluster] = field(default_factory=list)

    @property
    def videos(self) -> set[str]:
        return {c.video_id for c in self.clusters}

    def names(self, *, user: bool) -> set[str]:
        return {norm_name(c.name) for c in self.clusters if c.name and (c.user_named or not user)}


def _best_cos(a: Iterable[Cluster], b: Iterable[Cluster], kind: str) -> float | None:
    xs = [c.centroid for c in a if c.kind == kind and c.centroid is not None]
    ys = [c.centroid for c in b if c.kind == kind and c.centroid is not None]
    if not xs or not ys or len({len(v) for v in (*xs, *ys)}) != 1:
        return None
    x, y = np.stack(xs).astype(np.float32), np.stack(ys).astype(np.float32)
    x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    y /= np.maximum(np.linalg.norm(y, axis=1, keepdims=True), 1e-12)
    return float((x @ y.T).max())


def link_evidence(person: Person, unit: Sequence[Cluster]) -> tuple[list[str], float]:
    """The evidence that the clusters ``unit`` (one video's person) are ``person`` and its confidence;
    ``([], 0.0)`` when there is none or it conflicts."""
    if {c.video_id for c in unit} & person.videos:
        return [], 0.0
    mine_user = {norm_name(c.name) for c in unit if c.name and c.user_named}
    theirs_user = person.names(user=True)
    if mine_user and theirs_user:
        return (["user"], 1.0) if mine_user & theirs_user else ([], 0.0)
    mine = {norm_name(c.name) for c in unit if c.name}
    theirs = person.names(user=False)
    if mine and theirs and not mine & theirs:
        return [], 0.0
    evidence: list[str] = []
    confidence = 0.0
    if mine & theirs:
        evidence.append("user" if mine_user or theirs_user else "name")
        confidence = 1.0 if evidence[0] == "user" else CONFIDENCE["name"]
    apart = False
    for kind in ("voice", "face"):
        cos = _best_cos(unit, person.clusters, kind)
        if cos is None:
            continue
        if cos >= LINK[kind]:
            evidence.append(kind)
            confidence = max(confidence, round(cos, 4))
        elif cos < APART[kind]:
            apart = True
    if apart and "user" not in evidence:
        return [], 0.0  # one kind says another person: a face contradicting a voice, or the reverse
    return (evidence, confidence) if evidence else ([], 0.0)


def units_of(clusters: Iterable[Cluster]) -> list[list[Cluster]]:
    """One video's clusters grouped into its persons: those attached to one entity are one, each other alone."""
    clusters = sorted(clusters, key=lambda c: (c.video_id, c.t_first, c.kind, c.label))
    per_kind: dict[tuple[str, str | None, str], int] = {}
    for c in clusters:
        per_kind[(c.video_id, c.canonical_id, c.kind)] = per_kind.get((c.video_id, c.canonical_id, c.kind), 0) + 1
    by: dict[tuple[str, str], list[Cluster]] = {}
    for c in clusters:
        # Two voices (or faces) on one entity by co-occurrence alone are two people; by stronger evidence (the
        # user named both, the model's entity says both, a merge of two entities) one.
        alone = c.canonical_id is None or (per_kind[(c.video_id, c.canonical_id, c.kind)] > 1
                                           and c.confidence <= WEAK)
        by.setdefault((c.video_id, f"{c.kind}:{c.label}" if alone else str(c.canonical_id)), []).append(c)
    return list(by.values())


class _Candidates:
    """The persons a unit can have evidence for: those sharing a name with it, or whose mean centroid of a kind
    is near one of its own (one matrix product per kind over one row per person, a little below ``LINK`` so
    the exact test, ``link_evidence``, sees every person it could link), so linking stays fast on large
    libraries."""

    SLACK = 0.1

    def __init__(self) -> None:
        self.by_name: dict[str, set[int]] = {}
        self.sums: dict[str, dict[int, np.ndarray]] = {}
        self.rows: dict[str, tuple[np.ndarray, list[int]]] = {}

    def add(self, index: int, unit: Sequence[Cluster]) -> None:
        for c in unit:
            if c.name:
                self.by_name.setdefault(norm_name(c.name), set()).add(index)
            if c.centroid is None or c.kind not in LINK:
                continue
            sums = self.sums.setdefault(c.kind, {})
            v = np.asarray(c.centroid, np.float32)
            if index in sums and len(sums[index]) != len(v):
                continue
            sums[index] = sums.get(index, np.zeros_like(v)) + v / max(float(np.linalg.norm(v)), 1e-12)
            self.rows.pop(c.kind, None)

    def of(self, unit: Sequence[Cluster]) -> list[int]:
        found = {i for c in unit if c.name for i in self.by_name.get(norm_name(c.name), ())}
        for c in unit:
            if c.centroid is None or c.kind not in self.sums:
                continue
            if c.kind not in self.rows:
                owners = sorted(self.sums[c.kind])
                dims = {len(self.sums[c.kind][i]) for i in owners}
                if len(dims) != 1:
                    continue
                matrix = np.stack([self.sums[c.kind][i] for i in owners])
                self.rows[c.kind] = (matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12), owners)
            matrix, owners = self.rows[c.kind]
            v = np.asarray(c.centroid, np.float32)
            if matrix.shape[1] != len(v):
                continue
            scores = matrix @ (v / max(float(np.linalg.norm(v)), 1e-12))
            found.update(owners[i] for i in np.flatnonzero(scores >= LINK[c.kind] - self.SLACK))
        return sorted(found)


def assign(clusters: Sequence[Cluster], video_order: Sequence[str], remembered: Mapping[tuple[str, str, str], str],
           next_number: int) -> tuple[list[Person], dict[tuple[str, str, str], tuple[str, list[str], float]], int]:
    """Every cluster's library person: (cluster key) -> (person id, evidence, confidence); and the next number.

    ``remembered``: (video, kind, label) -> the person id that cluster had, so ids stay across re-imports."""
    rank = {v: i for i, v in enumerate(video_order)}
    units = sorted(units_of(clusters), key=lambda u: (rank.get(u[0].video_id, len(rank)), u[0].video_id,
                                                      min(c.t_first for c in u)))
    people: list[Person] = []
    links: dict[tuple[str, str, str], tuple[str, list[str], float]] = {}
    used: set[str] = set()
    candidates = _Candidates()
    index_of: dict[str, int] = {}
    for unit in units:
        best: Person | None = None
        best_rank: tuple[float, bool] = (0.0, False)
        best_evidence: list[str] = []
        wanted = {remembered.get(c.key) for c in unit}
        for person in (people[i] for i in candidates.of(unit)):  # in order made: ties go to the older one
            evidence, confidence = link_evidence(person, unit)
            here = (confidence, person.id in wanted)
            if evidence and (best is None or here > best_rank):
                best, best_rank, best_evidence = person, here, evidence
        if best is None:
            old = sorted(i for i in wanted if i is not None and i not in used)
            if old:
                pid = old[0]
            else:
                pid = f"lib/person_{next_number:04d}"
                next_number += 1
            used.add(pid)
            best = Person(pid)
            index_of[pid] = len(people)
            people.append(best)
            best_evidence, best_rank = ["first"], (1.0, False)
        best.clusters.extend(unit)
        candidates.add(index_of[best.id], unit)
        for c in unit:
            links[c.key] = (best.id, best_evidence, best_rank[0])
    return people, links, next_number


__all__ = ["APART", "LINK", "USER_MARK", "Cluster", "Person", "PersonEntity", "assign", "attach", "link_evidence",
           "norm_name", "units_of", "user_mark"]
