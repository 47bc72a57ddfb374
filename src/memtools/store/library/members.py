"""Canonical entities as library linking sees them (``Profile``), and the library entities they are placed
in (``LibEntity``, each placement a ``Member`` with its evidence). The rules that place them are
``memtools.store.library.link_rules``; the index that finds their candidates ``memtools.store.library.candidates``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from memtools.store.library.heads import Head, heads


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

    @property
    def heads(self) -> set[Head]:
        """The head nouns of its keys (``memtools.store.library.heads``)."""
        return heads(self.keys)


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
        self.heads: set[Head] = set()
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
        self.heads |= p.heads
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

    @property
    def name(self) -> str:
        """The first member's name (what meaning evidence compares)."""
        return self.members[0].profile.name if self.members else ""

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


__all__ = ["LibEntity", "Member", "Profile"]
