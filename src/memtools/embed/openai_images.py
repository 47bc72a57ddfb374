"""Image and text embeddings from an OpenAI-compatible multimodal ``POST {base_url}/embeddings``.

Images go out as ``{"image": "data:image/jpeg;base64,..."}`` items of ``input`` (the shape of
Jina, Infinity, LiteLLM and vLLM multimodal embedding servers); text queries as plain
strings. Retries, timeouts, errors and the ``transport=`` seam are ``OpenAIEmbedder``'s.
"""

from __future__ import annotations

import base64

import numpy as np

from memtools.embed.base import decode_rgb
from memtools.embed.openai import OpenAIEmbedder


def data_url(image: bytes) -> str:
    """A ``data:`` URL of an encoded image, with the MIME type its first bytes announce."""
    mime = "image/png" if image[:8] == b"\x89PNG\r\n\x1a\n" else "image/jpeg"
    return f"data:{mime};base64,{base64.b64encode(image).decode('ascii')}"


class OpenAIImageEmbedder(OpenAIEmbedder):
    """``embed_images`` for keyframes, ``embed_query`` for text, both in the model's one space."""

    def __repr__(self) -> str:
        return f"OpenAIImageEmbedder({self.model!r}, url={self.url!r})"

    def embed_images(self, images: list[bytes]) -> np.ndarray:
        if isinstance(images, (bytes, bytearray)):
            raise TypeError("embed_images takes a list of encoded images, not one")
        if not images:
            return np.zeros((0, self.dim), dtype=np.float32)
        for image in images:  # refuse what is not an image here, not as an HTTP 400 later
            decode_rgb(image)
        items = [{"image": data_url(image)} for image in images]
        return np.concatenate([self._embed_batch(items[i:i + self.batch_size])
                               for i in range(0, len(items), self.batch_size)])
