"""Reads of the library layer (``library.sqlite``, ``memtools.store.library.layer``) for the tools.

``LibraryReads.open`` gives ``None`` when the layer does not match the memory's generation
(missing, behind a write in progress, or made by an older memtools): the tools then answer per
video and say so. Recording order is wall-clock order where a video has a recording start
(``Memory.recorded_starts``), else library order (video ids in order, as ``list_videos`` lists them).
"""

from __future__ import annotations

import contextlib
import functools
import json
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from memtools.store.library import layer as library
from memtools.store.library import meaning
from memtools.store.tables.entities import _norm


def recording_order(video_ids: Iterable[str], starts: Mapping[str, datetime | None]) -> list[str]:
    """Videos in recording order: those with a start by it, then the rest in library order."""
    def key(vid: str) -> tuple[int, float, str]:
        start = starts.get(vid)
        return (0, start.timestamp(), vid) if start is not None else (1, 0.0, vid)
    return sorted(set(video_ids), key=key)


@functools.lru_cache(maxsize=256)
def _evidence(text: str) -> tuple[str, ...]:
    """A link's evidence list (a handful of distinct texts across a library: decoded once each)."""
    return tuple(json.loads(text))

@dataclass(frozen=True)
class Link:
    canonical_id: str
    lib_id: str
    video_id: str
    name: str
    entity_type: str
    place: str | None
    place_lib: str | None
    evidence: list[str]
    confidence: float


@dataclass(frozen=True)
class Activity:
    activity: str
    label: str
    vector: np.ndarray | None
    group: str
    similarity: float  # the probability it joined its group with (1.0: it leads the group)
    group_label: str


@dataclass(frozen=True)
class ActivityMatch:
    """An activity a question names, and how sure: ``meaning`` probability, 1.0 for the same words."""

    activity: str
    label: str
    group: str
    group_label: str
    probability: float


@dataclass(frozen=True)
class Occurrence:
    event_id: str
    video_id: str
    activity: str
    label: str
    t_start: float
    t_end: float
    macro_id: str
    place: str | None


class LibraryReads:
    """A read-only view of ``library.sqlite`` (one connection per call: readers never hold it)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    @classmethod
    def open(cls, folder: Path, generation: int) -> LibraryReads | None:
        return cls(folder) if library.generation(Path(folder)) == generation else None

    def _rows(self, query: str, params: Sequence[Any] = ()) -> list[tuple]:
        with contextlib.closing(library._connect(self.folder, write=False)) as conn:
            return conn.execute(query, tuple(params)).fetchall()

    def _links(self, where: str, params: Sequence[Any]) -> list[Link]:
        rows = self._rows("SELECT canonical_id, lib_id, video_id, name, entity_type, place, place_lib, evidence, "
                          f"confidence FROM members WHERE {where} ORDER BY seq", params)
        return [Link(r[0], r[1], r[2], r[3], r[4], r[5], r[6], list(_evidence(r[7])), float(r[8])) for r in rows]

    def links_of(self, canonical_ids: Sequence[str]) -> dict[str, Link]:
        """The link of each of these canonical entities (those the layer holds)."""
        out: dict[str, Link] = {}
        for i in range(0, len(canonical_ids), 500):
            chunk = list(canonical_ids[i:i + 500])
            marks = ", ".join("?" for _ in chunk)
            out.update({k.canonical_id: k for k in self._links(f"canonical_id IN ({marks})", chunk)})
        return out

    def members(self, lib_ids: Sequence[str]) -> dict[str, list[Link]]:
        """The canonical entities of each library entity, in the order they were linked."""
        out: dict[str, list[Link]] = {lib: [] for lib in lib_ids}
        marks = ", ".join("?" for _ in lib_ids)
        for link in self._links(f"lib_id IN ({marks})", list(lib_ids)):
            out[link.lib_id].append(link)
        return out

    def at_places(self, place_ids: Sequence[str]) -> dict[str, list[Link]]:
        """The entities whose place is each of these canonical LOCATION entities."""
        out: dict[str, list[Link]] = {p: [] for p in place_ids}
        marks = ", ".join("?" for _ in place_ids)
        for link in self._links(f"place IN ({marks})", list(place_ids)):
            out[link.place or ""].append(link)
        return out

    def activities(self) -> list[Activity]:
        """Every activity with an occurrence, with its core vector and its group."""
        rows = self._rows("SELECT a.activity, a.label, a.vector, a.grp, a.similarity, g.label FROM activities a "
                          "LEFT JOIN activities g ON g.activity = a.grp WHERE EXISTS "
                          "(SELECT 1 FROM occurrences o WHERE o.activity = a.activity) ORDER BY a.activity")
        return [Activity(a, label, None if v is None else np.frombuffer(v, dtype=np.float32), grp, float(sim),
                         glabel or label) for a, label, v, grp, sim, glabel in rows]

    def word_vectors(self, words: Iterable[str]) -> dict[str, np.ndarray]:
        """The stored unit vectors of these lemmas (those the layer holds)."""
        wanted = sorted(set(words))
        out: dict[str, np.ndarray] = {}
        for i in range(0, len(wanted), 900):
            chunk = wanted[i:i + 900]
            marks = ", ".join("?" for _ in chunk)
            out.update((w, np.frombuffer(v, dtype=np.float32)) for w, v in
                       self._rows(f"SELECT word, vector FROM words WHERE vector IS NOT NULL AND word IN ({marks})",
                                  chunk))
        return out

    def occurrences(self, activities: Sequence[str], video_id: str | None = None) -> list[Occurrence]:
        marks = ", ".join("?" for _ in activities)
        where = f"activity IN ({marks})" + (" AND video_id = ?" if video_id is not None else "")
        params = [*activities, *([video_id] if video_id is not None else [])]
        rows = self._rows("SELECT event_id, video_id, activity, label, t_start, t_end, macro_id, place FROM "
                          f"occurrences WHERE {where}", params)
        return [Occurrence(*r) for r in rows]

    def activity_videos(self, exclude_video: str = "") -> list[tuple[str, int]]:
        """(label, in how many videos) of every activity, ``exclude_video``'s occurrences left out."""
        rows = self._rows("SELECT a.label, COUNT(DISTINCT o.video_id) FROM activities a JOIN occurrences o "
                          "ON o.activity = a.activity WHERE o.video_id <> ? GROUP BY a.activity", (exclude_video,))
        return [(str(label), int(n)) for label, n in rows]

    def member_names(self, exclude_video: str = "") -> list[tuple[str, str, str, str]]:
        """(library id, video, name, entity type) of every canonical entity but ``exclude_video``'s."""
        return [tuple(r) for r in self._rows("SELECT lib_id, video_id, name, entity_type FROM members "
                                             "WHERE video_id <> ?", (exclude_video,))]

    def counts(self) -> tuple[int, int]:
        """(library entities, activities)."""
        (entities,), = self._rows("SELECT COUNT(DISTINCT lib_id) FROM members")
        (activities,), = self._rows("SELECT COUNT(DISTINCT activity) FROM occurrences")
        return int(entities), int(activities)


@dataclass(frozen=True)
class ClusterLink:
    """One voice, face or named-speaker cluster: what it is attached to in its video, and its library person."""

    video_id: str
    kind: str
    label: str
    name: str | None
    user_named: bool
    spans: list[tuple[float, float]]
    canonical_id: str | None
    sources: list[str]
    confidence: float
    person_id: str
    link: list[str]
    link_confidence: float


class PeopleReads(LibraryReads):
    """The people part of the layer (``memtools.store.library.people``)."""

    def _clusters(self, where: str, params: Sequence[Any]) -> list[ClusterLink]:
        try:
            rows = self._rows("SELECT video_id, kind, label, name, user_named, spans, canonical_id, sources, "
                              "confidence, person_id, link, link_confidence FROM clusters WHERE person_id IS NOT NULL "
                              f"AND {where} ORDER BY person_id, video_id, kind, label", params)
        except sqlite3.OperationalError:
            return []  # a layer without people (made before them): none yet
        return [ClusterLink(r[0], r[1], r[2], r[3], bool(r[4]), [tuple(x) for x in json.loads(r[5])], r[6],
                            json.loads(r[7]), float(r[8]), r[9], json.loads(r[10] or "[]"), float(r[11] or 0.0))
                for r in rows]

    def clusters_of_people(self, person_ids: Sequence[str]) -> list[ClusterLink]:
        marks = ", ".join("?" for _ in person_ids)
        return self._clusters(f"person_id IN ({marks})", list(person_ids)) if person_ids else []

    def people_of_entities(self, canonical_ids: Sequence[str]) -> list[str]:
        """The persons whose clusters are attached to these canonical entities."""
        marks = ", ".join("?" for _ in canonical_ids)
        found = self._clusters(f"canonical_id IN ({marks})", list(canonical_ids)) if canonical_ids else []
        return list(dict.fromkeys(c.person_id for c in found))

    def people_named(self, name: str) -> list[str]:
        """The persons a cluster of which bears this name (the user's or a speaker's)."""
        wanted = " ".join(name.lower().split())
        return list(dict.fromkeys(c.person_id for c in self._clusters("name IS NOT NULL", ())
                                  if " ".join((c.name or "").lower().split()) == wanted))

    def cluster(self, video_id: str, label: str) -> ClusterLink | None:
        found = self._clusters("video_id = ? AND label = ?", (video_id, label))
        return found[0] if found else None


def match_activities(reads: LibraryReads, query: str, embed_query: Callable[[str], Any],
                     embed_words: Callable[[list[str]], Any] | None = None) -> list[ActivityMatch]:
    """The activities ``query`` may name, best first, down to ``meaning.DOUBT``: the one whose normalised
    label is the query's words at 1.0, the others by meaning (``memtools.store.library.meaning``); where
    the query's words are a label, the others stay below ``meaning.MATCH`` (near misses).
    ``embed_query`` gives a text's query vector; ``embed_words`` the vectors of lemmas the layer has
    not stored (the query's own words)."""
    every = reads.activities()
    known = [a for a in every if a.vector is not None]
    words = _norm(query)
    out = {a.activity: ActivityMatch(a.activity, a.label, a.group, a.group_label, 1.0)
           for a in every if a.activity == words}
    dims = Counter(len(a.vector) for a in known if a.vector is not None)
    if dims:
        dim = dims.most_common(1)[0][0]
        known = [a for a in known if a.vector is not None and len(a.vector) == dim]
        questions = [(v, np.asarray(embed_query(meaning.core(v)), dtype=np.float32)) for v in meaning.variants(query)]
        questions = [q for q in questions if len(q[1]) == dim]

        def vectors_for(lemmas: set[str]) -> dict[str, np.ndarray]:
            found = reads.word_vectors(lemmas)
            missing = sorted(w for w in lemmas if w not in found)
            if missing and embed_words is not None:
                found.update((w, meaning.unit(v)) for w, v in zip(missing, embed_words(missing), strict=True))
            return found

        rows = [a.vector for a in known if a.vector is not None]
        matrix = np.stack(rows) if rows else np.zeros((0, dim), dtype=np.float32)
        for s in meaning.score(questions, [a.label for a in known], matrix, vectors_for):
            a = known[s.index]
            out.setdefault(a.activity, ActivityMatch(a.activity, a.label, a.group, a.group_label, s.probability))
    if any(m.probability == 1.0 and m.activity == words for m in out.values()):
        # the question's own words are a label here: the memory names the activity so (a taxonomy, the user's
        # words, a model that reused the library's names), so the others are near misses, never counted
        cap = meaning.MATCH * 0.999
        out = {k: m if k == words else replace(m, probability=min(m.probability, cap)) for k, m in out.items()}
    return sorted(out.values(), key=lambda m: (-m.probability, m.activity))
