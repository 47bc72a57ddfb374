"""The reranker seam: a query and candidate texts in, one relevance score per candidate out.

A reranker reads the query and each candidate together (a cross-encoder, a rerank server, a
chat model), which the first stage's vector similarity cannot. Scores only need to order the
candidates of one call (higher is more relevant); their scale is the backend's own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from memtools.errors import RerankError


@runtime_checkable
class Reranker(Protocol):
    """Scores candidates against a query. Implementations must be safe to call from several threads;
    search calls ``rerank`` on a worker thread and stops waiting after ``SearchConfig.rerank_timeout``."""

    @property
    def name(self) -> str:
        """What ``memtools info`` and a reranked result name, e.g. ``http:bge-reranker-v2-m3@http://host:8080``."""
        ...

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        """One score per document, in the documents' order (higher is more relevant)."""
        ...


def checked_scores(scores: object, expected: int, name: str) -> list[float]:
    """``scores`` as a list of ``expected`` finite floats; ``RerankError`` saying what was wrong otherwise."""
    if isinstance(scores, (str, bytes)) or not isinstance(scores, Sequence):
        raise RerankError(f"{name} returned {type(scores).__name__}, not a list of scores")
    if len(scores) != expected:
        raise RerankError(f"{name} returned {len(scores)} score(s) for {expected} document(s)")
    out: list[float] = []
    for i, score in enumerate(scores):
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise RerankError(f"{name} returned a non-number score {score!r} for document {i}")
        if not math.isfinite(score):
            raise RerankError(f"{name} returned a non-finite score ({score}) for document {i}")
        out.append(float(score))
    return out


__all__ = ["Reranker", "checked_scores"]
