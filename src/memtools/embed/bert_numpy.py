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
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memtools.blas import usable_cpus
from memtools.embed.base import normalize
from memtools.embed.bert_ops import gelu
from memtools.errors import EmbeddingError

if TYPE_CHECKING:
    from memtools.embed.bert_query import QueryWeights

_FILES = ("config.json", "model.safetensors", "tokenizer.json")
QUERY_WEIGHTS_FROM = 2  # the lone-query path's weights are made from a process's second query on


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
        self._query: QueryWeights | None = None
        self._query_threads = 0  # float32 on this many BLAS threads for lone queries; 0: int16 (query_path)
        self._query_lock = threading.Lock()
        self._queries = 0
        self._building = False

    def encode_query(self, text: str) -> np.ndarray:
        """One text's unit vector by the lone-query path (``memtools.embed.bert_query``: int16
        weights): the same vector as ``encode([text])[0]`` to a cosine of 0.9999999, in less time.
        Its weights are made on a background thread from a process's second query on (~0.1 s of
        work a one-shot command never pays); until then ``encode``'s path answers. The tokenizer
        is not re-entrant: callers serialise (as ``encode``'s do)."""
        ids = self.tokenizer.encode(text).ids
        if self._query is not None:
            return self.encode_ids(ids)
        with self._query_lock:
            self._queries += 1
            build = self._queries >= QUERY_WEIGHTS_FROM and not self._building
            self._building = self._building or build
        if build:
            from memtools import background

            if background.start(self._build_query_weights, name="memtools-query-weights") is None:
                self._building = False  # the process is exiting
        return self._forward([ids])[0]

    def encode_ids(self, ids: list[int]) -> np.ndarray:
        """One tokenised query by the way this machine runs it fastest (``memtools.embed.query_path``): the int16
        layers on one BLAS thread, or float32 on several; the float32 encoder until the query weights exist."""
        query, threads = self._query, self._query_threads
        if query is None:
            return self._forward([ids])[0]
        if threads:
            from memtools.blas import blas_threads

            with blas_threads(threads):
                return self._forward([ids])[0]
        return query.encode(ids)

    def query_weights(self) -> QueryWeights:
        """The lone-query path's weights, made now if they are not yet (tests, benchmarks, warm-ups)."""
        if self._query is None:
            from memtools.embed.bert_query import QueryWeights

            self._settle_query_path(QueryWeights(self))
        assert self._query is not None
        return self._query

    def _build_query_weights(self) -> None:
        from memtools import background
        from memtools.embed.bert_query import QueryWeights

        try:
            self._settle_query_path(QueryWeights(self, stop=background.EXITING))
        except InterruptedError:  # the process is exiting: queries keep the float32 path
            pass

    def _settle_query_path(self, query: QueryWeights) -> None:
        """Choose how lone queries run here (int16 or float32 on several threads), then start using ``query``."""
        from memtools.embed.query_path import calibrate

        self._query_threads = calibrate(query.encode, lambda ids: self._forward([ids]), usable_cpus(), len(self.word))
        self._query = query

    def _norm(self, x: np.ndarray, params: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """LayerNorm over the last axis, in place on ``x`` (a fresh intermediate every time)."""
        x -= x.mean(-1, keepdims=True)
        var = np.einsum("ij,ij->i", x, x)[:, None] / np.float32(x.shape[-1])
        x /= np.sqrt(var + np.float32(self.eps))
        x *= params[0]
        x += params[1]
        return x

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        """Unit-length mean-pooled vectors, one row per text, in the order given.

        All texts are tokenised at once, then run in batches of similar token counts (longest
        first), so a batch carries little padding and an out-of-memory error shows up early.
        """
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        ids = [e.ids for e in self.tokenizer.encode_batch(texts)]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]), reverse=True)
        chunks = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]

        def run(chunk: list[int]) -> None:
            out[chunk] = self._forward([ids[i] for i in chunk])

        workers = min(len(chunks), usable_cpus())
        if workers <= 1:
            for chunk in chunks:
                run(chunk)
        else:  # numpy releases the GIL in its products: one batch per core, each on one BLAS thread
            with ThreadPoolExecutor(workers, thread_name_prefix="memtools-bert") as pool:
                list(pool.map(run, chunks))
        return out

    def _forward(self, rows: list[list[int]]) -> np.ndarray:
        batch, length = len(rows), max(len(r) for r in rows)
        ids = np.full((batch, length), self.pad_id, dtype=np.int64)
        mask = np.zeros((batch, length), dtype=np.float32)
        for row, tokens in enumerate(rows):
            ids[row, :len(tokens)] = tokens
            mask[row, :len(tokens)] = 1.0
        dim, heads = self.dim, self.heads
        head_dim = dim // heads
        x = self.word[ids]
        x += self.position[:length]
        x += self.token_type
        x = self._norm(x.reshape(batch * length, dim), self.embed_norm)
        padded = bool(mask.min() == 0.0)
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        scale = np.float32(1 / math.sqrt(head_dim))
        for qkv, qkv_b, out_w, out_b, norm1, in_w, in_b, ff_w, ff_b, norm2 in self.layers:
            h = x @ qkv
            h += qkv_b
            h = h.reshape(batch, length, 3, heads, head_dim).transpose(2, 0, 3, 1, 4)  # (3, B, H, L, D)
            q, k, v = h[0], h[1], h[2]
            scores = q @ k.transpose(0, 1, 3, 2)
            scores *= scale
            if padded:
                scores += bias
            scores -= scores.max(-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, dim)
            h = context @ out_w
            h += out_b
            h += x
            x = self._norm(h, norm1)
            h = x @ in_w
            h += in_b
            h = gelu(h) @ ff_w
            h += ff_b
            h += x
            x = self._norm(h, norm2)
        hidden = x.reshape(batch, length, dim)
        pooled = (hidden * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return normalize(pooled.astype(np.float32))
