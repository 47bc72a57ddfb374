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
* **place** (supporting only, never enough alone): the entity's place (the LOCATION entity of
  its first appearance) is already one of the library entity's places: +0.05.

Never merged against conflicting evidence (a refusal is final for that pair):

* a different ``entity_type`` (a place is never a person);
* an attribute both sides carry with different values (``color: red`` vs ``color: white``);
* vector evidence alone between two *named* entities whose names differ ("Anna" is not "Ben",
  however alike their descriptions);
* a library entity that already holds a canonical entity of the same video: the video's own
  canonicalisation decided they are different things there.

Each link records its evidence and confidence; the first member of a library entity records
``["first"]`` and confidence 1.0.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

LINK_VECTOR = 0.9
NAME_CONFIDENCE = 0.9
PLACE_BONUS = 0.05
LOCATION = "LOCATION"


@dataclass
class Profile:
    """One canonical entity as linking sees it."""

    id: str
    video_id: str
    entity_type: str
    name: str
    keys: set[str]  # normalised names (or descriptions when unnamed) of its mentions
    named: set[str]  # normalised names proper (empty: only descriptions)
    attrs: dict[str, str]
    vector: np.ndarray | None = None
    place: str | None = None  # canonical id of the LOCATION of its first appearance


@dataclass
class Member:
    """A canonical entity placed in a library entity, with the evidence of its link."""

    profile: Profile
    lib_id: str
    evidence: list[str]
    confidence: float
    place_lib: str | None = None


class LibEntity:
    """A library entity: its members, and the union of their videos, keys, names, places and attributes kept
    as members join (``add``) or leave (``retain``), so linking a video costs what its candidates hold,
    not what the library holds."""

    def __init__(self, id: str, entity_type: str, members: Iterable[Member] = ()) -> None:  # noqa: A002
        self.id, self.entity_type = id, entity_type
        self._reset(members)

    def _reset(self, members: Iterable[Member]) -> None:
        self.members: list[Member] = []
        self.videos: set[str] = set()
        self.keys: set[str] = set()
        self.named: set[str] = set()
        self.places: set[str] = set()
        self._attrs: dict[str, set[str]] = defaultdict(set)  # attribute -> the values its members carry
        self._vector: np.ndarray | None = None
        for m in members:
            self.add(m)

    def add(self, m: Member) -> None:
        p = m.profile
        self.members.append(m)
        self.videos.add(p.video_id)
        self.keys |= p.keys
        self.named |= p.named
        if m.place_lib:
            self.places.add(m.place_lib)
        for key, value in p.attrs.items():
            self._attrs[key].add(value)
        if self._vector is None and p.vector is not None:
            self._vector = p.vector

    def retain(self, keep: Callable[[Member], bool]) -> None:
        """Keep only the members ``keep`` accepts (the cached unions computed again)."""
        members = [m for m in self.members if keep(m)]
        if len(members) != len(self.members):
            self._reset(members)

    def vector(self) -> np.ndarray | None:
        """The first member's vector (of the members that have one)."""
        return self._vector

    def conflict(self, p: Profile) -> str:
        """Why ``p`` may not join (empty: it may)."""
        if p.entity_type != self.entity_type:
            return "entity type"
        if p.video_id in self.videos:
            return "same video"
        for key, value in p.attrs.items():
            if self._attrs.get(key, {value}) - {value}:
                return f"attribute {key}"
        return ""


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    return float(a @ b) / (na * nb) if na and nb else 0.0


def evidence_for(lib: LibEntity, p: Profile, place_lib: str | None) -> tuple[list[str], float]:
    """The evidence that ``p`` is ``lib`` and its confidence (no evidence: ``([], 0.0)``);
    a conflict gives none."""
    if lib.conflict(p):
        return [], 0.0
    evidence, confidence = [], 0.0
    if p.keys & lib.keys:
        evidence.append("name")
        confidence = NAME_CONFIDENCE
    vector = lib.vector()
    if p.vector is not None and vector is not None:
        cos = _cos(np.asarray(p.vector, dtype=np.float32), np.asarray(vector, dtype=np.float32))
        named_apart = bool(p.named) and bool(lib.named) and not (p.named & lib.named)
        if cos >= LINK_VECTOR and (evidence or not named_apart):
            evidence.append("vector")
            confidence = max(confidence, cos)
    if not evidence:
        return [], 0.0
    if place_lib is not None and place_lib in lib.places:
        evidence.append("place")
        confidence = min(1.0, confidence + PLACE_BONUS)
    return evidence, round(confidence, 4)


class Linker:
    """The library entities, grown one video at a time (``add_video``) and shrunk (``remove_videos``).

    ``ids`` maps (video, type, key) to the library id that entity had, so a re-imported or rebuilt
    video's entities get their old ids back when they start a library entity of their own."""

    def __init__(self, entities: Iterable[LibEntity] = (), ids: Mapping[tuple[str, str, str], str] | None = None,
                 next_number: int = 1) -> None:
        self.entities: dict[str, LibEntity] = {e.id: e for e in entities}
        self.ids: dict[tuple[str, str, str], str] = dict(ids or {})
        self.next_number = next_number
        self.of_canonical = {m.profile.id: m for e in self.entities.values() for m in e.members}
        self._by_key: dict[tuple[str, str], set[str]] = defaultdict(set)  # (type, key) -> library ids
        self._matrices: dict[str, tuple[list[str], np.ndarray]] | None = None  # _vectors(), kept between videos
        self._unmatrixed: list[LibEntity] = []  # library entities made (with a vector) since
        for lib in self.entities.values():
            for key in lib.keys:
                self._by_key[(lib.entity_type, key)].add(lib.id)

    def remove_videos(self, video_ids: Iterable[str]) -> None:
        gone = set(video_ids)
        for lib_id in list(self.entities):
            lib = self.entities[lib_id]
            lib.retain(lambda m: m.profile.video_id not in gone)
            if not lib.members:
                del self.entities[lib_id]
        self._matrices = None
        self.of_canonical = {k: m for k, m in self.of_canonical.items() if m.profile.video_id not in gone}
        self._by_key.clear()
        for lib in self.entities.values():
            for key in lib.keys:
                self._by_key[(lib.entity_type, key)].add(lib.id)

    def _vectors(self) -> dict[str, tuple[list[str], np.ndarray]]:
        """Per entity type: the library entities with a vector and their unit vectors, one matrix (computed
        whole after a removal, else grown by the entities made since the last video)."""
        if self._matrices is None:
            self._matrices, self._unmatrixed = self._stack(self.entities.values(), {}), []
        elif self._unmatrixed:
            self._matrices, self._unmatrixed = self._stack(self._unmatrixed, self._matrices), []
        return self._matrices

    @staticmethod
    def _stack(libs: Iterable[LibEntity], onto: Mapping[str, tuple[list[str], np.ndarray]]
               ) -> dict[str, tuple[list[str], np.ndarray]]:
        rows: dict[str, tuple[list[str], list[np.ndarray]]] = defaultdict(lambda: ([], []))
        for lib in libs:
            vector = lib.vector()
            if vector is not None:
                ids, vectors = rows[lib.entity_type]
                ids.append(lib.id)
                vectors.append(np.asarray(vector, dtype=np.float32))
        out = dict(onto)
        for etype, (ids, vectors) in rows.items():
            matrix = np.stack(vectors)
            matrix = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
            if etype in out:
                old_ids, old = out[etype]
                ids, matrix = old_ids + ids, np.concatenate([old, matrix])
            out[etype] = (ids, matrix)
        return out

    def _candidates(self, p: Profile, vectors: Mapping[str, tuple[list[str], np.ndarray]]) -> list[LibEntity]:
        """The library entities ``p`` shares a name with or is close to (only they can have evidence)."""
        found = {lib for key in p.keys for lib in self._by_key.get((p.entity_type, key), ())}
        if p.vector is not None and p.entity_type in vectors:
            ids, matrix = vectors[p.entity_type]
            unit = np.asarray(p.vector, dtype=np.float32)
            scores = matrix @ (unit / max(float(np.linalg.norm(unit)), 1e-12))
            found.update(ids[i] for i in np.flatnonzero(scores >= LINK_VECTOR - 1e-4))
        return sorted((self.entities[x] for x in found if x in self.entities), key=lambda e: number(e.id))

    def _new_id(self, p: Profile) -> str:
        for key in sorted(p.keys):
            old = self.ids.get((p.video_id, p.entity_type, key))
            if old is not None and old not in self.entities:
                return old
        lib_id = f"lib/entity_{self.next_number:04d}"
        self.next_number += 1
        return lib_id

    def add_video(self, profiles: Iterable[Profile]) -> list[Member]:
        """Place every canonical entity of one video (places first); returns the new members. A library
        entity made or joined by this video cannot take another of its entities ("same video"), so the
        candidates are those that existed before it."""
        ordered = sorted(profiles, key=lambda p: (p.entity_type != LOCATION, p.id))
        vectors = self._vectors()
        placed = []
        for p in ordered:
            place_member = self.of_canonical.get(p.place) if p.place else None
            place_lib = place_member.lib_id if place_member is not None else None
            remembered = {self.ids.get((p.video_id, p.entity_type, k)) for k in p.keys}
            best: LibEntity | None = None
            best_rank: tuple[float, bool] = (0.0, False)
            best_evidence: list[str] = []
            for lib in self._candidates(p, vectors):  # in id order: ties go to the older one
                evidence, confidence = evidence_for(lib, p, place_lib)
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
            if not had_vector and lib.vector() is not None:  # in the matrix from the next video on
                self._unmatrixed.append(lib)
            self.of_canonical[p.id] = member
            for key in p.keys:
                self.ids[(p.video_id, p.entity_type, key)] = lib.id
                self._by_key[(p.entity_type, key)].add(lib.id)
            placed.append(member)
        return placed


def number(lib_id: str) -> int:
    """The number of ``lib/entity_0007`` (7): ids sort by it."""
    return int(lib_id.rsplit("_", 1)[-1])


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
