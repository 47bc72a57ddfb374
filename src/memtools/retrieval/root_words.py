"""Stage 1's word signal: BM25 over the video roots' profile texts, held in memory.

Rare words name a video ("bagpipes", a person's name), so coarse-to-fine search adds each
video's full-text match of its root profile to the video's score (``SearchConfig.text_weight``).
It is scored among the roots themselves: a word's rarity is its rarity among the videos'
profiles, not among the hundreds of thousands of leaves of the whole table (where a word that
names five videos is common because their events repeat it). The index is built once per set
of profiles (``VectorIndex.video_profiles``, cached until the table changes) with ``bm25s``:
lower-cased words, English stop words removed, Snowball English stems (PyStemmer), as the
lance full-text index of ``search_nodes(mode="fulltext")`` tokenizes.
"""

from __future__ import annotations

import logging
import threading

import numpy as np

from memtools.store.base import VideoProfiles

_CACHE_SIZE = 4  # profiles of a few table versions (a reader pinned beside a writer, the latest)


class RootWords:
    """BM25 scores of every root profile for a query."""

    def __init__(self, texts: list[str]) -> None:
        import bm25s
        import Stemmer

        logging.getLogger("bm25s").setLevel(logging.WARNING)  # it sets DEBUG on its own logger

        self._bm25s = bm25s
        self._stemmer = Stemmer.Stemmer("english")
        self._size = len(texts)
        self._index = None
        if texts:
            tokens = bm25s.tokenize(texts, stopwords="en", stemmer=self._stemmer, show_progress=False)
            if tokens.vocab:
                self._index = bm25s.BM25(k1=1.2, b=0.75)  # tantivy's (lance's full-text) parameters
                self._index.index(tokens, show_progress=False)

    def best(self, query: str, keep: np.ndarray, limit: int) -> dict[int, float]:
        """Profile position -> BM25 score of the ``limit`` best matching profiles among ``keep``."""
        scores = np.where(keep, self.scores(query), 0.0)
        found = np.flatnonzero(scores > 0)
        if len(found) > limit:
            found = found[np.argsort(-scores[found], kind="stable")[:limit]]
        return {int(i): float(scores[i]) for i in found}

    def scores(self, query: str) -> np.ndarray:
        """One BM25 score per profile (0 where no query word occurs)."""
        if self._index is None:
            return np.zeros(self._size)
        words = self._bm25s.tokenize([query], stopwords="en", stemmer=self._stemmer, return_ids=False,
                                     show_progress=False)[0]
        return np.asarray(self._index.get_scores(words), dtype=np.float64) if words else np.zeros(self._size)


_cache: dict[int, tuple[VideoProfiles, RootWords]] = {}
_lock = threading.Lock()


def root_words(profiles: VideoProfiles) -> RootWords:
    """The BM25 index of these profiles, built on first use."""
    with _lock:
        cached = _cache.get(id(profiles))
        if cached is not None and cached[0] is profiles:
            return cached[1]
        words = RootWords(list(profiles.texts))
        while len(_cache) >= _CACHE_SIZE:
            _cache.pop(next(iter(_cache)))
        _cache[id(profiles)] = (profiles, words)
        return words
