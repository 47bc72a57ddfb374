"""An honest fake reranker for tests and offline examples.

``WordOverlapReranker`` scores a candidate by the query words it contains, the way a real
reranker rewards a candidate that says what the query asks: rare words count more, a
candidate that repeats one word does not beat one that covers the query, and a longer
candidate pays a little for what it says besides. It returns one float per candidate, in
order, and records every call (``calls``) so tests can assert what a reranker was shown.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Sequence

_WORD = re.compile(r"[a-z0-9]+")
STOP_WORDS = frozenset("a an and are as at be by for from in into is it its of on or the then to with".split())


_SUFFIXES = ("ing", "es", "ed", "s")


def words(text: str) -> list[str]:
    """Lower-cased content words with a crude stem (``slicing``, ``slices`` and ``sliced`` all match)."""
    out = []
    for w in _WORD.findall(text.lower()):
        if w in STOP_WORDS:
            continue
        for suffix in _SUFFIXES:
            if w.endswith(suffix) and len(w) - len(suffix) >= 3 and not w.endswith("ss"):
                w = w[: -len(suffix)]
                break
        out.append(w)
    return out


class WordOverlapReranker:
    """Scores = the IDF-weighted share of the query's words a candidate contains, minus a small
    length penalty. Deterministic and exact (no floating-point model), thread-safe."""

    def __init__(self, name: str = "test:word-overlap") -> None:
        self._name = name
        self.calls: list[tuple[str, list[str]]] = []
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._name

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        with self._lock:
            self.calls.append((query, list(documents)))
        wanted = set(words(query))
        bags = [set(words(d)) for d in documents]
        if not wanted or not documents:
            return [0.0] * len(documents)
        # a query word found in every candidate tells them apart less than a rare one
        idf = {w: math.log(1 + len(bags) / (1 + sum(w in b for b in bags))) + 0.1 for w in wanted}
        total = sum(idf.values())
        return [sum(idf[w] for w in wanted & bag) / total - 0.001 * len(bag - wanted) for bag in bags]


__all__ = ["WordOverlapReranker", "words"]
