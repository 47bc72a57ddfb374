"""The embedder seam: text in, unit-length float32 vectors out.

Every embedder has a ``name`` and a ``dim``; the memory's manifest records both and refuses
to be searched with a different embedder, because vectors from two models are not
comparable.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from memtools.errors import EmbeddingError


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors. Implementations must be safe to call from several threads."""

    @property
    def name(self) -> str:
        """A stable identifier of the model, e.g. ``sentence-transformers/all-MiniLM-L6-v2``."""
        ...

    @property
    def dim(self) -> int:
        """The vector dimension."""
        ...

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        """Vectors for stored payloads, shape (len(texts), dim), float32, L2-normalised."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """One vector for a search query, shape (dim,), float32, L2-normalised."""
        ...


def normalize(vectors: np.ndarray) -> np.ndarray:
    """L2-normalise rows; zero rows stay zero."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


def decode_rgb(image: bytes) -> np.ndarray:
    """An encoded image as an RGB uint8 array (H, W, 3); ``EmbeddingError`` when it is not an image."""
    import cv2

    array = cv2.imdecode(np.frombuffer(image, dtype=np.uint8), cv2.IMREAD_COLOR) if image else None
    if array is None:
        raise EmbeddingError(f"could not decode an image of {len(image)} bytes (expected JPEG or PNG)")
    return cv2.cvtColor(array, cv2.COLOR_BGR2RGB)
