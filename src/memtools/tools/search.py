"""Search strategy as data: which engine matches nodes, how the hierarchy ranks videos and
moments, how hits merge into spans, and how the graph walk weighs each edge type.

Presets are named (``SearchConfig.preset(name)``); every preset is scored by
``benchmarks/search_quality.py --dataset activitynet`` and ``SearchConfig.default()`` is the
one that scored best there (docs/search.md, "Measured").

Strategies:

* ``flat``: every node competes alone; one engine query (vector, full-text or hybrid).
* ``coarse_to_fine``: rank videos first from what the hierarchy knows about them (root
  profile, best super/macro event, best node), open the best ``videos``, rank moments inside
  them with their macro event as context, and combine both scores. Inside one video (a
  ``video_id`` filter) only the moment stage runs.
* ``graph_walk``: coarse-to-fine seeds, then personalized PageRank over the typed graph of
  the seed videos (``WalkConfig``); hits carry the path that led to them.

Any strategy may end with a second stage: a ``Reranker`` (``memtools.rerank``) reorders the
first ``rerank_candidates`` moments, each read with its episode (``retrieval.reranking``).
The reranker itself is not data and is not part of a preset: it is given to ``MemoryTools``.
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from memtools.errors import ConfigError
from memtools.store.base import SearchMode

Strategy = Literal["flat", "coarse_to_fine", "graph_walk"]

# MAGIC-Video (Table 8) gives structural same-window edges weight 1.0 and derived or weak
# ones 0.5-0.8; the walk is undirected. Keys are edge labels, "CONTAINS" is the hierarchy.
DEFAULT_EDGE_WEIGHTS: dict[str, float] = {
    "CONTAINS": 1.0, "PERFORMS": 1.0, "RECEIVES": 1.0, "USES_TOOL": 0.8, "HAPPENS_IN": 0.8, "CONTEXT_FOR": 0.6,
    "CAUSES": 1.0, "PREVENTS": 0.8, "ENABLES": 0.8, "SUBEVENT_OF": 0.8, "BEFORE": 0.5, "OVERLAP": 0.6,
    "LEADS_TO": 0.6, "RESOLVES": 0.6, "CONTRASTS_WITH": 0.4, "LOCATED_IN": 0.6, "NEXT_TO": 0.5,
    "ATTACHED_TO": 0.6, "PART_OF": 0.8, "IS_SAME_AS": 1.0, "ANNOTATES": 0.8, "MENTION_OF": 1.0,
}


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WalkConfig(_Config):
    """Personalized PageRank over the typed graph of the seed videos (MAGIC-Video §3.4, C.2)."""

    damping: float = Field(default=0.5, gt=0, lt=1, description="probability of following an edge (1 - restart)")
    iterations: int = Field(default=30, ge=1, le=200)
    seeds: int = Field(default=20, ge=1, le=200, description="best-matching nodes that seed the walk")
    edge_weights: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_EDGE_WEIGHTS))
    similarity_power: float = Field(default=1.0, ge=0, description="re-rank score = walk x similarity^power")


class SearchConfig(_Config):
    mode: SearchMode = "vector"
    strategy: Strategy = "coarse_to_fine"
    videos: int = Field(default=8, ge=1, le=50, description="videos opened by coarse-to-fine search")
    candidates: int = Field(default=100, ge=10, le=2000, description="nodes matched library-wide to rank videos")
    root_weight: float = Field(default=1.0, ge=0, description="video score: weight of the root profile")
    context_weight: float = Field(default=0.0, ge=0, description="video score: weight of its best super/macro")
    node_weight: float = Field(default=1.0, ge=0, description="video score: weight of its best single node")
    text_weight: float = Field(default=0.2, ge=0, description=(
        "video score: weight of the root's full-text (BM25) match, max-normalised; rare words name a video"))
    video_share: float = Field(default=0.5, ge=0, le=1, description="final score = share x video + (1-share) x moment")
    macro_context: float = Field(default=0.5, ge=0, description="a node's moment score adds this x its macro's")
    merge_spans: bool = True
    merge_margin: float = Field(default=0.05, ge=0, description=(
        "neighbours whose moment score is within this of the best hit's merge with it"))
    merge_gap_sec: float = Field(default=2.0, ge=0, description="hits this close in time count as adjacent")
    per_video: int = Field(default=1, ge=0, le=50, description=(
        "library-wide, the list first takes at most this many hits per video, then fills up in score order "
        "(0: no limit), so the first hits show several candidate videos"))
    diversity_margin: float = Field(default=0.1, ge=0, description=(
        "only hits within this of the best hit's combined score take part in the per-video spreading"))
    walk: WalkConfig = Field(default_factory=WalkConfig)
    context_per_hit: int = Field(default=3, ge=0, le=5)
    max_query_chars: int = 1000
    rerank_candidates: int = Field(default=50, ge=1, le=200, description=(
        "with a reranker (MemoryTools(reranker=...) or $MEMTOOLS_RERANKER): the first-stage moments it reorders"))
    rerank_timeout: float = Field(default=10.0, gt=0, le=300, description=(
        "seconds a search waits for the reranker; past it (or on any reranker failure) the first-stage order "
        "stands and the result says so"))

    @classmethod
    def default(cls) -> SearchConfig:
        """The benchmark's best preset, or the one named by ``MEMTOOLS_SEARCH_PRESET`` (so the CLI,
        the MCP server and the ORA loop can be switched without code)."""
        name = os.environ.get("MEMTOOLS_SEARCH_PRESET", "").strip() or DEFAULT_PRESET
        try:
            return cls.preset(name)
        except ValueError as exc:
            raise ConfigError(f"MEMTOOLS_SEARCH_PRESET: {exc}") from None

    @classmethod
    def preset(cls, name: str) -> SearchConfig:
        try:
            return PRESETS[name]
        except KeyError:
            raise ValueError(f"unknown search preset {name!r}; choose one of {', '.join(PRESETS)}") from None

    # The flat presets of the first release, kept for comparison and for exact keyword lookups.
    @classmethod
    def vector(cls) -> SearchConfig:
        return PRESETS["flat-vector"]

    @classmethod
    def fulltext(cls) -> SearchConfig:
        return PRESETS["flat-fulltext"]

    @classmethod
    def hybrid(cls) -> SearchConfig:
        return PRESETS["flat-hybrid"]


PRESETS: dict[str, SearchConfig] = {
    "flat-vector": SearchConfig(mode="vector", strategy="flat"),
    "flat-fulltext": SearchConfig(mode="fulltext", strategy="flat"),
    "flat-hybrid": SearchConfig(mode="hybrid", strategy="flat"),
    "coarse-to-fine": SearchConfig(),
    "coarse-to-fine-nomerge": SearchConfig(merge_spans=False),
    "coarse-to-fine-deep": SearchConfig(per_video=2),
    "graph-walk": SearchConfig(strategy="graph_walk"),
}
DEFAULT_PRESET = "coarse-to-fine"
