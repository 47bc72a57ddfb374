"""How this machine embeds a lone query: the int16 layers on one BLAS thread, or float32 on several.

One query is ~12 tokens, so its 24 products are a few rows times a 0.6-2.4 MB matrix each
(``memtools.embed.bert_query``). Measured with ``benchmarks/query_limit.py --compare`` (median ms
of one query, the same run alternating the ways):

| CPU | int16, 1 thread | float32, 1 thread | float32, all threads |
|---|---|---|---|
| AMD EPYC, 2 vCPUs, 32 MB L3 | 12.4 | 15.3 | 13.1 (2 threads) |
| Intel Xeon (Sapphire Rapids class), 16 vCPUs, 300 MB L3 | 11.0 | 10.2 | 3.4 (16 threads) |
| the same Xeon held to 2 of its cores (``taskset``), idle | 15.4 | 14.0 | 10.9 (2 threads) |

On a small machine one thread wins, or loses little when it is idle (two threads were 1.4x faster
on two idle Xeon cores), and BLAS threads that spin for work after a product cost a busy one far
more (``memtools.blas``: 300-600 ms for a 15 ms query). On a machine with many cores the float32
products split over threads are three times faster. So:

* fewer than ``MANY_CORES`` usable CPUs: int16 on one thread, always;
* ``MANY_CORES`` or more: when the query weights are made (a process's second query, in the
  background), a calibration alternates ``ROUNDS`` passes of a probe query on each way and
  keeps float32 on ``min(MAX_THREADS, cpus // 2)`` BLAS threads (half the CPUs stay free for the
  rest of a search and other work) only when its median is at least ``WIN`` times faster.

``MEMTOOLS_QUERY_THREADS=N`` sets it instead: 0 for int16 on one thread, N >= 1 for float32 on N
threads. Either way the vector is the encoder's to a cosine of 0.9999999 (float32 is the encoder
itself), so the answers do not depend on the choice.
"""

from __future__ import annotations

import logging
import os
import statistics
import time
from collections.abc import Callable, Sequence

from memtools.blas import blas_threads
from memtools.errors import ConfigError

log = logging.getLogger(__name__)

MANY_CORES = 8
MAX_THREADS = 8
WIN = 1.5
ROUNDS = 7
ENV = "MEMTOOLS_QUERY_THREADS"
PROBE = [101, 1037, 2158, 2003, 2652, 1996, 2858, 2006, 1037, 2754, 1999, 102]
"""A 12-token query ("a man is playing the guitar on a stage in ..." in MiniLM's vocabulary): a typical length."""


def threads_for(cpus: int) -> int:
    """The BLAS threads float32 would get on ``cpus`` usable CPUs (0: never try it)."""
    return 0 if cpus < MANY_CORES else min(MAX_THREADS, cpus // 2)


def choose(int16_ms: Sequence[float], float32_ms: Sequence[float], threads: int) -> int:
    """``threads`` when float32 on them was at least ``WIN`` times faster at the median, else 0 (int16)."""
    if threads < 1 or not int16_ms or not float32_ms:
        return 0
    return threads if statistics.median(float32_ms) * WIN <= statistics.median(int16_ms) else 0


def from_environment() -> int | None:
    """``MEMTOOLS_QUERY_THREADS`` as a number of threads (0: int16), or None when unset."""
    value = os.environ.get(ENV, "").strip()
    if not value:
        return None
    if not value.isdigit():
        raise ConfigError(f"{ENV}={value!r}: give 0 (int16 layers on one thread) or a number of BLAS threads for "
                          "the float32 layers")
    return int(value)


def calibrate(int16: Callable[[list[int]], object], float32: Callable[[list[int]], object], cpus: int,
              vocab: int) -> int:
    """The float32 threads to embed lone queries with on this machine (0: int16 on one thread); ``vocab``: the
    model's vocabulary size (the probe's ids are kept inside it)."""
    given = from_environment()
    if given is not None:
        return given
    threads = threads_for(cpus)
    if not threads:
        return 0
    probe = [i % vocab for i in PROBE]
    int16_ms: list[float] = []
    float32_ms: list[float] = []
    for _ in range(ROUNDS):
        for run, limit, times in ((int16, 1, int16_ms), (float32, threads, float32_ms)):
            with blas_threads(limit):
                start = time.perf_counter()
                run(probe)
                times.append((time.perf_counter() - start) * 1e3)
    chosen = choose(int16_ms[1:], float32_ms[1:], threads)  # the first pass of each warms its caches
    log.info("lone queries: %s (int16 on 1 thread %.1f ms, float32 on %d threads %.1f ms, median)",
             f"float32 on {chosen} BLAS threads" if chosen else "int16 on 1 BLAS thread",
             statistics.median(int16_ms[1:]), threads, statistics.median(float32_ms[1:]))
    return chosen
