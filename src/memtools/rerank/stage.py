"""Running a reranker inside a search: bounded in time, and never the reason a search fails.

``rerank_order`` calls the reranker on a worker thread and waits at most ``timeout`` seconds.
A reranker that times out, raises, or returns unusable scores (wrong count, NaN, non-numbers)
leaves the first-stage order in place and says why in ``Reranked.warning``; the search result
shows that warning. A reranker still running after its timeout finishes on its thread, and
its answer is dropped.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from memtools.errors import MemtoolsError
from memtools.rerank.base import Reranker, checked_scores

log = logging.getLogger("memtools.rerank")
WORKERS = 4  # concurrent reranker calls; a call past its timeout keeps its worker until it returns

_pool: concurrent.futures.ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


@dataclass(frozen=True)
class Reranked:
    """The candidates' new order (positions into the list given, best first), the reranker's
    scores in that order, and why the first-stage order was kept (empty when reranked)."""

    order: list[int]
    scores: list[float] | None
    warning: str = ""

    @property
    def ok(self) -> bool:
        return not self.warning


def _executor() -> concurrent.futures.ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(WORKERS, thread_name_prefix="memtools-rerank")
        return _pool


def rerank_order(reranker: Reranker, query: str, documents: Sequence[str], timeout: float) -> Reranked:
    """The reranked order of ``documents``, or their own order and a warning."""
    kept = list(range(len(documents)))
    if not documents:
        return Reranked(kept, None)
    name = _name(reranker)
    future = _executor().submit(reranker.rerank, query, list(documents))
    try:
        raw = future.result(timeout=timeout)
        scores = checked_scores(raw, len(documents), f"reranker {name}")
    except concurrent.futures.TimeoutError:
        future.cancel()
        log.warning("reranker %s gave no answer within %g s; first-stage order kept", name, timeout)
        return Reranked(kept, None, f"reranker {name} gave no answer within {timeout:g} s")
    except MemtoolsError as exc:  # ours: RerankError, ConfigError, ... say what was wrong
        log.warning("reranker %s failed: %s", name, exc)
        said = _first_line(str(exc))
        return Reranked(kept, None, said if f"reranker {name}" in said else f"reranker {name} failed: {said}")
    except Exception as exc:  # noqa: BLE001 - any backend failure falls back; its text stays in the log
        log.warning("reranker %s failed", name, exc_info=True)
        return Reranked(kept, None, f"reranker {name} failed ({type(exc).__name__})")
    order = sorted(kept, key=lambda i: -scores[i])  # stable: equal scores keep the first-stage order
    return Reranked(order, [scores[i] for i in order])


def _name(reranker: Reranker) -> str:
    try:
        return str(reranker.name)
    except Exception:  # noqa: BLE001 - a broken name must not break the search either
        return type(reranker).__name__


def _first_line(text: str, limit: int = 200) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "no reason given"
    return line if len(line) <= limit else line[: limit - 1] + "…"


__all__ = ["Reranked", "rerank_order"]
