"""The storage contract: what ``Memory``, the tools and the front ends may rely on.

Two engines sit behind a memory, each passed to ``Memory`` through its constructor
(``memtools.store.engines`` picks them from the manifest):

* a **graph engine** (``GraphEngine``): opens ``GraphStore`` handles (structure: nodes, edges,
  per-macro subgraphs, keyframes). kuzu 0.11.3 is the default; ladybug (its maintained fork)
  shares its Cypher and Python API (``memtools.store.graph.cypher``);
* a **vector index** (``VectorIndex``): similarity and full-text search over the retrieval
  payloads, asked with a typed ``SearchQuery`` (never a SQL string: each engine translates
  the ``SearchFilter`` into its own filter language; lance's lives in ``memtools.store.tables.vectors``).

The write contract (``VideoWrites``) writes, replaces or deletes one video atomically across
both engines. Convenience methods are written once here, on top of the few abstract ones
(``get`` over ``get_many``, ``write_video`` over ``write_videos``), as langgraph's ``BaseStore``
does for its ``batch``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import numpy as np

from memtools.errors import ConfigError
from memtools.schema import EdgeCategory, Keyframe, MacroEvent, Node, NodeKind, Speech, SuperEvent, VideoGraph

if TYPE_CHECKING:
    pass

SearchMode = Literal["vector", "fulltext", "hybrid"]
SEARCH_MODES: tuple[str, ...] = ("vector", "fulltext", "hybrid")


# --- search ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchFilter:
    """What a search is restricted to; every field is optional and they combine with AND.

    ``video_ids``: rows of any of these videos (None: every video; empty: none). ``kinds``:
    node kinds (``video``, ``super``, ``macro``, ``entity``, ...; empty: every kind).
    ``start``/``end``: rows overlapping that window (ending at or after ``start``, starting at
    or before ``end``). ``as_of``: only what had ended by that second (MAGIC-Video's G<=t).
    """

    video_ids: tuple[str, ...] | None = None
    kinds: tuple[str, ...] = ()
    start: float | None = None
    end: float | None = None
    as_of: float | None = None

    def __post_init__(self) -> None:
        for name in ("start", "end", "as_of"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not math.isfinite(float(value))):
                raise ConfigError(f"SearchFilter.{name} must be a finite number of seconds, not {value!r}")
        if isinstance(self.video_ids, str) or isinstance(self.kinds, str):
            raise ConfigError("SearchFilter.video_ids and .kinds take a sequence of strings, not one string")
        object.__setattr__(self, "video_ids", None if self.video_ids is None else tuple(self.video_ids))
        object.__setattr__(self, "kinds", tuple(self.kinds))


@dataclass(frozen=True)
class SearchQuery:
    """One similarity search: ``mode`` decides which of ``vector`` and ``text`` it needs.

    ``lite``: the hits carry only what ranking needs (id, video, kind, macro event, times, score);
    their text, display, macro label and context stay empty until ``VectorIndex.complete`` reads
    them. Ranking thousands of rows and showing a few hundred reads the payload of those only.
    """

    mode: SearchMode
    limit: int
    vector: np.ndarray | None = None
    text: str = ""
    filter: SearchFilter = field(default_factory=SearchFilter)
    lite: bool = False

    def __post_init__(self) -> None:
        if self.mode not in SEARCH_MODES:
            raise ConfigError(f"search mode {self.mode!r} is not one of {', '.join(SEARCH_MODES)}")
        if self.mode in ("vector", "hybrid") and self.vector is None:
            raise ConfigError(f"a {self.mode} search needs a query vector (embed the text first)")
        if self.mode in ("fulltext", "hybrid") and not self.text:
            raise ConfigError(f"a {self.mode} search needs query text")
        if isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 0:
            raise ConfigError(f"search limit must be an int >= 0, not {self.limit!r}")


@dataclass(frozen=True)
class Hit:
    """One row a search found, with its retrieval payload and a similarity (higher is better)."""

    id: str
    video_id: str
    kind: str
    macro_id: str
    t_start: float
    t_end: float
    text: str
    score: float
    display: str = ""
    macro_label: str = ""
    context: tuple[str, ...] = ()
    ref: int | None = field(default=None, compare=False, repr=False)  # the engine's row handle (lite hits)


Column = Any  # one column of ``HitColumns``: a list, a numpy array or a pyarrow array


@dataclass(frozen=True)
class HitColumns:
    """The rows of a lite search column by column, best first: ranking thousands of rows needs their
    scores, kinds and videos, not a ``Hit`` object per row. ``hit(i)`` is row ``i`` as a lite ``Hit``.
    Columns may be lists or numpy arrays; ``order``, if given, holds integers that sort like ``ids``
    (an engine that knows them spares the ranking a sort of strings)."""

    ids: Column
    video_ids: Column
    kinds: Column
    macro_ids: Column
    t_start: Column
    t_end: Column
    scores: Column
    refs: Column  # the engine's row handles (int or None), for ``VectorIndex.complete``
    order: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def hit(self, i: int) -> Hit:
        return self.take([i])[0]

    def hits(self) -> list[Hit]:
        return self.take(range(len(self.ids)))

    def take(self, rows: Iterable[int]) -> list[Hit]:
        """Rows ``rows`` as lite ``Hit`` objects, read column by column."""
        at = list(rows)
        ids, videos, kinds, macros, starts, ends, scores, refs = (
            _items(c, at) for c in (self.ids, self.video_ids, self.kinds, self.macro_ids, self.t_start, self.t_end,
                                    self.scores, self.refs))
        return [Hit(i, v, k, m, float(s), float(e), "", float(score), ref=None if r is None else int(r))
                for i, v, k, m, s, e, score, r in zip(ids, videos, kinds, macros, starts, ends, scores, refs,
                                                      strict=True)]

    @classmethod
    def of(cls, hits: Sequence[Hit]) -> HitColumns:
        return cls([h.id for h in hits], [h.video_id for h in hits], [h.kind for h in hits],
                   [h.macro_id for h in hits], [h.t_start for h in hits], [h.t_end for h in hits],
                   [h.score for h in hits], [h.ref for h in hits])


def _items(column, rows: list[int]) -> list:
    """Python values of ``column`` (a list, numpy array or pyarrow array) at ``rows``."""
    if hasattr(column, "to_pylist"):
        return column.take(rows).to_pylist() if rows else []
    if isinstance(column, np.ndarray):
        return column[rows].tolist() if rows else []
    return [column[i] for i in rows]


@dataclass(frozen=True)
class VideoProfiles:
    """The root row of every video, held in memory: ranking thousands of videos by their
    profile is one matrix product instead of a filtered vector query."""

    video_ids: list[str]
    durations: np.ndarray
    vectors: np.ndarray  # one unit row per video
    texts: Sequence[str] = ()  # each root's profile text (what its full-text match reads)

    def similarities(self, vector: np.ndarray) -> np.ndarray:
        return self.vectors @ np.asarray(vector, dtype=np.float32) if len(self.video_ids) else np.zeros(0)


@runtime_checkable
class VectorIndex(Protocol):
    """The searchable rows of a memory (one per searchable node, plus one profile per video)."""

    def search(self, query: SearchQuery) -> list[Hit]: ...

    def search_columns(self, query: SearchQuery) -> HitColumns:
        """The rows ``search`` would return for ``query`` as a lite search, column by column."""

    def complete(self, hits: Sequence[Hit]) -> list[Hit]:
        """The hits of a ``lite`` search with their text, display, macro label and context, in order."""

    def video_profiles(self) -> VideoProfiles: ...

    def count(self) -> int: ...

    def refresh(self) -> None: ...

    def warm_up(self) -> None:
        """Open the table ahead of the first search (a server's background warm-up)."""

    # writes (called by ``Memory`` inside its write step only)
    def version(self) -> int | None: ...

    def replace_videos(self, video_ids: Sequence[str], rows: list[dict]) -> None: ...

    def delete_videos(self, video_ids: Sequence[str]) -> None: ...

    def restore(self, version: int | None) -> None: ...

    def finish_write(self) -> None: ...


# --- graph -------------------------------------------------------------------------------


@dataclass(frozen=True)
class EdgeRow:
    """One edge as read back, with the node at its far end."""

    source: str
    target: str
    category: EdgeCategory
    label: str
    description: str
    other: Node  # the node at the end that is not the one asked about

    @property
    def other_id(self) -> str:
        return self.other.id


SubgraphEdge = tuple[str, str, str, str, str]  # source, target, category, label, description


class GraphReads(ABC):
    """The graph reads the tools use. Engines implement the abstract ones; the rest is written here once."""

    @abstractmethod
    def get_many(self, node_ids: Iterable[str]) -> dict[str, Node]:
        """The nodes with these ids that exist (id -> node)."""

    def get(self, node_id: str) -> Node | None:
        return self.get_many([node_id]).get(node_id)

    @abstractmethod
    def supers(self, video_id: str) -> list[SuperEvent]:
        """A video's super events in order."""

    @abstractmethod
    def macros_of_video(self, video_id: str) -> list[MacroEvent]:
        """A video's macro events in order."""

    @abstractmethod
    def subgraph(self, macro_id: str) -> tuple[list[Node], list[SubgraphEdge]]:
        """A macro event's children and the edges among them."""

    @abstractmethod
    def edges(self, node_id: str, direction: str, categories: Sequence[str] | None = None,
              labels: Sequence[str] | None = None, limit: int = 200) -> list[EdgeRow]:
        """Edges at a node: ``direction`` is 'out', 'in' or 'both'."""

    @abstractmethod
    def keyframes(self, video_id: str, start: float, end: float) -> list[Keyframe]:
        """A video's keyframes in ``[start, end]``, in time order."""

    @abstractmethod
    def speech(self, video_id: str, start: float, end: float, *, as_of: float | None = None,
               limit: int = 1000, speaker: str | None = None) -> list[Speech]:
        """Utterances overlapping ``[start, end]`` in time order (only ``speaker``'s, any case, when given)."""

    @abstractmethod
    def video_edges(self, video_ids: Sequence[str]) -> list[tuple[str, str, str]]:
        """(source, target, label) of every typed (non-hierarchy) edge of these videos."""

    @abstractmethod
    def video_graph(self, video_id: str) -> VideoGraph | None:
        """One video read back whole, as it was written (None if absent)."""

    def video_graphs(self, video_ids: Sequence[str]) -> dict[str, VideoGraph]:
        """These videos read back whole (those the graph holds); engines read them in one go."""
        return {vid: graph for vid in video_ids if (graph := self.video_graph(vid)) is not None}

    @abstractmethod
    def video_ids(self) -> list[str]:
        """Every video the graph holds."""

    # --- whole-memory reads (``memtools check`` / ``repair``, counts) ---

    @abstractmethod
    def counts(self, video_id: str | None = None) -> dict[str, int]:
        """Nodes per kind and non-hierarchy edges (of one video, or of all)."""

    @abstractmethod
    def counts_by_video(self) -> dict[str, dict[str, int]]:
        """Per video, nodes per kind and non-hierarchy edges (the manifest's ``counts``)."""

    @abstractmethod
    def counts_of(self, video_ids: Sequence[str]) -> dict[str, dict[str, int]]:
        """What the graph holds of these videos: ``video`` (1 when the video node is there), nodes
        per kind and non-hierarchy ``edges``, with zeros left out; a video it holds nothing of is absent."""

    @abstractmethod
    def ids_by_video(self, kinds: Iterable[NodeKind]) -> dict[str, set[str]]:
        """Node ids of these kinds, grouped by video."""

    @abstractmethod
    def keyframe_paths(self) -> list[tuple[str, str]]:
        """(video id, image path) of every stored keyframe."""


class GraphStore(GraphReads):
    """An open graph handle: the reads plus the writes ``Memory`` runs inside its write step."""

    read_only: bool

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def ensure_schema(self) -> None: ...

    @abstractmethod
    def begin(self) -> None: ...

    @abstractmethod
    def commit(self) -> None: ...

    @abstractmethod
    def rollback(self) -> None: ...

    @abstractmethod
    def delete_videos(self, video_ids: Sequence[str]) -> None:
        """Delete every node and edge of these videos (inside the caller's transaction)."""

    @abstractmethod
    def insert(self, graphs: Sequence[VideoGraph]) -> None:
        """Insert whole videos (inside the caller's transaction)."""

    def store_navigation(self, video_ids: Sequence[str], graphs: Sequence[VideoGraph]) -> None:
        """Replace the derived navigation rows of ``video_ids`` by those of ``graphs``, once the graph's
        COMMIT has returned (an engine without such rows: nothing to do)."""

    def refresh_navigation(self, video_ids: Sequence[str]) -> None:
        """Write the navigation rows of these videos again from the graph as it stands (a recovered write)."""


class GraphEngine(Protocol):
    """Opens graph handles on a memory's graph file.

    ``readers_beside_writer``: read-only handles in other processes keep working while one
    process writes (ladybug); when False (kuzu 0.11.3) readers step aside for a writer and a
    read during a write waits, then reports the memory as busy.
    """

    @property
    def name(self) -> str: ...

    @property
    def file_name(self) -> str:
        """The database file in the memory folder (``graph.kuzu``, ``graph.lbug``)."""

    @property
    def readers_beside_writer(self) -> bool: ...

    def open(self, path: Path, *, read_only: bool, buffer_pool_mb: int = 256) -> GraphStore: ...


# --- the write contract --------------------------------------------------------------------


class VideoWrites(ABC):
    """Write, replace or delete whole videos; each batch is one atomic step across the engines."""

    @abstractmethod
    def write_videos(self, graphs: Iterable[VideoGraph], *, batch_size: int = 200,
                     progress: Callable[[int], None] | None = None, embed_cache: dict[str, object] | None = None,
                     index: bool = True, staged_frames: Mapping[str, Path] | None = None) -> int:
        """Write many videos (an existing id is replaced); returns how many were written.
        ``staged_frames``: video id -> the staging root of its new keyframe files, swapped in whole."""

    @abstractmethod
    def delete_video(self, video_id: str) -> bool:
        """Remove a video, its vectors and its frames; False if it was not there."""

    def write_video(self, graph: VideoGraph) -> None:
        """Write one video; an existing video with the same id is replaced."""
        self.write_videos([graph])


# --- what the integrity checks read of an open memory ----------------------------------------
