"""A BERT encoder in plain numpy, for models like all-MiniLM-L6-v2 (the default embedder).

Why: loading torch + transformers costs seconds (6-7 s on 2 cores before the first query
could be embedded), while the default model is a 6-layer, 384-wide BERT whose forward pass is
a few small matrix products. This module reads the same ``model.safetensors`` and
``tokenizer.json`` and computes the same vectors (cosine >= 0.999 to the torch model, pinned
by a test) in about a tenth of a second after a cold start, with numpy, ``safetensors`` and
``tokenizers`` only — all three already installed with transformers.

It handles the classic BERT layout (``model_type`` "bert", absolute positions, GELU) with
mean pooling; ``supports(folder)`` says whether a model folder qualifies, and
``TransformersEmbedder`` falls back to torch for everything else.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from memtools.embed.base import normalize
from memtools.errors import EmbeddingError

_FILES = ("config.json", "model.safetensors", "tokenizer.json")


def supports(folder: str | Path) -> bool:
    """True when ``folder`` holds a BERT model this encoder can run exactly."""
    folder = Path(folder)
    if not all((folder / name).is_file() for name in _FILES):
        return False
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (config.get("model_type") == "bert" and config.get("hidden_act", "gelu") == "gelu"
            and config.get("position_embedding_type", "absolute") == "absolute")


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to ~1e-7 (Abramowitz & Stegun 7.1.26); numpy has no erf of its own."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x * np.float32(1 / math.sqrt(2))))


class NumpyBert:
    """Tokenizer + BERT encoder + mean pooling, loaded from a model folder."""

    def __init__(self, folder: str | Path, max_length: int = 256) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        folder = Path(folder)
        try:
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
            weights = load_file(str(folder / "model.safetensors"))
            self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except Exception as exc:  # noqa: BLE001 - safetensors / tokenizers raise their own types
            raise EmbeddingError(f"could not load the BERT model in {folder}: {exc}") from exc
        weights = {k.removeprefix("bert."): v for k, v in weights.items()}
        self.dim = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.max_length = min(max_length, int(config.get("max_position_embeddings", 512)))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(self.max_length)
        self.pad_id = int(config.get("pad_token_id") or 0)
        self.word = weights["embeddings.word_embeddings.weight"]
        self.position = weights["embeddings.position_embeddings.weight"]
        self.token_type = weights["embeddings.token_type_embeddings.weight"][0]
        self.embed_norm = (weights["embeddings.LayerNorm.weight"], weights["embeddings.LayerNorm.bias"])
        self.layers = []
        for n in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{n}."

            def w(name: str, p: str = p) -> np.ndarray:
                return np.ascontiguousarray(weights[p + name + ".weight"].T)

            def b(name: str, p: str = p) -> np.ndarray:
                return weights[p + name + ".bias"]

            qkv = np.concatenate([w("attention.self.query"), w("attention.self.key"), w("attention.self.value")], 1)
            qkv_bias = np.concatenate([b("attention.self.query"), b("attention.self.key"), b("attention.self.value")])
            self.layers.append((
                qkv, qkv_bias, w("attention.output.dense"), b("attention.output.dense"),
                (weights[p + "attention.output.LayerNorm.weight"], b("attention.output.LayerNorm")),
                w("intermediate.dense"), b("intermediate.dense"), w("output.dense"), b("output.dense"),
                (weights[p + "output.LayerNorm.weight"], b("output.LayerNorm")),
            ))

    def _norm(self, x: np.ndarray, params: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * params[0] + params[1]

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length mean-pooled vectors, one row per text (texts of similar length batch best)."""
        encodings = self.tokenizer.encode_batch(texts)
        length = max(len(e.ids) for e in encodings)
        ids = np.full((len(texts), length), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(texts), length), dtype=np.float32)
        for row, enc in enumerate(encodings):
            ids[row, :len(enc.ids)] = enc.ids
            mask[row, :len(enc.ids)] = 1.0
        batch, dim, heads = len(texts), self.dim, self.heads
        head_dim = dim // heads
        x = self.word[ids] + self.position[:length] + self.token_type
        x = self._norm(x, self.embed_norm).reshape(batch * length, dim)
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        scale = np.float32(1 / math.sqrt(head_dim))
        for qkv, qkv_b, out_w, out_b, norm1, in_w, in_b, ff_w, ff_b, norm2 in self.layers:
            q, k, v = np.split((x @ qkv + qkv_b).reshape(batch, length, 3, heads, head_dim), 3, axis=2)
            q, k, v = (t[:, :, 0].transpose(0, 2, 1, 3) for t in (q, k, v))
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, dim)
            x = self._norm(context @ out_w + out_b + x, norm1)
            x = self._norm(_gelu(x @ in_w + in_b) @ ff_w + ff_b + x, norm2)
        hidden = x.reshape(batch, length, dim)
        pooled = (hidden * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return normalize(pooled.astype(np.float32))
