"""Search strategy as data: which engine ranks, how many candidates, how much context per hit.

Presets are named; ``SearchConfig.default()`` is the one ``benchmarks/search_quality.py``
chose (see README, "Search quality").
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from memtools.store.vectors import SearchMode


class SearchConfig(BaseModel):
    mode: SearchMode = "hybrid"
    context_per_hit: int = Field(default=3, ge=0, le=5)
    max_query_chars: int = 1000

    @classmethod
    def default(cls) -> SearchConfig:
        return cls()

    @classmethod
    def vector(cls) -> SearchConfig:
        return cls(mode="vector")

    @classmethod
    def fulltext(cls) -> SearchConfig:
        return cls(mode="fulltext")

    @classmethod
    def hybrid(cls) -> SearchConfig:
        return cls(mode="hybrid")
