"""The BLAS thread pool (threadpoolctl): one query's matrix products are too small to share.

Embedding one query is a chain of products of a few megabytes; split over BLAS threads it is
slower, and the idle threads spin for work afterwards (on a busy machine a 15 ms query took
300-600 ms). ``blas_threads(1)`` runs a block on one BLAS thread.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def blas_threads(limit: int | None) -> Iterator[None]:
    """Run the block on ``limit`` BLAS threads (None: as configured). OpenBLAS has one thread pool
    per process, and threadpoolctl lets one Python thread at a time set it: keep blocks short
    (one query's embedding), since a block on another thread can see, or leave, this one's limit."""
    controller = _blas_controller() if limit is not None else None
    if controller is None:
        yield
        return
    with controller.limit(limits=limit, user_api="blas"):
        yield


_controller: list = []  # [ThreadpoolController or None], made once


def _blas_controller():
    """threadpoolctl's view of the loaded BLAS libraries, found once: ``threadpool_limits`` scans
    every loaded library again on each call (~1 ms, a sixth of a query's embedding)."""
    if not _controller:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # optional: without it queries are only slower on busy machines
            _controller.append(None)
        else:
            _controller.append(ThreadpoolController())
    return _controller[0]
