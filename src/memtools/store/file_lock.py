"""The one seam over OS file locks: an exclusive, non-blocking lock on a file the caller opened.

Built on ``filelock``'s descriptor lock (``lock_descriptor``, filelock >= 3.30): on POSIX it is a
whole-file ``fcntl.flock``, the lock memtools has always taken on ``memtools.lock``, so processes
of older and newer versions still exclude each other; on Windows it is ``LockFileEx`` on the first
byte. memtools itself never imports ``fcntl``, so every module imports on Windows too.
"""

from __future__ import annotations

import contextlib
from typing import IO

from filelock import lock_descriptor, unlock_descriptor


def try_lock(handle: IO[str]) -> bool:
    """Take the exclusive lock on ``handle``'s file without waiting: True if taken, False if another holder has it."""
    return lock_descriptor(handle.fileno(), blocking=False)


def unlock(handle: IO[str]) -> None:
    """Release the lock ``try_lock`` took (the caller still closes ``handle``). A handle that holds no
    lock is left as it is (Windows refuses that unlock; closing the handle releases the lock anyway)."""
    with contextlib.suppress(OSError):
        unlock_descriptor(handle.fileno())
