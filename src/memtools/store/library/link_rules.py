"""Linking canonical entities across videos into library-level entities (issue 31).

A canonical entity (``<video>/entity_003``, ``memtools.store.tables.entities``) is one referent inside
one video. The same keys, kitchen or cook appear in many videos of a library; here they are
linked into one *library entity* (``lib/entity_0007``), deterministically and without a model.
Each canonical entity is placed in turn (videos in library order, places first) and joins the
library entity with the strongest evidence, or starts a new one:

* **name**: the same entity type and a shared normalised name (or, unnamed, description):
  confidence 0.9;
* **vector**: the same entity type and profile vectors with cosine >= ``LINK_VECTOR``:
  confidence = the cosine;
* **head** (issue 49, things and places only): the same head noun, its kind not differing
  (``memtools.store.library.heads``: "the light switch" and "a switch by the door" are one switch;
  "the coffee table" and "the kitchen table" are not one table): confidence 0.8;
* **meaning** (issue 49, things and places only, when the linker is given an embedder): the names'
  vectors (the canonical entity's name, the library entity's first member's) with cosine >=
  ``LINK_MEANING`` ("the sofa" and "a couch"), looked at for the library entities whose profile
  vectors are at least ``MEANING_NEAR`` apart: confidence = the cosine;
* **place** (supporting only, never enough alone): the entity's place (the LOCATION entity of
  its first appearance) is already one of the library entity's places: +0.05.

Never merged against conflicting evidence (a refusal is final for that pair):

* a different ``entity_type`` (a place is never a person);
* an attribute both sides carry with different values (``color: red`` vs ``color: white``);
* vector, head or meaning evidence alone between two *named* entities whose names differ ("Anna" is
  not "Ben", however alike their descriptions);
* a library entity that already holds a canonical entity of the same video: the video's own
  canonicalisation decided they are different things there.

Each link records its evidence and confidence; the first member of a library entity records
``["first"]`` and confidence 1.0. Which evidence counts is data (``LinkRules``; ``RULES`` the default,
``BY_NAME`` the rules before issue 49), so a benchmark measures them side by side
(``benchmarks/entity_words.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from memtools.store.library.candidates import Candidates, Embed, NameVectors, number
from memtools.store.library.heads import Head, agree
from memtools.store.library.members import LibEntity, Member, Profile

LINK_VECTOR = 0.9
LINK_MEANING = 0.825
"""Name-vector cosine at or above which two things' names mean the same (the default embedder, MiniLM: "sofa"
and "couch" 0.86, "door" and "doorway" 0.80); chosen on the Charades train split, docs/search.md."""
MEANING_NEAR = 0.7
"""Profile-vector cosine from which a library entity's name is compared by meaning at all (the shortlist)."""
NAME_CONFIDENCE = 0.9
HEAD_CONFIDENCE = 0.8
PLACE_BONUS = 0.05
LOCATION = "LOCATION"
WORDED = frozenset({"OBJECT", LOCATION})
"""The types linked by head and meaning too: a person or group is told apart by more than its noun
("a man in a red shirt" and "a man with glasses"), by voices and faces (``memtools.store.library.people``)."""


@dataclass(frozen=True)
class LinkRules:
    """Which evidence links two canonical entities: ``vector`` the profile cosine for vector evidence,
    ``head`` whether a shared head noun counts, ``meaning`` the name cosine for meaning evidence (None:
    none), ``near`` the profile cosine from which names are compared by meaning."""

    vector: float = LINK_VECTOR
    head: bool = True
    meaning: float | None = LINK_MEANING
    near: float = MEANING_NEAR


RULES = LinkRules()
BY_NAME = LinkRules(head=False, meaning=None)
"""The rules before issue 49: names and near-identical vectors only."""


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    return float(a @ b) / (na * nb) if na and nb else 0.0


def _heads_agree(mine: set[Head], theirs: set[Head]) -> bool:
    """Some head of ``mine`` agrees with one of ``theirs``, and none has the same noun of another kind
    ("light switch" and "wall switch" are two switches, whatever other words they share)."""
    found = False
    for a in mine:
        for b in theirs:
            if a.noun == b.noun:
                if not agree(a, b):
                    return False
                found = True
    return found


def evidence_for(lib: LibEntity, p: Profile, place_lib: str | None, rules: LinkRules = RULES,
                 name_cosine: float | None = None) -> tuple[list[str], float]:
    """The evidence that ``p`` is ``lib`` and its confidence (no evidence: ``([], 0.0)``); a conflict
    gives none. ``name_cosine``: of ``p``'s name and the library entity's (None: not known)."""
    if lib.conflict(p):
        return [], 0.0
    evidence, confidence = [], 0.0
    if p.keys & lib.keys:
        evidence.append("name")
        confidence = NAME_CONFIDENCE
    named_apart = bool(p.named) and bool(lib.named) and not (p.named & lib.named)
    worded = p.entity_type in WORDED and not named_apart
    if worded and rules.head and not evidence and _heads_agree(p.heads, lib.heads):
        evidence.append("head")
        confidence = HEAD_CONFIDENCE
    vector = lib.vector()
    if p.vector is not None and vector is not None:
        cos = _cos(np.asarray(p.vector, dtype=np.float32), np.asarray(vector, dtype=np.float32))
        if cos >= rules.vector and (evidence or not named_apart):
            evidence.append("vector")
            confidence = max(confidence, cos)
    if (worded and rules.meaning is not None and name_cosine is not None and name_cosine >= rules.meaning
            and not {"name", "vector"} & set(evidence)):
        evidence.append("meaning")
        confidence = max(confidence, name_cosine)
    if not evidence:
        return [], 0.0
    if place_lib is not None and place_lib in lib.places:
        evidence.append("place")
        confidence = min(1.0, confidence + PLACE_BONUS)
    return evidence, round(confidence, 4)


class Linker:
    """The library entities, grown one video at a time (``add_video``) and shrunk (``remove_videos``).

    ``ids`` maps (video, type, key) to the library id that entity had, so a re-imported or rebuilt
    video's entities get their old ids back when they start a library entity of their own. ``embed``
    (texts -> vectors, the memory's embedder) gives the name vectors of meaning evidence; without it
    there is none."""

    def __init__(self, entities: Iterable[LibEntity] = (), ids: Mapping[tuple[str, str, str], str] | None = None,
                 next_number: int = 1, rules: LinkRules = RULES, embed: Embed | None = None) -> None:
        self.rules = rules
        self.entities: dict[str, LibEntity] = {e.id: e for e in entities}
        self.ids: dict[tuple[str, str, str], str] = dict(ids or {})
        self.next_number = next_number
        self.of_canonical = {m.profile.id: m for e in self.entities.values() for m in e.members}
        self.names = NameVectors(embed) if embed is not None and rules.meaning is not None else None
        self._candidates = Candidates(WORDED)
        self._candidates.reset(self.entities.values())

    def remove_videos(self, video_ids: Iterable[str]) -> None:
        gone = set(video_ids)
        for lib_id in list(self.entities):
            lib = self.entities[lib_id]
            lib.retain(lambda m: m.profile.video_id not in gone)
            if not lib.members:
                del self.entities[lib_id]
        self.of_canonical = {k: m for k, m in self.of_canonical.items() if m.profile.video_id not in gone}
        self._candidates.reset(self.entities.values())

    def _new_id(self, p: Profile) -> str:
        for key in sorted(p.keys):
            old = self.ids.get((p.video_id, p.entity_type, key))
            if old is not None and old not in self.entities:
                return old
        lib_id = f"lib/entity_{self.next_number:04d}"
        self.next_number += 1
        return lib_id

    def _shortlists(self, ordered: Sequence[Profile]) -> list[list[LibEntity]]:
        """Each profile's candidates (those that existed before its video: one made by the video cannot take
        another of its entities), with the names meaning evidence compares embedded in one call."""
        floor = min(self.rules.vector, self.rules.near) if self.names is not None else self.rules.vector
        out = [self._candidates.of(p, self.entities, heads=self.rules.head,
                                   floor=floor if p.entity_type in WORDED else self.rules.vector) for p in ordered]
        if self.names is not None:
            self.names.fill(name for p, libs in zip(ordered, out, strict=True) if libs and p.entity_type in WORDED
                            for name in (p.name, *(lib.name for lib in libs)))
        return out

    def expect(self, profiles: Iterable[Profile]) -> None:
        """Embed the names of the things and places about to be placed in one call (a write places many videos:
        one embedder call for all, instead of one a video); without meaning evidence, nothing."""
        if self.names is not None:
            self.names.fill(p.name for p in profiles if p.entity_type in WORDED)

    def add_video(self, profiles: Iterable[Profile]) -> list[Member]:
        """Place every canonical entity of one video (places first); returns the new members."""
        ordered = sorted(profiles, key=lambda p: (p.entity_type != LOCATION, p.id))
        placed = []
        for p, candidates in zip(ordered, self._shortlists(ordered), strict=True):
            place_member = self.of_canonical.get(p.place) if p.place else None
            place_lib = place_member.lib_id if place_member is not None else None
            remembered = {self.ids.get((p.video_id, p.entity_type, k)) for k in p.keys}
            best: LibEntity | None = None
            best_rank: tuple[float, bool] = (0.0, False)
            best_evidence: list[str] = []
            for lib in candidates:  # in id order: ties go to the older one
                cosine = self.names.cosine(p.name, lib.name) if self.names is not None else None
                evidence, confidence = evidence_for(lib, p, place_lib, self.rules, cosine)
                rank = (confidence, lib.id in remembered)
                if evidence and (best is None or rank > best_rank):
                    best, best_rank, best_evidence = lib, rank, evidence
            if best is not None:
                lib = best
                member = Member(p, lib.id, best_evidence, best_rank[0], place_lib)
            else:
                lib = LibEntity(self._new_id(p), p.entity_type)
                self.entities[lib.id] = lib
                member = Member(p, lib.id, ["first"], 1.0, place_lib)
            had_vector = lib.vector() is not None
            lib.add(member)
            if not had_vector and lib.vector() is not None:
                self._candidates.vector_given(lib)
            self.of_canonical[p.id] = member
            for key in p.keys:
                self.ids[(p.video_id, p.entity_type, key)] = lib.id
            self._candidates.add(lib, p)
            placed.append(member)
        return placed


def places_of(video_rows: Iterable[Mapping]) -> tuple[dict[str, str], str | None]:
    """For one video's canonical entity rows: macro id -> the LOCATION entity seen in it, and the
    video's first LOCATION (the place of an appearance in a macro event that names none)."""
    by_macro: dict[str, str] = {}
    first: tuple[float, str] | None = None
    for row in video_rows:
        if row["entity_type"] != LOCATION:
            continue
        for a in row["timeline"]:
            by_macro.setdefault(a["macro_id"], row["id"])
        here = (float(row["t_first"]), row["id"])
        first = here if first is None or here < first else first
    return by_macro, first[1] if first else None


__all__ = ["BY_NAME", "LINK_MEANING", "LINK_VECTOR", "LOCATION", "RULES", "LibEntity", "LinkRules", "Linker", "Member",
           "Profile", "evidence_for", "number", "places_of"]
