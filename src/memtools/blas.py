"""The BLAS thread pool (threadpoolctl): one query's matrix products are too small to share.

Embedding one query is a chain of products of a few megabytes; split over BLAS threads it is
slower, and the idle threads spin for work afterwards (on a busy machine a 15 ms query took
300-600 ms). ``blas_threads(1)`` runs a block on one BLAS thread.

A search scores held rows against the query vector: a matrix-vector product, which OpenBLAS
splits over its threads from ~10k elements on. On a loaded 2-core machine the calling thread
then waits for a worker that is not running: 4,378 rows took 42 us at the median and 12 ms at
the 90th percentile. ``row_dots`` computes the same cosines on the calling thread alone, with
no thread pool state to set and restore (so searches on several threads cannot disturb it).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

import numpy as np


def usable_cpus() -> int:
    """The CPUs this process may run on (``taskset``, a container's cpuset), not the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


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


_controller: list = []  # [(len(sys.modules) when made, ThreadpoolController or None)]


def _blas_controller():
    """threadpoolctl's view of the loaded BLAS libraries: ``threadpool_limits`` scans every loaded
    library again on each call (~1 ms, a sixth of a query's embedding), so the view is kept, and made
    again only when modules were imported since (how another BLAS arrives: scipy brings its own
    OpenBLAS beside numpy's, and a view made before it would leave its threads unlimited)."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # optional: without it queries are only slower on busy machines
        return None
    modules = len(sys.modules)
    kept = _controller[0] if _controller else None
    if kept is None or kept[0] != modules:
        kept = (modules, ThreadpoolController())
        _controller[:] = [kept]
    return kept[1]


def row_dots(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``matrix @ vector`` (each row's dot product with ``vector``) on the calling thread only:
    ``np.vecdot`` runs one short dot per row and never enters the BLAS thread pool (numpy < 2:
    ``einsum``, its own loop)."""
    vecdot = getattr(np, "vecdot", None)
    if vecdot is None:  # numpy < 2.0
        return np.einsum("ij,j->i", matrix, vector)
    return vecdot(matrix, vector)
