"""Which process builds an unfinished job: its owner, alive while it holds a lock file under ``jobs.owners/``.

A job records ``owner``, this process's token (``<host>-<pid>-<random>``: readable, and unique even
where a restarted container gets the same pid again). The process holds ``jobs.owners/<token>.lock``
locked (``memtools.store.file_lock``) from its first claim until it closes or dies, when the OS
releases the lock. So "is the owner alive?" is "is its lock file still locked?": no pid is
signalled (``os.kill(pid, 0)`` ends the process on Windows), a reused pid is not mistaken for the
owner, and it holds for every process that can lock the folder's files.

A server starting claims, under ``jobs.json.lock``, the unfinished jobs whose owner is gone (or
never recorded, as in older files); two servers starting at once are serialized by that lock, and
the second sees the first's claims alive. Owner files of dead processes are removed when seen.
The ``.lock`` suffix keeps them out of published snapshots (``memtools.replica.snapshot``).
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import uuid
from pathlib import Path
from typing import IO

from memtools.store.file_lock import try_lock, unlock

OWNERS_DIR = "jobs.owners"
SUFFIX = ".lock"
TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,120}")
"""A token read back from ``jobs.json`` is used as a file name only when it looks like one we make."""


def _new_token() -> str:
    host = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname())[:60].strip(".-") or "host"
    return f"{host}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


class Owner:
    """This process's mark on the jobs it builds (one per ``JobBook``)."""

    def __init__(self, memory_path: Path) -> None:
        self.folder = memory_path / OWNERS_DIR
        self.token = _new_token()
        self._handle: IO[str] | None = None

    def hold(self) -> str:
        """Take this process's owner lock (once) and return the token to record. The caller holds
        ``jobs.json.lock``, so a sweep of another process never sees the file before it is locked."""
        if self._handle is None:
            self.folder.mkdir(exist_ok=True)
            handle = open(self.folder / (self.token + SUFFIX), "a+")  # noqa: SIM115 - held until release
            if not try_lock(handle):  # a fresh random name: nobody else can hold it
                handle.close()
                raise RuntimeError(f"could not lock the new owner file {handle.name}")
            self._handle = handle
        return self.token

    def release(self) -> None:
        """Give up the mark (a closing runner): its unfinished jobs may be claimed by the next server to start."""
        if self._handle is None:
            return
        unlock(self._handle)
        self._handle.close()
        self._handle = None
        with contextlib.suppress(OSError):
            (self.folder / (self.token + SUFFIX)).unlink()

    def alive(self, token: str | None) -> bool:
        """Whether the process that recorded ``token`` still holds its owner lock (this one counts while it holds)."""
        if token == self.token:
            return self._handle is not None
        if not token or not TOKEN.fullmatch(token):
            return False
        return _locked_elsewhere(self.folder / (token + SUFFIX))

    def sweep(self) -> None:
        """Remove the owner files of processes that are gone (the caller holds ``jobs.json.lock``)."""
        if not self.folder.is_dir():
            return
        for path in self.folder.glob("*" + SUFFIX):
            if path.name != self.token + SUFFIX:
                _locked_elsewhere(path)


def _locked_elsewhere(path: Path) -> bool:
    """True if another holder has ``path`` locked; a file nobody holds is removed (its owner died)."""
    try:
        handle = open(path)  # noqa: SIM115 - closed below
    except OSError:  # no file: its owner closed (or it was swept)
        return False
    try:
        if not try_lock(handle):
            return True
        unlock(handle)
    finally:
        handle.close()
    with contextlib.suppress(OSError):
        path.unlink()
    return False
