"""A deterministic, model-free embedder for tests and examples.

``TestEmbedder`` is feature hashing over word tokens: each (lower-cased, plural-stripped)
word adds +1 or -1 to one of ``dim`` buckets, chosen by a stable hash. Texts that share
words therefore get similar vectors, so search behaves sensibly in tests, while the
contract matches the real embedders: float32, L2-normalised, right shapes, same text same
vector in every process, safe to call from several threads.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache

import numpy as np

from memtools.errors import ConfigError

_WORD = re.compile(r"\w+")
_EMPTY_TOKEN = "\x00empty"  # every text gets a unit vector, even one without words


class TestEmbedder:
    """Bag-of-words feature hashing; no model, no downloads, microseconds per text."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self, dim: int = 64) -> None:
        if dim < 1:
            raise ConfigError(f"dim must be positive, not {dim}")
        self._dim = dim

    def __repr__(self) -> str:
        return f"TestEmbedder(dim={self._dim})"

    @property
    def name(self) -> str:
        return f"test:hash-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("embed_documents takes a list of strings, not one string")
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in tokens(text) or [_EMPTY_TOKEN]:
                bucket, sign = _bucket(token, self._dim)
                out[row, bucket] += sign
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        # Words that cancel out (a +1 and a -1 in one bucket) fall back to the empty vector.
        for empty in np.flatnonzero(norms[:, 0] == 0):
            bucket, sign = _bucket(_EMPTY_TOKEN, self._dim)
            out[empty, bucket], norms[empty] = sign, 1.0
        return out / norms

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens with a plural ``s`` stripped (``onions`` -> ``onion``)."""
    words = _WORD.findall(text.lower())
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words]


@lru_cache(maxsize=65536)
def _bucket(token: str, dim: int) -> tuple[int, float]:
    """Stable (bucket, sign) for a token: blake2b, not ``hash()``, which varies per process."""
    value = int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "little")
    return value % dim, (1.0 if value >> 63 else -1.0)
