"""The one seam over OS file locks: an exclusive, non-blocking lock on a file the caller opened.

Built on ``filelock``'s descriptor lock (``lock_descriptor``, filelock >= 3.30): on POSIX it is a
whole-file ``fcntl.flock``, the lock memtools has always taken on ``memtools.lock``, so processes
of older and newer versions still exclude each other; on Windows it is ``LockFileEx`` on the first
byte. memtools itself never imports ``fcntl``, so every module imports on Windows too.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
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


def lock_waiting(handle: IO[str], say: Callable[[], None] | None = None, poll: float = 0.2,
                 timeout: float | None = None) -> bool:
    """Take the exclusive lock on ``handle``'s file, waiting while another holder has it (the same
    command run twice at once waits for the first; interrupt it to stop waiting), at most ``timeout``
    seconds (``TimeoutError`` then). ``say`` is called once, before the wait. Returns whether it waited."""
    if try_lock(handle):
        return False
    if say is not None:
        say()
    deadline = None if timeout is None else time.monotonic() + timeout
    while not try_lock(handle):
        if deadline is not None and time.monotonic() >= deadline:
            raise TimeoutError(f"{handle.name} stayed locked for {timeout:g} s")
        time.sleep(poll)
    return True


@contextlib.contextmanager
def holding(path: Path, say: Callable[[], None] | None = None, poll: float = 0.2,
            timeout: float | None = None) -> Iterator[bool]:
    """Hold the exclusive lock on the file ``path`` (made if missing) for the block, waiting for it as
    ``lock_waiting`` does; yields whether it waited."""
    with open(path, "a+") as handle:
        waited = lock_waiting(handle, say, poll, timeout)
        try:
            yield waited
        finally:
            unlock(handle)
