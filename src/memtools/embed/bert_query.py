"""One search query through the numpy BERT (``bert_numpy``): the lone-query path.

A query is one short text (~8-12 tokens), so each of the 24 matrix products of MiniLM's six
layers multiplies a handful of rows by a 0.6-2.4 MB weight matrix, and its cost is moving the
weights, not the arithmetic: OpenBLAS copies (packs) the whole matrix for a few rows of work.
Measured on an AMD EPYC (2 vCPUs, OpenBLAS's Haswell kernels): 230 us for one 384 x 1536 product
whose weights come from RAM, 116 us when they are already in the CPU's cache. The six layers'
float32 matrices (42 MB) do not fit a 32 MB L3, so every query read them from RAM.

This path keeps its own copy of those matrices as int16 with one float32 scale per output column
(``QueryWeights``: 21 MB, which a 32 MB L3 can keep between queries): ``x @ W`` is computed as
``(x @ codes) * scale`` after widening ``codes`` to float32 in a buffer the calls reuse. int16
keeps 15 bits of each column's range: the vectors equal the float32 encoder's to a cosine of
0.9999999 (int8's 7 bits gave 0.9996 at best, too coarse to keep the same top-5 on near-tied
captions). The rest is the same arithmetic as ``NumpyBert._forward`` for a batch of one, without
the padding mask: one sequence needs none.

Documents keep the float32 matrices (``NumpyBert.encode``): their batches have hundreds of rows,
enough work per weight for the float32 products to run at full speed.
"""

from __future__ import annotations

import math
import threading
from typing import Protocol

import numpy as np

from memtools.embed.base import normalize
from memtools.embed.bert_ops import gelu


class BertWeights(Protocol):
    """What the query path reads of a ``NumpyBert`` (``memtools.embed.bert_numpy``), which builds
    ``QueryWeights`` from itself: a protocol, so this module does not import that one back."""

    layers: list[tuple]
    dim: int
    heads: int
    word: np.ndarray
    position: np.ndarray
    token_type: np.ndarray
    embed_norm: tuple[np.ndarray, np.ndarray]

    def _norm(self, x: np.ndarray, params: tuple[np.ndarray, np.ndarray]) -> np.ndarray: ...

_INT16_MAX = 32767


class Int16Matrix:
    """A float32 weight matrix ``(in, out)`` as int16 codes and one scale per output column."""

    def __init__(self, weight: np.ndarray) -> None:
        peak = np.maximum(weight.max(axis=0), -weight.min(axis=0))
        self.scale = np.where(peak > 0, peak / _INT16_MAX, 1.0).astype(np.float32)
        scaled = weight * (1 / self.scale)
        np.rint(scaled, out=scaled)
        self.codes = scaled.astype(np.int16)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.codes.shape

    def widen_into(self, buffer: np.ndarray) -> np.ndarray:
        """The codes as float32 in (a view of) ``buffer``."""
        out = buffer[:self.codes.size].reshape(self.codes.shape)
        np.copyto(out, self.codes)
        return out


class QueryWeights:
    """The encoder layers of a ``NumpyBert`` for one sequence at a time (thread-safe: each thread
    widens the codes in its own buffer)."""

    def __init__(self, model: BertWeights, stop: threading.Event | None = None) -> None:
        """``stop``: once set, the making of the codes ends at the next layer (InterruptedError)."""
        self.model = model
        self.layers: list[tuple] = []
        for qkv, qkv_b, out_w, out_b, norm1, in_w, in_b, ff_w, ff_b, norm2 in model.layers:
            if stop is not None and stop.is_set():
                raise InterruptedError("stopped making the query weights")
            self.layers.append((Int16Matrix(qkv), qkv_b, Int16Matrix(out_w), out_b, norm1,
                                Int16Matrix(in_w), in_b, Int16Matrix(ff_w), ff_b, norm2))
        self.largest = max(m.codes.size for layer in self.layers for m in layer if isinstance(m, Int16Matrix))
        self._local = threading.local()

    def _buffer(self) -> np.ndarray:
        buffer = getattr(self._local, "buffer", None)
        if buffer is None:  # one per thread, reused: a fresh 2.4 MB array per product costs page faults
            buffer = self._local.buffer = np.empty(self.largest, dtype=np.float32)
        return buffer

    def _product(self, x: np.ndarray, matrix: Int16Matrix, bias: np.ndarray, buffer: np.ndarray) -> np.ndarray:
        h = x @ matrix.widen_into(buffer)
        h *= matrix.scale
        h += bias
        return h

    def encode(self, ids: list[int]) -> np.ndarray:
        """The unit mean-pooled vector of one tokenised text."""
        model, buffer = self.model, self._buffer()
        length, dim, heads = len(ids), model.dim, model.heads
        head_dim = dim // heads
        x = model.word[ids]
        x += model.position[:length]
        x += model.token_type
        x = model._norm(x, model.embed_norm)
        scale = np.float32(1 / math.sqrt(head_dim))
        for qkv, qkv_b, out_w, out_b, norm1, in_w, in_b, ff_w, ff_b, norm2 in self.layers:
            h = self._product(x, qkv, qkv_b, buffer)
            q, k, v = h.reshape(length, 3, heads, head_dim).transpose(1, 2, 0, 3)  # each (heads, L, head_dim)
            scores = q @ k.transpose(0, 2, 1)
            scores *= scale
            scores -= scores.max(-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(1, 0, 2).reshape(length, dim)
            h = self._product(context, out_w, out_b, buffer)
            h += x
            x = model._norm(h, norm1)
            h = self._product(x, in_w, in_b, buffer)
            h = self._product(gelu(h), ff_w, ff_b, buffer)
            h += x
            x = model._norm(h, norm2)
        return normalize(x.mean(0))

