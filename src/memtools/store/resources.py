"""Running out of memory, disk space or open files is not damage.

The engines report an exhausted resource in many ways: Python's ``MemoryError``, an ``OSError``
with ``ENOMEM``/``ENOSPC``/``EMFILE``, kuzu's "Buffer manager exception: Mmap ... failed" or
"buffer pool is full", sqlite's "out of memory" / "database or disk is full" / "unable to open
database file" (no file handle left), lance's "Cannot allocate memory" or "Too many open files".
``memtools check`` and ``repair`` catch engine failures broadly to call a part damaged; each such
place first asks ``exhausted`` and raises ``OutOfResources`` instead, which names what ran out and
what to do (free memory, raise the ulimit), and never suggests dropping videos.
"""

from __future__ import annotations

import errno

from memtools.errors import OutOfResources

_ERRNOS = {errno.ENOMEM: "memory", errno.ENOSPC: "disk", errno.EDQUOT: "disk", errno.EMFILE: "files",
           errno.ENFILE: "files"}
_MARKERS = {
    "memory": ("Buffer manager exception", "buffer pool is full", "Cannot allocate memory", "out of memory",
               "Out of memory", "std::bad_alloc", "MemoryError", "memory allocation failed"),
    "disk": ("No space left on device", "database or disk is full", "Disk quota exceeded"),
    "files": ("Too many open files",),
}
_WHAT = {"memory": "memory", "disk": "disk space", "files": "open files"}
_DO = {
    "memory": "free memory, or raise the process's limit (`ulimit -v`), and run the command again",
    "disk": "free disk space and run the command again",
    "files": "raise the limit of open files (`ulimit -n`) or close other programs, and run the command again",
}


def _kind(exc: BaseException) -> str | None:
    if isinstance(exc, MemoryError):
        return "memory"
    if isinstance(exc, OutOfResources):
        return exc.resource
    if isinstance(exc, OSError) and exc.errno in _ERRNOS:
        return _ERRNOS[exc.errno]
    text = str(exc)
    return next((kind for kind, markers in _MARKERS.items() if any(m in text for m in markers)), None)


def exhausted(exc: BaseException, doing: str) -> OutOfResources | None:
    """An ``OutOfResources`` for ``exc`` (or what caused it) when a resource ran out; None otherwise."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        kind = _kind(cause)
        if kind is not None:
            if isinstance(cause, OutOfResources):
                return cause
            return OutOfResources(f"memtools ran out of {_WHAT[kind]} while {doing} (the memory is not damaged "
                                  f"by this): {_DO[kind]}", resource=kind)
        cause = cause.__cause__ or cause.__context__
    return None


def raise_if_exhausted(exc: BaseException, doing: str) -> None:
    """Raise ``OutOfResources`` (chained to ``exc``) when ``exc`` says a resource ran out."""
    error = exhausted(exc, doing)
    if error is not None:
        raise error from exc
