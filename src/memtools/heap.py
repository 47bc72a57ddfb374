"""Giving freed memory back to the operating system after a step that allocated a lot of it.

glibc keeps what a process frees for its next allocations instead of returning it, so a step that
briefly needs half a gigabyte (a bulk import's lance fold: compaction and the full-text, scalar and
vector indexes) leaves the process that much larger for as long as it runs, and the next such step
starts from there. ``malloc_trim(0)`` returns the free pages at once. A bulk import calls it around
each fold, after letting go of the lance handles (``Memory.finish_indexes(release=True)``): in a
50 MB caption import that took the peak from 1,304 to 1,026 MiB, two imports side by side
(docs/scaling.md, sixth round). After every write batch it was not worth it (+6% time for -3% peak: fifth round), so
it is called where a fold ends, never in a loop; and between the steps of a vector-index build
(``store.tables.lance_fold.build_indexes``: the compaction's freed memory back before the build, the
build's before the optimize after it; that fold's peak 1,016-1,040 -> 904-941 MiB on a 166,618-row
table, three pairs).

Elsewhere than glibc (macOS, Windows, musl) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import Callable

_trim: list[Callable[[int], int] | None] = []  # [malloc_trim or None], found once


def give_back() -> None:
    """Return the memory this process has freed to the operating system (glibc; elsewhere nothing)."""
    if not _trim:
        _trim.append(_find())
    trim = _trim[0]
    if trim is not None:
        trim(0)


def _find() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # no glibc (musl has no malloc_trim)
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim
