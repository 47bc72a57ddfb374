"""The writers' lock of a memory and what a write holds while it runs: ``memtools.lock`` (one
writing process at a time, this process's writes serialized, re-entered by the thread that holds
it), the intent file readers see, the graph opened read-write after a killed write was finished
or undone (``memtools.store.writes.recovery``), and that recovery run on its own when a memory
opens (``recover_if_left``) or from ``memtools recover``. ``MemoryWrites`` inherits it."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, cast

from memtools.errors import MemoryBusy, StoreError
from memtools.store.catalog.manifest import migrate_legacy, read_manifest
from memtools.store.file_lock import try_lock, unlock
from memtools.store.graph.cypher import writer_pool_mb
from memtools.store.integrity import checker as integrity
from memtools.store.integrity.checker import INTENT_FILE, LOCK_FILE
from memtools.store.writes import engine_log, frame_swap, recovery, write_checks

if TYPE_CHECKING:
    from memtools.store.base import GraphEngine, GraphStore
    from memtools.store.catalog.manifest import Manifest
    from memtools.store.catalog.parts import MemoryParts

log = logging.getLogger("memtools.store.memory")

WRITE_BUFFER_MB = 512   # kuzu buffer pool of a writer: a batch must fit before COMMIT


class WriterLock:
    """Exclusive write access for ``MemoryWrites`` (which provides the attributes below)."""

    if TYPE_CHECKING:  # provided by MemoryWrites and Memory
        path: Path
        manifest: Manifest
        write_timeout: float
        _lock: threading.RLock
        _lock_depth: int
        _manifest_stamp: int
        _recovered: str | None

        @property
        def graph_engine(self) -> GraphEngine: ...

        @property
        def graph_file(self) -> Path: ...

        def _stamp(self) -> int: ...

        def _release_graph(self) -> None: ...

        def _refresh_tables(self) -> None: ...

    def recover_if_left(self) -> str | None:
        """Finish or undo a write a killed process left here (``memtools.store.writes.recovery``), if any, when
        this process may write the folder; returns what was done. A failure is logged, not raised: the
        reads that need the recovery say so, and ``memtools recover`` reports the cause."""
        if not os.access(self.path, os.W_OK):
            return None
        left = integrity.pending_recovery(self.path, self.graph_file.name)
        if not left:
            self._clear_stale_temps()
            return None
        try:
            return self.finish_recovery() or f"the graph engine finished its last commit ({', '.join(left)})"
        except (MemoryBusy, StoreError) as exc:
            log.warning("could not finish the write a killed process left in %s: %s", self.path, exc)
            return None

    def _clear_stale_temps(self) -> None:
        """A manifest cut short by a kill (``.memtools-*.json``; the old manifest stands) whose writer
        wrote nothing after it: removed when no writer holds the lock (a live writer's is its own)."""
        if not any(self.path.glob(integrity.TEMP_GLOB)):
            return
        with open(self.path / LOCK_FILE, "a+") as handle:
            if not try_lock(handle):
                return
            try:
                for temp in self.path.glob(integrity.TEMP_GLOB):
                    temp.unlink(missing_ok=True)
            finally:
                unlock(handle)

    def finish_recovery(self) -> str | None:
        """As a writer: finish or undo a write a killed process left (``memtools recover``); returns what
        was done, None when nothing was left."""
        with self._writing(guard=False):
            done = self._recovered
        if done:
            log.info("%s: %s", self.path, done)
        return done

    def writes_paused(self) -> contextlib.AbstractContextManager[None]:
        """Hold the writers' lock: no write of any process starts or is mid-way meanwhile (``memtools publish``)."""
        return self._process_lock()

    @contextlib.contextmanager
    def _process_lock(self) -> Iterator[None]:
        """``memtools.lock``: one writing process at a time (and this process's writes serialized). The thread
        that holds it may enter again (a change in ``memtools.changes`` holds it around the write it makes)."""
        with self._lock:
            if getattr(self, "_lock_depth", 0):
                self._lock_depth += 1
                try:
                    yield
                finally:
                    self._lock_depth -= 1
                return
            handle = open(self.path / LOCK_FILE, "a+")  # noqa: SIM115 - held for the block
            try:
                deadline = time.monotonic() + self.write_timeout
                while not try_lock(handle):
                    if time.monotonic() >= deadline:
                        raise MemoryBusy(f"another process is writing to {self.path}; try again later") from None
                    time.sleep(0.1)
                self._refresh_tables()  # another process may have written since this one's handles were opened
                if (migrated := migrate_legacy(self.path)) is not None:  # made before videos.sqlite: the first
                    self.manifest, self._manifest_stamp = migrated, self._stamp()  # writer moves the entries
                self._lock_depth = 1
                yield
            finally:
                self._lock_depth = 0
                unlock(handle)
                handle.close()

    @contextlib.contextmanager
    def _tables_writing(self) -> Iterator[None]:
        """Exclusive write access for a step that changes only the lance tables' files and indexes and
        the manifest's table versions (a fold, ``finish_indexes``): the process lock and the guard, the
        graph left closed (opening a large one read-write holds ~70 MiB: docs/scaling.md, tenth round).
        When a killed writer left anything behind, the whole of ``_writing`` runs instead: its recovery
        restores lance versions that a fold's prune would otherwise remove."""
        with self._process_lock():
            if self._left_by_a_killed_writer():
                with self._writing():
                    yield
                return
            self.manifest = read_manifest(self.path)
            integrity.guard(cast("MemoryParts", self), writing=True)
            yield

    def _left_by_a_killed_writer(self) -> bool:
        """With the lock held: whether anything a killed writer leaves is here (its journal or the
        engine's log, a stale intent file, a journal or manifest cut short, keyframe folders mid-swap),
        which only ``_writing``'s recovery clears."""
        path = self.path
        return bool(integrity.writer_leftovers(path, self.graph_file.name) or (path / INTENT_FILE).exists()
                    or (path / (recovery.JOURNAL + ".tmp")).exists() or any(path.glob(integrity.TEMP_GLOB))
                    or (path / frame_swap.SWAP).exists())

    @contextlib.contextmanager
    def _writing(self, *, guard: bool = True) -> Iterator[GraphStore]:
        """Exclusive write access: process lock, intent file, graph opened read-write.
        Refuses (``MemoryDamaged``) on a damaged memory unless ``guard=False`` (repair)."""
        with self._process_lock():
            if guard:
                self.manifest = read_manifest(self.path)
                integrity.guard(cast("MemoryParts", self), writing=True)
            intent = self.path / INTENT_FILE
            intent.touch()
            try:
                self._release_graph()
                engine_log.restore_snapshot(self.path, self.graph_file)
                engine_log.discard_log(self.path, self.graph_file, self.graph_engine.name)
                deadline = time.monotonic() + self.write_timeout
                graph = None
                while graph is None:
                    try:
                        graph = self.graph_engine.open(self.graph_file, read_only=False,
                                                       buffer_pool_mb=writer_pool_mb(self.graph_file, WRITE_BUFFER_MB))
                    except MemoryBusy:
                        if time.monotonic() >= deadline:
                            raise MemoryBusy(
                                f"readers kept {self.path} open for {self.write_timeout:.0f} s; try again"
                            ) from None
                        time.sleep(0.05)
                try:
                    self._recovered = recovery.recover(cast("MemoryParts", self), graph)
                    if self._recovered is not None:
                        self.manifest = read_manifest(self.path)
                    if guard:
                        write_checks.check_before_write(cast("MemoryParts", self), graph)
                    yield graph
                finally:
                    graph.close()
            finally:
                intent.unlink(missing_ok=True)
