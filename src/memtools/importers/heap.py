"""What a long import does to stay within a bounded memory (issue 34, item 5).

A bulk import's peak is lance's, at a fold (compaction, then the vector index build at the last
one), on top of what the process already holds. Two things cut that base:

* ``give_back_free_memory()``: glibc keeps the memory freed by each write batch (kuzu's pages,
  arrow buffers, the batch's Python objects) for reuse, 150-180 MiB of it by a fold; lance's
  Rust allocations cannot reuse much of it, so a fold adds its own on top. ``malloc_trim``
  returns it to the system after every batch (a few ms).
* ``bound_read_ahead()``: lance queues up to 2 GiB of reads ahead of a scan
  (``LANCE_DEFAULT_IO_BUFFER_SIZE``), and on a local disk a compaction's scan fills that faster
  than it writes; 64 MiB keeps a local disk busy. Object storage keeps lance's default (its
  requests are slow, and the queue is what hides them).
"""

from __future__ import annotations

import ctypes
import os
import sys

READ_AHEAD_ENV = "LANCE_DEFAULT_IO_BUFFER_SIZE"
READ_AHEAD_BYTES = 64 << 20


def give_back_free_memory() -> None:
    """Return the free memory glibc holds to the system (nothing elsewhere, or without glibc)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        pass


def bound_read_ahead(memory: object) -> None:
    """Cap lance's read-ahead for the rest of this process when ``memory`` is a local folder and the
    user set no cap. Lance reads the setting once, at its first scan: call this before the memory opens."""
    if isinstance(memory, os.PathLike) or (isinstance(memory, str) and "://" not in memory):
        os.environ.setdefault(READ_AHEAD_ENV, str(READ_AHEAD_BYTES))
