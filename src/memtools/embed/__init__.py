"""Embedders: the ``Embedder`` seam and its backends.

    TransformersEmbedder   local Hugging Face model (default: all-MiniLM-L6-v2 on plain numpy)
    OpenAIEmbedder         any OpenAI-compatible ``/embeddings`` endpoint
    TestEmbedder           deterministic feature hashing, for tests

Image-text embedders (keyframes and text queries in one space) live in ``memtools.embed.images``.

The default model runs without torch; torch and transformers (``memtools[torch]``) are imported
only when a model that needs them is first used, and httpx only when ``OpenAIEmbedder`` is (a
cold ``memtools tool search_nodes`` needs neither). Where the default model's files come from:
``memtools.embed.weights``.
"""

from __future__ import annotations

import os
import re

from memtools.embed.base import Embedder, normalize
from memtools.embed.images import ImageEmbedder, TestImageEmbedder, image_embedder_for_name, image_embedder_from_spec
from memtools.embed.testing import TestEmbedder
from memtools.embed.transformers import TransformersEmbedder, default_embedder
from memtools.embed.weights import DEFAULT_MODEL_ID
from memtools.errors import ConfigError

SPEC_FORMS = (
    "'default' (all-MiniLM-L6-v2)",
    "'default:<folder holding it>'",
    "'hf:<hub id or local folder>'",
    "'openai:<model>'",
    "'test' or 'test:<dim>'",
)
_TEST_SPEC = re.compile(r"test(?::(?:hash-)?(\d+))?")


def embedder_from_spec(
    spec: str,
    *,
    base_url: str | None = None,
    api_key_env: str | None = "OPENAI_API_KEY",
    device: str | None = None,
) -> Embedder:
    """Build an embedder from a short string, e.g. from a CLI flag or a config file.

    ``default`` returns the shared ``default_embedder()`` (a fresh one when ``device`` is
    given); ``default:FOLDER`` the default model read from a copy in FOLDER (same name).
    ``base_url`` and ``api_key_env`` apply to ``openai:``; ``device`` to ``default`` and ``hf:``.
    Embedder names round-trip: ``openai:M`` and ``test:hash-64`` are accepted as written, and
    ``hf:`` + a ``TransformersEmbedder.name`` reloads that model.
    """
    spec = spec.strip()
    kind, _, arg = spec.partition(":")
    if spec == "default":
        return default_embedder() if device is None else TransformersEmbedder(device=device)
    if kind == "default" and arg:
        return TransformersEmbedder(os.path.expanduser(arg), device=device, name=DEFAULT_MODEL_ID)
    if kind == "hf" and arg:
        return TransformersEmbedder(arg, device=device)
    if kind == "openai" and arg:
        from memtools.embed.openai import OpenAIEmbedder

        if base_url is None:
            return OpenAIEmbedder(arg, api_key_env=api_key_env)
        return OpenAIEmbedder(arg, base_url=base_url, api_key_env=api_key_env)
    match = _TEST_SPEC.fullmatch(spec)
    if match:
        return TestEmbedder(int(match.group(1) or 64))
    raise ConfigError(f"unknown embedder spec {spec!r}; use one of: {', '.join(SPEC_FORMS)}")


def embedder_for_name(name: str) -> Embedder:
    """Reload the embedder a memory's manifest names (the default model, ``openai:``, ``test:``
    or a Hugging Face model name)."""
    default = default_embedder()
    if name == default.name:
        return default
    if name.startswith(("openai:", "test:")):
        return embedder_from_spec(name)
    return embedder_from_spec(f"hf:{name}")


__all__ = [
    "Embedder",
    "ImageEmbedder",
    "OpenAIEmbedder",
    "TestEmbedder",
    "TestImageEmbedder",
    "TransformersEmbedder",
    "default_embedder",
    "embedder_for_name",
    "embedder_from_spec",
    "image_embedder_for_name",
    "image_embedder_from_spec",
    "normalize",
]


def __getattr__(name: str):
    if name == "OpenAIEmbedder":  # imported on first use: httpx is not needed by local embedders
        from memtools.embed.openai import OpenAIEmbedder

        return OpenAIEmbedder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
