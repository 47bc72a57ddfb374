"""The bytes of ``jobs.json``: read with a stamp, written whole (temp + rename), locked, set aside when damaged.

``JobBook`` (``memtools.jobs.book``) decides what the jobs are; this module only moves bytes, so
the rules that keep several processes from losing each other's jobs are in one place:

- every change is a read-modify-write under ``book_lock`` (``jobs.json.lock``, an exclusive OS
  lock through ``memtools.store.file_lock``), so no process writes over a job it has not read;
- a write is a temp file renamed over ``jobs.json``: a reader without the lock (``read_raw``)
  sees the old file or the new one, never half of one;
- ``Stamp`` (inode, size, mtime) tells a reader cheaply whether another process wrote since.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from memtools.errors import MemoryBusy
from memtools.store.file_lock import holding

log = logging.getLogger(__name__)

LOCK_SUFFIX = ".lock"
LOCK_TIMEOUT = 30.0
"""Seconds to wait for ``jobs.json.lock``; a holder keeps it for one small read and write, never for a build."""


class Stamp(NamedTuple):
    """What changes whenever ``jobs.json`` is rewritten (each write is a new file: a new inode)."""

    inode: int
    size: int
    mtime_ns: int


def stamp_of(path: Path) -> Stamp | None:
    """The file's stamp now, None when there is no file."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return Stamp(st.st_ino, st.st_size, st.st_mtime_ns)


def read_raw(path: Path) -> tuple[bytes, Stamp] | None:
    """The file's bytes and the stamp of exactly those bytes (taken from the open file), None when absent."""
    try:
        with open(path, "rb") as handle:
            st = os.fstat(handle.fileno())
            return handle.read(), Stamp(st.st_ino, st.st_size, st.st_mtime_ns)
    except FileNotFoundError:
        return None


@contextlib.contextmanager
def book_lock(path: Path, timeout: float | None = None) -> Iterator[None]:
    """Hold ``<path>.lock`` exclusively for one read-modify-write of ``path``.

    A lock file of its own, not the memory's writers' lock (``memtools.lock``): a build or an import
    holds that one for minutes, and a job's progress or another server's ``add_video`` must not wait
    behind it; and the runner's own build holds it while its progress is saved, so taking it again on
    a second handle (an OS lock is per open file) would wait on itself. ``jobs.json.lock`` is held only
    for one small read and write."""
    wait = LOCK_TIMEOUT if timeout is None else timeout
    try:
        with holding(path.with_name(path.name + LOCK_SUFFIX), poll=0.01, timeout=wait):
            yield
    except TimeoutError:
        raise MemoryBusy(f"another process held {path.name}{LOCK_SUFFIX} for {wait:g} s while updating the jobs "
                         f"of {path.parent}; try again, and if it persists look for a hung memtools process") from None


def write_atomic(path: Path, data: bytes) -> Stamp:
    """Replace ``path`` with ``data`` (temp file + rename, so a kill leaves the old or the new file);
    returns the new file's stamp. The caller holds ``book_lock``, so nobody replaces it meanwhile."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
    os.replace(tmp, path)
    stamp = stamp_of(path)
    assert stamp is not None  # just written, under the lock
    return stamp


def set_aside(path: Path, why: str) -> Path | None:
    """Rename a damaged ``path`` to ``<name>.damaged-<UTC time>`` (kept for a person to look at) and warn;
    the caller holds ``book_lock`` and starts from an empty book. None if it could not be moved."""
    when = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    aside = path.with_name(f"{path.name}.damaged-{when}")
    count = 1
    while aside.exists():
        count += 1
        aside = path.with_name(f"{path.name}.damaged-{when}-{count}")
    try:
        os.replace(path, aside)
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("%s is damaged (%s) and could not be set aside (%s); its jobs are ignored until it is "
                    "removed", path, why, exc)
        return None
    log.warning("%s is damaged (%s); it is kept as %s and the jobs start from an empty list (the videos in the "
                "memory are not affected)", path, why, aside.name)
    return aside
