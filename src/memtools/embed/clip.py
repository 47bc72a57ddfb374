"""A local CLIP / SigLIP image-text embedder on Hugging Face ``transformers``.

Any dual-encoder model with ``get_image_features`` and ``get_text_features`` works (CLIP,
SigLIP, SigLIP 2, ...), from a hub id or a local folder. torch, transformers and Pillow are
imported on first use; the model is loaded on the first call that needs it.
"""

from __future__ import annotations

import io
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memtools.embed.base import normalize
from memtools.embed.model_files import read_model_file
from memtools.embed.weights import looks_like_path, stable_name
from memtools.errors import ConfigError, EmbeddingError

_PILLOW_HINT = "install Pillow for image preprocessing: pip install 'memtools[local]'"


class TransformersImageEmbedder:
    """Embeds keyframes and text queries with a CLIP-style model.

    ``batch_size`` images go through the vision tower at once; ``device=None`` picks CUDA
    when available (the checkpoint's dtype there, float32 on CPU).
    """

    def __init__(self, model_name_or_path: str | os.PathLike[str], *, device: str | None = None,
                 batch_size: int = 32, name: str | None = None) -> None:
        if batch_size < 1:
            raise ConfigError(f"batch_size must be positive, not {batch_size}")
        self._source = os.path.expanduser(os.fspath(model_name_or_path))
        self._name = name or _reloadable_name(self._source)
        self._requested_device = device
        self.batch_size = batch_size
        self._load_lock = threading.Lock()
        self._loaded: _Loaded | None = None

    def __repr__(self) -> str:
        return f"TransformersImageEmbedder({self._name!r}, source={self._source!r})"

    @property
    def name(self) -> str:
        return self._name

    @property
    def source(self) -> str:
        return self._source

    @property
    def dim(self) -> int:
        """``projection_dim`` (CLIP) or the text tower's width (SigLIP), from ``config.json`` when possible."""
        if self._loaded is None:
            dim = _dim_from_config(read_model_file(self._source, "config.json"))
            if dim is not None:
                return dim
        return self._load().dim

    @property
    def device(self) -> str:
        return str(self._load().device)

    def embed_images(self, images: list[bytes]) -> np.ndarray:
        if isinstance(images, (bytes, bytearray)):
            raise TypeError("embed_images takes a list of encoded images, not one")
        loaded = self._load()
        parts = [np.zeros((0, loaded.dim), np.float32)]
        for start in range(0, len(images), self.batch_size):
            pictures = [_pil(image) for image in images[start:start + self.batch_size]]
            pixels = loaded.image_processor(images=pictures, return_tensors="pt")["pixel_values"]
            parts.append(self._forward(loaded, "get_image_features", pixel_values=pixels))
        return np.concatenate(parts)

    def embed_query(self, text: str) -> np.ndarray:
        loaded = self._load()
        with loaded.tokenizer_lock:
            batch = loaded.tokenizer([text], truncation=True, return_tensors="pt", **loaded.text_padding)
        keep = {"input_ids", "attention_mask"} if loaded.uses_mask else {"input_ids"}
        return self._forward(loaded, "get_text_features", **{k: v for k, v in batch.items() if k in keep})[0]

    def _forward(self, loaded: _Loaded, method: str, **inputs: Any) -> np.ndarray:
        import torch

        try:
            with torch.inference_mode():
                inputs = {k: v.to(loaded.device) for k, v in inputs.items()}
                if "pixel_values" in inputs:
                    inputs["pixel_values"] = inputs["pixel_values"].to(loaded.dtype)
                out = getattr(loaded.model, method)(**inputs)
                features = out if isinstance(out, torch.Tensor) else out.pooler_output
                return normalize(features.float().cpu().numpy())
        except (RuntimeError, ValueError) as exc:
            raise EmbeddingError(f"{self._name}: {method} failed: {exc}") from exc

    def _load(self) -> _Loaded:
        if self._loaded is None:
            with self._load_lock:
                if self._loaded is None:
                    self._loaded = _load(self)
        return self._loaded


@dataclass(frozen=True)
class _Loaded:
    model: Any
    tokenizer: Any
    image_processor: Any
    device: Any
    dtype: Any
    dim: int
    text_padding: dict[str, Any]
    uses_mask: bool
    tokenizer_lock: threading.Lock


def _reloadable_name(source: str) -> str:
    """The hub id (also for a hub-cache folder), else the absolute folder: the manifest records this
    name, and readers (MCP servers, ``memtools ask``) reload the model from it."""
    name = stable_name(source)
    if Path(source).is_dir() and name == Path(source).resolve().name:
        return str(Path(source).resolve())
    return name


def _dim_from_config(config: Any) -> int | None:
    if not isinstance(config, dict):
        return None
    if isinstance(config.get("projection_dim"), int):
        return config["projection_dim"]
    text = config.get("text_config")
    size = text.get("projection_size") or text.get("hidden_size") if isinstance(text, dict) else None
    return size if isinstance(size, int) else None


def _pil(image: bytes):
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError as exc:
        raise EmbeddingError(_PILLOW_HINT) from exc
    try:
        with Image.open(io.BytesIO(image)) as picture:
            return picture.convert("RGB")
    except (UnidentifiedImageError, OSError) as exc:
        raise EmbeddingError(f"could not decode an image of {len(image)} bytes (expected JPEG or PNG): {exc}") from exc


def _load(embedder: TransformersImageEmbedder) -> _Loaded:
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise EmbeddingError(f"TransformersImageEmbedder needs torch and transformers ({exc}): "
                             "pip install 'memtools[local]' (CPU build: add --extra-index-url "
                             "https://download.pytorch.org/whl/cpu)") from None
    source = embedder.source
    if looks_like_path(source) and not Path(source).is_dir():
        raise EmbeddingError(f"no model folder at {source!r}; pass a CLIP/SigLIP folder or hub id")
    from transformers.utils import logging as hf_logging

    bar_was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        device = torch.device(embedder._requested_device or ("cuda" if torch.cuda.is_available() else "cpu"))
        dtype = torch.float32 if device.type == "cpu" else "auto"
        model = transformers.AutoModel.from_pretrained(source, dtype=dtype).to(device).eval()
        tokenizer = transformers.AutoTokenizer.from_pretrained(source)
        image_processor = transformers.AutoImageProcessor.from_pretrained(source)
    except (OSError, ValueError, ImportError, RuntimeError, AssertionError) as exc:
        raise EmbeddingError(f"could not load image-text model {source!r}: {exc}") from exc
    finally:
        if bar_was_on:
            hf_logging.enable_progress_bar()
    if not (hasattr(model, "get_image_features") and hasattr(model, "get_text_features")):
        raise EmbeddingError(f"{source!r} is a {type(model).__name__}, not an image-text model like CLIP or SigLIP")
    config = model.config
    text_config = getattr(config, "text_config", config)
    limit = int(getattr(text_config, "max_position_embeddings", 77))
    siglip = "siglip" in getattr(config, "model_type", "")
    # SigLIP was trained on text padded to its full length (and without an attention mask).
    padding: dict[str, Any] = ({"padding": "max_length", "max_length": min(64, limit)} if siglip
                               else {"padding": True, "max_length": limit})
    with torch.inference_mode():  # the true output width, whatever the config calls it
        probe = model.get_text_features(input_ids=torch.zeros((1, 2), dtype=torch.long, device=device))
    probe = probe if isinstance(probe, torch.Tensor) else probe.pooler_output
    return _Loaded(model, tokenizer, image_processor, device, next(model.parameters()).dtype, int(probe.shape[-1]),
                   padding, not siglip, threading.Lock())
