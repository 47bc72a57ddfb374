"""The search tools: ``search_nodes`` (flat or coarse-to-fine, per ``SearchConfig``) and
``search_graph`` (a personalized-PageRank walk from the best matches), both with "as of t".

With a reranker (``MemoryTools(reranker=...)`` or ``$MEMTOOLS_RERANKER``), the first stage keeps
``rerank_candidates`` moments instead of ``top_k`` and the reranker reorders them
(``retrieval.reranking``); without one, nothing of it runs or is imported.

A mixin of ``MemoryTools`` (``tools/core.py``); it uses the core's argument helpers.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memtools.errors import ToolError
from memtools.retrieval.library import Filters, search_library
from memtools.retrieval.moments import Moment
from memtools.retrieval.walk import walk
from memtools.schema import SEARCHABLE_KINDS
from memtools.store.base import SearchQuery
from memtools.tools import messages as msg
from memtools.tools.host import ToolsHost
from memtools.tools.results import SearchHit, SearchResult
from memtools.tools.search import SearchConfig

if TYPE_CHECKING:
    from memtools.rerank.base import Reranker
    from memtools.store import Memory

TOP_K_MAX = 50
FACTS_HELD = 4096  # videos whose row count and title a search keeps, per manifest generation
SEARCHABLE = tuple(k.value for k in SEARCHABLE_KINDS)
RERANKER_ENV = "MEMTOOLS_RERANKER"  # memtools.rerank.RERANKER_ENV, read here without importing it


def reranker_from_env(memory: Memory) -> Reranker | None:
    """The reranker ``$MEMTOOLS_RERANKER`` names, recording any model tokens in ``memory``'s folder
    (``memtools.rerank`` is imported only when the variable is set)."""
    if not os.environ.get(RERANKER_ENV, "").strip():
        return None
    from memtools.rerank import reranker_from_env as from_env

    return from_env(memory.path)


def check_as_of(as_of_sec: float | None) -> float | None:
    if as_of_sec is None:
        return None
    if isinstance(as_of_sec, bool) or not isinstance(as_of_sec, (int, float)) or not math.isfinite(as_of_sec) \
            or as_of_sec < 0:
        raise ToolError(msg.BAD_AS_OF.format(value=as_of_sec))
    return float(as_of_sec)


class SearchTools(ToolsHost):
    """``search_nodes`` and ``search_graph``; mixed into ``MemoryTools``."""

    search_config: SearchConfig
    reranker: Reranker | None

    def _depth(self, top_k: int, config: SearchConfig) -> int:
        """Moments the first stage must deliver: ``top_k``, or the reranker's candidates."""
        return top_k if self.reranker is None else max(top_k, config.rerank_candidates)

    def _filters(self, query: str, top_k: int, node_types: Sequence[str] | None, video_id: str | None,
                 start_sec: float | None, end_sec: float | None, as_of_sec: float | None) -> tuple[str, Filters]:
        query = (query or "").strip()
        if not query:
            raise ToolError(msg.EMPTY_QUERY)
        if len(query) > self.search_config.max_query_chars:
            raise ToolError(msg.QUERY_TOO_LONG.format(n=len(query), limit=self.search_config.max_query_chars))
        if not (1 <= top_k <= TOP_K_MAX):
            raise ToolError(msg.BAD_RANGE.format(name="top_k", low=1, high=TOP_K_MAX, value=top_k))
        kinds = list(dict.fromkeys(node_types or []))
        bad = [k for k in kinds if k not in SEARCHABLE]
        if bad:
            raise ToolError(msg.BAD_NODE_TYPES.format(bad=bad, allowed=", ".join(SEARCHABLE)))
        if video_id is not None:
            video_id = self._video_id(video_id)
        if start_sec is not None or end_sec is not None:
            self._check_window(start_sec or 0.0, end_sec if end_sec is not None else float("inf"))
        as_of = check_as_of(as_of_sec)
        return query, Filters(kinds=kinds or list(SEARCHABLE), video_id=video_id, start=start_sec, end=end_sec,
                              as_of=as_of)

    def _video_rows(self, video_id: str) -> int:
        """Lance rows of one video (its profile and searchable nodes), from the manifest's counts."""
        facts = self._video_facts(video_id)
        return 200 if facts is None else facts[0]

    def _video_facts(self, video_id: str) -> tuple[int, str] | None:
        """(lance rows, title) of one video as of the memory's manifest, kept until the manifest
        changes: an entry is a catalog read (~0.1 ms), and a warm search asks for each opened
        video twice (its rows for stage 2, its title for the result)."""
        manifest = self.memory.manifest
        held: tuple[object, int, dict[str, tuple[int, str] | None]] | None = getattr(self, "_facts", None)
        if held is None or held[0] is not manifest or held[1] != manifest.generation or len(held[2]) >= FACTS_HELD:
            held = (manifest, manifest.generation, {})
            self._facts = held
        facts = held[2]
        if video_id not in facts:
            entry = manifest.videos.get(video_id)
            facts[video_id] = None if entry is None else (1 + sum(entry.counts.get(k, 0) for k in SEARCHABLE),
                                                          entry.title)
        return facts[video_id]

    def _result(self, query: str, config: SearchConfig, moments: Sequence[Moment], top_k: int,
                filters: Filters, strategy: str) -> SearchResult:
        # the found videos' titles: a lookup each (kept per generation), not a read of every video
        titles = {vid: facts[1] for vid in dict.fromkeys(m.video_id for m in moments)
                  if (facts := self._video_facts(vid)) is not None}
        reranked_by = warning = ""
        if self.reranker is not None and moments:
            from memtools.retrieval.reranking import rerank_moments

            named = {m.video_id: titles.get(m.video_id, "") for m in moments[:config.rerank_candidates]}
            moments, outcome = rerank_moments(self.reranker, query, moments, config.rerank_candidates,
                                              config.rerank_timeout,
                                              {vid: t for vid, t in named.items() if t and t != vid})
            reranked_by, warning = ("", outcome.warning) if outcome.warning else (self.reranker.name, "")
        hits = [SearchHit(id=m.id, kind=m.kind, video_id=m.video_id, t_start=m.t_start, t_end=m.t_end, text=m.text,
                          score=round(m.score, 4), macro_id=m.macro_id, macro_label=m.macro_label,
                          context=list(m.context[:config.context_per_hit]),
                          video_title=titles.get(m.video_id, "") if titles.get(m.video_id) != m.video_id else "",
                          members=list(m.members), path=list(m.path),
                          rerank_score=None if m.rerank_score is None else round(m.rerank_score, 4))
                for m in moments[:top_k]]
        return SearchResult(query=query, mode=config.mode, strategy=strategy, hits=hits, as_of_sec=filters.as_of,
                            reranked_by=reranked_by, rerank_warning=warning)

    def search_nodes(self, query: str, top_k: int = 10, node_types: Sequence[str] | None = None,
                     video_id: str | None = None, start_sec: float | None = None, end_sec: float | None = None,
                     as_of_sec: float | None = None) -> SearchResult:
        query, filters = self._filters(query, top_k, node_types, video_id, start_sec, end_sec, as_of_sec)
        config = self.search_config
        if config.strategy == "graph_walk":
            return self._walk(query, top_k, filters, config)
        vector = self.memory.embedder.embed_query(query) if config.mode != "fulltext" else None
        depth = self._depth(top_k, config)
        with self._reading():  # waits out a writer, so lance and kuzu are seen at the same generation
            if config.strategy == "flat" or vector is None:
                hits = self.memory.vectors.search(SearchQuery(config.mode, depth, vector, query, filters.filter()))
                moments = [Moment.from_hit(h) for h in hits]
            else:
                moments = search_library(self.memory.vectors, vector, query, config, filters, SEARCHABLE,
                                         self._video_rows, top_k=depth).moments
        return self._result(query, config, moments, top_k, filters, config.strategy)

    def search_graph(self, query: str, top_k: int = 10, node_types: Sequence[str] | None = None,
                     video_id: str | None = None, as_of_sec: float | None = None) -> SearchResult:
        query, filters = self._filters(query, top_k, node_types, video_id, None, None, as_of_sec)
        return self._walk(query, top_k, filters, self.search_config)

    def _walk(self, query: str, top_k: int, filters: Filters, config: SearchConfig) -> SearchResult:
        vector = self.memory.embedder.embed_query(query)
        with self._reading() as graph:
            found = search_library(self.memory.vectors, vector, query, config.model_copy(update={"merge_spans": False}),
                                   filters, SEARCHABLE, self._video_rows, open_kinds=SEARCHABLE, hit_payloads=True)
            typed = graph.video_edges(found.opened) if found.opened else []
        parents: dict[str, str] = {}
        for vid in found.opened:
            outline = self._outline(vid)
            if outline is None:
                continue
            parents.update({s.id: vid for s in outline.supers})
            parents.update({m.id: m.super_id for m in outline.macros})
        present = {h.id for h in found.hits}
        parents.update({h.id: h.macro_id for h in found.hits if h.macro_id and h.kind not in ("macro", "super")})
        keep = present | set(parents.values())
        typed = [e for e in typed if e[0] in keep and e[1] in keep]
        moments = walk(found.hits, found.moments[:config.walk.seeds], typed, parents, config.walk, filters.kinds)
        return self._result(query, config, moments, top_k, filters, "graph_walk")
