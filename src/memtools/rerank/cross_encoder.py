"""A local cross-encoder (``transformers.AutoModelForSequenceClassification``) from a folder or
hub id: BAAI/bge-reranker-*, cross-encoder/ms-marco-*, jina-reranker-v1-*, mxbai-rerank-*.

torch and transformers are imported when the model is first used, never at import time. The
score of a pair is the model's single logit, or, for a two-class head, the logit margin of the
last class ("relevant") over the first.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memtools.errors import ConfigError, RerankError


class CrossEncoderReranker:
    """Scores (query, document) pairs with a sequence-classification model. ``device=None``
    picks CUDA when available. Pairs go through in batches of ``batch_size``, truncated to
    ``max_length`` tokens. Thread-safe (one forward pass at a time)."""

    def __init__(self, model: str | Path, *, device: str | None = None, batch_size: int = 16,
                 max_length: int = 512) -> None:
        if batch_size < 1 or max_length < 8:
            raise ConfigError("batch_size must be positive and max_length at least 8")
        self.source = str(model)
        self.batch_size = batch_size
        self.max_length = max_length
        self._device = device
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any, Any] | None = None  # tokenizer, model, device

    def __repr__(self) -> str:
        return f"CrossEncoderReranker({self.source!r})"

    @property
    def name(self) -> str:
        return f"cross-encoder:{self.source}"

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        if not documents:
            return []
        import torch

        with self._lock:
            tokenizer, model, device = self._load()
            scores: list[float] = []
            try:
                for start in range(0, len(documents), self.batch_size):
                    chunk = list(documents[start : start + self.batch_size])
                    batch = tokenizer([query] * len(chunk), chunk, padding=True, truncation=True,
                                      max_length=self.max_length, return_tensors="pt")
                    with torch.inference_mode():
                        logits = model(**{k: v.to(device) for k, v in batch.items()}).logits.float()
                    column = logits[:, 0] if logits.shape[-1] == 1 else logits[:, -1] - logits[:, 0]
                    scores += column.cpu().tolist()
            except (RuntimeError, ValueError) as exc:  # CUDA OOM, shape errors, ...
                raise RerankError(f"{self.name} failed on {len(documents)} document(s): {exc}") from exc
        return scores

    def _load(self) -> tuple[Any, Any, Any]:
        if self._loaded is None:
            try:
                import torch
                from transformers import AutoModelForSequenceClassification, AutoTokenizer
            except ImportError as exc:
                raise ConfigError(f"the cross-encoder reranker needs torch and transformers: {exc}") from exc
            if self.source.startswith((".", "/", "~")) and not Path(self.source).expanduser().is_dir():
                raise RerankError(f"no cross-encoder model folder at {self.source!r}")
            try:
                tokenizer = AutoTokenizer.from_pretrained(self.source)
                model = AutoModelForSequenceClassification.from_pretrained(self.source)
            except (OSError, ValueError) as exc:
                raise RerankError(f"could not load the cross-encoder {self.source!r}: {exc}") from exc
            device = torch.device(self._device or ("cuda" if torch.cuda.is_available() else "cpu"))
            self._loaded = (tokenizer, model.to(device).eval(), device)
        return self._loaded


__all__ = ["CrossEncoderReranker"]
