"""The library's vocabulary in the extraction prompt: names other videos of the memory already use.

When the memory's library layer (``library.sqlite``, ``memtools.store.library.layer``) already holds
activities and entities, each extraction prompt offers the model the few of them that fit its clip
(``prompts.vocabulary_section``), so a second day's "chops onions" and "red kettle" come out worded
as the first day's, and the library links them. Per build and per clip:

* candidates (read once per build, read-only, from every video but the one being built, so that a
  rebuild is not steered by its own earlier version): activity labels, and entity names with their
  type, one per library entity (the name most of its members carry); names longer than
  ``MAX_NAME_CHARS`` (a caption sentence, not a name) or holding the ``;`` the prompt separates
  names with are left out; the ``MAX_CANDIDATES`` of each kind seen in most videos are kept, and
  embedded once with the memory's embedder;
* relevance: the cosine between each name and the clip's first pass (the episode title segmentation
  gave it) with what is said in it; names below ``MIN_SIMILARITY`` are left out;
* order: by that cosine rounded to ``SIMILARITY_DECIMALS`` places (float noise between CPUs does
  not reorder it), then the name seen in more videos, then the name; one entry per name;
* bound: at most ``MAX_ACTIVITIES`` and ``MAX_ENTITIES`` names, and ``MAX_LIST_CHARS`` characters of
  names per kind (docs/costs.md measures the section at the bound).

Without a library layer, without names, or without one that fits, a clip gets no names and its
prompt is the prompt of a memory without a library, byte for byte. A build folder that is not a
memory (a fleet worker's, ``memtools.builder.bundle``) has no library to read.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memtools.builder.prompts import NAME_SEPARATOR, LibraryNames
from memtools.embed import Embedder
from memtools.embed.base import normalize
from memtools.speech.base import Utterance
from memtools.store import Memory
from memtools.store.library import layer
from memtools.store.library.reads import LibraryReads

log = logging.getLogger(__name__)

MAX_ACTIVITIES = 20
MAX_ENTITIES = 20
MAX_LIST_CHARS = 600
"""Characters of names (separators included) per kind: the activities, and the entities of all types."""
MAX_NAME_CHARS = 60
MAX_CANDIDATES = 400
"""Names of each kind embedded per build: those seen in most videos."""
MIN_SIMILARITY = 0.2
SIMILARITY_DECIMALS = 2


@dataclass(frozen=True)
class Term:
    """One name the library uses: its text, its entity type (``""`` for an activity) and in how many
    videos it occurs."""

    text: str
    videos: int
    entity_type: str = ""


def largest_offer() -> LibraryNames:
    """An offer at the bound: ``MAX_ACTIVITIES`` and ``MAX_ENTITIES`` names (of all four entity types)
    that fill ``MAX_LIST_CHARS``; what ``memtools.builder.estimate`` sizes a prompt with."""
    def filled(count: int) -> list[str]:
        width = (MAX_LIST_CHARS + len(NAME_SEPARATOR)) // count - len(NAME_SEPARATOR)
        return [f"{n:02d}".rjust(width, "x") for n in range(count)]

    types = ("PERSON", "OBJECT", "LOCATION", "GROUP")
    return LibraryNames(filled(MAX_ACTIVITIES), [(types[n % len(types)], name)
                                                 for n, name in enumerate(filled(MAX_ENTITIES))])


def _fold(text: str) -> str:
    return " ".join(text.lower().split())


def _usable(text: str) -> bool:
    return bool(text) and len(text) <= MAX_NAME_CHARS and NAME_SEPARATOR.strip() not in text


def has_library(folder: str | Path) -> bool:
    """The memory in ``folder`` has a library layer, so a build's prompts may offer its names."""
    return layer.generation(Path(folder)) is not None


def read_terms(folder: Path, *, exclude_video: str = "") -> tuple[list[Term], list[Term]]:
    """The library's activities and entities (``MAX_CANDIDATES`` of each, seen in most videos first),
    without those of ``exclude_video``; two empty lists without a readable library layer."""
    if layer.generation(folder) is None:
        return [], []
    reads = LibraryReads(folder)
    try:
        activities = reads.activity_videos(exclude_video)
        members = reads.member_names(exclude_video)
    except sqlite3.Error as exc:  # a hint only: the build goes on without it
        log.info("the library of %s could not be read for the prompt's names: %s", folder, exc)
        return [], []
    return (_candidates(Term(" ".join(label.split()), n) for label, n in activities),
            _candidates(_entities(members)))


def _entities(members: Iterable[tuple[str, str, str, str]]) -> Iterable[Term]:
    """One term per library entity: the name most of its members carry (on a tie, the first in sort order)."""
    videos: dict[str, set[str]] = defaultdict(set)
    names: dict[str, Counter[tuple[str, str]]] = defaultdict(Counter)
    for lib_id, video_id, name, entity_type in members:
        videos[lib_id].add(video_id)
        names[lib_id][(" ".join(name.split()), entity_type)] += 1
    for lib_id, counts in names.items():
        (name, entity_type), _ = min(counts.items(), key=lambda item: (-item[1], item[0]))
        yield Term(name, len(videos[lib_id]), entity_type)


def _candidates(terms: Iterable[Term]) -> list[Term]:
    """One term per name (the one seen in more videos), ``MAX_CANDIDATES`` seen in most videos."""
    ordered = sorted((t for t in terms if _usable(t.text)), key=lambda t: (-t.videos, t.text, t.entity_type))
    unique = {_fold(t.text): t for t in reversed(ordered)}  # the first of each name wins
    return sorted(unique.values(), key=lambda t: (-t.videos, t.text, t.entity_type))[:MAX_CANDIDATES]


def choose(terms: Sequence[Term], vectors: np.ndarray, query: np.ndarray, *, limit: int) -> list[Term]:
    """The terms that fit ``query`` (unit vectors; cosine at least ``MIN_SIMILARITY``), most fitting
    first, at most ``limit`` and ``MAX_LIST_CHARS`` characters of names."""
    if not terms:
        return []
    scores = np.round(vectors @ query, SIMILARITY_DECIMALS)
    ranked = sorted((i for i in range(len(terms)) if scores[i] >= MIN_SIMILARITY),
                    key=lambda i: (-scores[i], -terms[i].videos, terms[i].text, terms[i].entity_type))
    out: list[Term] = []
    used = 0
    for i in ranked:
        cost = len(terms[i].text) + (len(NAME_SEPARATOR) if out else 0)
        if len(out) >= limit or used + cost > MAX_LIST_CHARS:
            break
        out.append(terms[i])
        used += cost
    return out


class ClipVocabulary:
    """The library names of one build, chosen per clip. ``await for_clip(title, said)`` is the clip's
    ``LibraryNames`` (None without any); the library is read and embedded once, at the first clip.

    ``folder``: the memory (None: no library to read); ``embedder``: gives the memory's embedder,
    asked only when the library has names (loading a model is not free)."""

    def __init__(self, folder: Path | None, embedder: Callable[[], Embedder], video_id: str) -> None:
        self.folder, self.embedder, self.video_id = folder, embedder, video_id
        self._lock = asyncio.Lock()
        self._loaded = False
        self._activities: list[Term] = []
        self._entities: list[Term] = []
        self._vectors = np.zeros((0, 0), dtype=np.float32)

    @classmethod
    def of(cls, memory: object, video_id: str) -> ClipVocabulary:
        """The vocabulary of a build into ``memory`` (none when it is a bare build folder)."""
        if isinstance(memory, Memory):
            return cls(memory.path, lambda: memory.embedder, video_id)
        return cls(None, _no_embedder, video_id)

    async def for_clip(self, title: str, said: Sequence[Utterance] = ()) -> LibraryNames | None:
        await self._load()
        query = " ".join([title, *(u.text for u in said)]).strip()
        if not (self._activities or self._entities) or not query:
            return None
        vector = normalize((await asyncio.to_thread(self.embedder().embed_documents, [query]))[0])
        split = len(self._activities)
        activities = choose(self._activities, self._vectors[:split], vector, limit=MAX_ACTIVITIES)
        entities = choose(self._entities, self._vectors[split:], vector, limit=MAX_ENTITIES)
        if not (activities or entities):
            return None
        return LibraryNames([t.text for t in activities], [(t.entity_type, t.text) for t in entities])

    async def _load(self) -> None:
        async with self._lock:
            if self._loaded or self.folder is None:
                return
            self._activities, self._entities = await asyncio.to_thread(read_terms, self.folder,
                                                                       exclude_video=self.video_id)
            texts = [t.text for t in (*self._activities, *self._entities)]
            if texts:
                self._vectors = normalize(await asyncio.to_thread(lambda: self.embedder().embed_documents(texts)))
            self._loaded = True


def _no_embedder() -> Embedder:
    raise AssertionError("a build folder without a memory has no library, so nothing to embed")
