"""``ReplicaTools``: the MCP server's tools over a published memory, moving to each new version.

The server asks its tools provider for the ``MemoryTools`` of every call (``memtools.mcp.server.LazyTools``);
this provider answers with the version it serves now. A call holds its version (``hold()``) until it
ends, so a switch never pulls a memory from under a call in flight: new calls go to the new version,
and the old one is closed and its cache folder removed once its last call has ended.

A poller thread reads ``LATEST.json`` every ``poll_seconds``; a newer version is downloaded whole
(sizes and hashes checked), opened and warmed up before the switch, which is one assignment under a
lock. A failed download or open is logged as a warning and the current version stays served.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from memtools.errors import MemtoolsError, StoreError
from memtools.mcp.server import LazyTools
from memtools.replica.bucket import Bucket
from memtools.replica.fetch import ServerCache, default_cache_dir, download_version, latest_of
from memtools.replica.snapshot import Snapshot
from memtools.tools import MemoryTools

log = logging.getLogger(__name__)

DEFAULT_POLL_SECONDS = 30.0
MAX_BACKOFF_POLLS = 10
"""A version that failed to download is tried again after at most this many polls."""


@dataclass
class Served:
    """One downloaded version: its tools, and how many calls use it now."""

    number: int
    snapshot: Snapshot
    folder: Path
    tools: MemoryTools
    users: int = 0
    retired: bool = False


class ReplicaTools(LazyTools):
    """Serves ``s3://bucket/prefix`` read-only from a local cache; ``start()`` before the first call."""

    read_only = True
    """A replica never writes: ``build_server(..., allow_writes=True)`` refuses it."""

    def __init__(self, uri: str, *, cache_dir: Path | None = None, poll_seconds: float = DEFAULT_POLL_SECONDS,
                 environ: Mapping[str, str] | None = None) -> None:
        super().__init__(Path())
        self.uri = uri
        self.poll_seconds = poll_seconds
        self.bucket = Bucket(uri, environ)
        self._cache_root = cache_dir or default_cache_dir()
        self._cache: ServerCache | None = None
        self._served: Served | None = None
        self._switch_lock = threading.Lock()
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None

    @property
    def path(self) -> Path:
        return self._served.folder if self._served is not None else Path(self.uri)

    @property
    def version(self) -> int | None:
        """The version served now (None before ``start``)."""
        return self._served.number if self._served is not None else None

    def start(self) -> None:
        """Download, check and open the latest version; then poll for newer ones. Raises what stops serving
        (no bucket, nothing published, a version that is not whole) before any client connects."""
        self.bucket.check_bucket()
        latest = latest_of(self.bucket)
        self._cache = ServerCache(self._cache_root, self.bucket)
        try:
            self._switch(self._load(latest.version))
        except BaseException:
            self._cache.close()
            raise
        log.info("serving version %d of %s from %s", latest.version, self.uri, self.path)
        self._poller = threading.Thread(target=self._poll, name="memtools-replica-poll", daemon=True)
        self._poller.start()

    def close(self) -> None:
        """Stop polling; close the served version and remove this server's cache folder."""
        self._stop.set()
        if self._poller is not None:
            self._poller.join(timeout=5.0)  # a download under way is abandoned (its folder goes below)
        with self._switch_lock:
            served, self._served = self._served, None
        if served is not None:
            served.tools.memory.close()
        if self._cache is not None:
            self._cache.close()

    # --- what the server calls --------------------------------------------------------

    def __call__(self) -> MemoryTools:
        with self._switch_lock:
            if self._served is None:
                raise StoreError(f"the replica of {self.uri} is not open; restart the server")
            return self._served.tools

    @contextlib.contextmanager
    def hold(self) -> Iterator[MemoryTools]:
        """The current version's tools for one call; the version stays open until the call ends."""
        with self._switch_lock:
            served = self._served
            if served is None:
                raise StoreError(f"the replica of {self.uri} is not open; restart the server")
            served.users += 1
        try:
            yield served.tools
        finally:
            with self._switch_lock:
                served.users -= 1
                done = served.retired and served.users == 0
            if done:
                _dispose(served)

    # --- moving to a new version -------------------------------------------------------

    def check_now(self) -> bool:
        """Read ``LATEST.json`` once and move to its version if it is another; whether it moved."""
        return self._move_to(latest_of(self.bucket).version)

    def _move_to(self, version: int) -> bool:
        if self._served is not None and version == self._served.number:
            return False
        started = time.perf_counter()
        self._switch(self._load(version))
        log.info("moved to version %d of %s in %.1f s", version, self.uri, time.perf_counter() - started)
        return True

    def _poll(self) -> None:
        """Every ``poll_seconds``: read LATEST and move to its version. A version that failed is tried again
        after 1, 2, 4, ... polls (at most ``MAX_BACKOFF_POLLS``), so a damaged one is not downloaded in a loop;
        a newer version is tried at once."""
        failed, wait, retry_at = -1, 0, 0.0
        while not self._stop.wait(self.poll_seconds):
            version = -1
            try:
                version = latest_of(self.bucket).version
                if version == failed and time.monotonic() < retry_at:
                    continue
                self._move_to(version)
                failed, wait = -1, 0
            except Exception as exc:  # noqa: BLE001 - the poller must outlive anything one attempt meets
                wait = min(max(1, wait * 2), MAX_BACKOFF_POLLS) if version == failed else 1
                failed, retry_at = version, time.monotonic() + wait * self.poll_seconds
                log.warning("could not move to the newest version of %s (%s); still serving version %s",
                            self.uri, exc, self.version, exc_info=not isinstance(exc, MemtoolsError))

    def _load(self, version: int) -> Served:
        from memtools.mcp.warmup import warm_up
        from memtools.store import Memory

        assert self._cache is not None
        current = self._served
        have = (current.folder, current.snapshot) if current is not None else None
        folder, snapshot, fetched = download_version(self.bucket, version, self._cache.folder, have)
        log.info("version %d of %s: %.1f MB downloaded, %.1f MB unchanged", version, self.uri, fetched / 1e6,
                 (snapshot.size - fetched) / 1e6)
        try:
            memory = Memory.open(folder)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        warming = warm_up(memory)  # the first call on the new version is not the slow one
        if warming is not None:
            warming.join()
        return Served(version, snapshot, folder, MemoryTools(memory))

    def _switch(self, new: Served) -> None:
        if self._stop.is_set():  # closed while this version was on its way
            _dispose(new)
            return
        with self._switch_lock:
            old, self._served = self._served, new
            if old is None:
                return
            old.retired = True
            done = old.users == 0
        if done:
            _dispose(old)


def _dispose(served: Served) -> None:
    served.tools.memory.close()
    shutil.rmtree(served.folder, ignore_errors=True)
