"""``Memory``: one memory folder — a library of videos in a graph engine + lance, and the rules for sharing it.

``Memory`` receives its engines through its constructor (``memtools.store.engines`` picks them
from the manifest: the graph engine is kuzu 0.11.3 by default, or ladybug); tools and front
ends see only ``Memory`` and the contract types of ``memtools.store.base``.

Sharing follows the graph engine. With kuzu 0.11.3 ("one read-write process or many
read-only ones"):

* Readers (tool calls, MCP servers) open the graph read-only, keep the handle only while
  they are busy, and let it go after ``idle_release`` seconds or as soon as a writer
  announces itself with the ``.write-intent`` file.
* A writer takes ``memtools.lock`` (one writer process at a time), drops the intent file,
  opens the graph read-write only for the write itself, and commits one video (or a batch)
  to kuzu and lance as one step: if either fails, both are rolled back; if the writer is
  killed, the next writer finishes or undoes the step from its journal (``store.recovery``).
* A reader that meets a writer retries for ``busy_timeout`` seconds, then raises
  ``MemoryBusy`` ("memory is being updated, try again in a few seconds"); afterwards it
  sees the new data without a restart (the manifest's ``generation`` changes).

An engine that lets readers stay beside a writer (``readers_beside_writer``: ladybug) has no
busy window: readers ignore the intent file and keep reading the last committed data until
the manifest's ``generation`` changes; the writer still takes ``memtools.lock``.

Writes inside one process are serialized by a lock.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path

from memtools import background
from memtools.embed.base import Embedder
from memtools.embed.images import ImageEmbedder
from memtools.errors import ConfigError, MemoryBusy, RecoveryPending, StoreError
from memtools.schema import MacroEvent, SuperEvent, Video
from memtools.store import engines
from memtools.store.base import GraphEngine, GraphStore, VectorIndex
from memtools.store.catalog import video_times
from memtools.store.catalog.manifest import (
    MANIFEST,
    EmbedderInfo,
    Manifest,
    read_manifest,
    write_manifest,
)
from memtools.store.catalog.videos import VideoCatalog
from memtools.store.faults import fault_point
from memtools.store.file_lock import holding
from memtools.store.integrity import checker as integrity
from memtools.store.integrity import leftovers
from memtools.store.integrity.checker import INTENT_FILE, LOCK_FILE
from memtools.store.outline import Outline
from memtools.store.tables.entity_index import EntityIndex
from memtools.store.tables.keyframe_index import KeyframeIndex
from memtools.store.tables.location import check_same_tables, check_tables_uri
from memtools.store.tables.vectors import LanceIndex
from memtools.store.writes.batch import MemoryWrites

log = logging.getLogger(__name__)

GRAPH_FILE = "graph.kuzu"  # kuzu's file; another engine names its own (``Memory.graph_file``)
VECTORS_DIR = "vectors"


class Memory(MemoryWrites):
    """A memory folder. Use ``Memory.open`` / ``Memory.create``; close it (or use ``with``)."""

    # Caches of ``store.integrity``'s checks: (manifest, searchable rows) and (generation, stamp) checked.
    _expected_rows: tuple[Manifest, int, dict[str, str]] | None = None
    _vectors_checked: tuple[int, int] | None = None

    def __init__(self, path: Path, manifest: Manifest, embedder: Embedder | None, *,
                 busy_timeout: float = 3.0, write_timeout: float = 60.0, idle_release: float = 1.0,
                 image_embedder: ImageEmbedder | None = None, graph: GraphEngine | None = None,
                 vectors: LanceIndex | None = None) -> None:
        """``graph`` and ``vectors``: the engines (default: the ones the manifest names)."""
        self.path = Path(path)
        self.manifest = manifest
        self.graph_engine: GraphEngine = graph or engines.graph_engine(manifest.graph_engine)
        if self.graph_engine.name != manifest.graph_engine:
            raise ConfigError(f"memory at {self.path} uses the {manifest.graph_engine} graph engine, not "
                              f"{self.graph_engine.name}; migrate it first: memtools migrate --memory {self.path} "
                              f"--engine {self.graph_engine.name}")
        self._embedder = embedder
        self._image_embedder = image_embedder
        self.busy_timeout = busy_timeout
        self.write_timeout = write_timeout
        self.idle_release = idle_release
        self._graph: GraphStore | None = None
        self._vectors: LanceIndex = vectors if vectors is not None else engines.vector_index(self.path, manifest)
        self._entities = EntityIndex(self._vectors)
        self._keyframes: KeyframeIndex | None = None
        self._lock = threading.RLock()  # guards the graph handle and serializes writes
        self._manifest_stamp = self._stamp()
        self._idle_at = 0.0  # monotonic time after which an unused read-only graph is let go
        self._reaper: threading.Thread | None = None  # lets it go then; one thread per idle spell, not per call
        self._closed = False
        self._recovered: str | None = None
        self._outlines: dict[str, Outline] = {}
        self._pin_tables()

    # --- opening ------------------------------------------------------------------------

    @classmethod
    def create(cls, path: str | os.PathLike, embedder: Embedder, *, tables: str | None = None,
               graph_engine: str | None = None, **options) -> Memory:
        """A new empty memory folder (or open the existing one, checking the embedder).
        ``tables``: keep the lance tables on object storage (``s3://bucket/prefix``, see
        ``memtools.store.tables.location``) instead of in ``vectors/``. ``graph_engine``: "kuzu"
        (default) or "ladybug" (``pip install 'memtools[ladybug]'``); an existing memory keeps its own."""
        folder = Path(path)
        tables = check_tables_uri(tables) if tables else None
        engine = engines.graph_engine(graph_engine)  # the parameter shadows the function
        integrity.check_folder(folder, create=True)
        if (folder / MANIFEST).exists():
            existing = read_manifest(folder)
            check_same_tables(folder, existing.tables, tables)
            if graph_engine is not None and existing.graph_engine != engine.name:
                raise ConfigError(f"memory at {folder} uses the {existing.graph_engine} graph engine, not "
                                  f"{engine.name}; leave out the engine option, or migrate it: memtools migrate "
                                  f"--memory {folder} --engine {engine.name} --to NEW_FOLDER")
            (folder / leftovers.CREATING).unlink(missing_ok=True)  # a create killed after its manifest: it is whole
            return cls.open(folder, embedder, **options)
        names = {e.name for e in folder.iterdir()} if folder.exists() else set()
        if names - {LOCK_FILE} and not names & {leftovers.CREATING, MANIFEST}:
            raise ConfigError(f"{folder} exists and is not a memtools memory; choose an empty or new folder")
        engine.driver()  # not installed, or another engine loaded here: say so before the folder is made
        folder.mkdir(parents=True, exist_ok=True)
        with holding(folder / LOCK_FILE):  # the same create twice at once: the second waits, then opens
            if not (folder / MANIFEST).exists():
                return cls._create_here(folder, embedder, tables, engine, options)
        return cls.create(folder, embedder, tables=tables, graph_engine=graph_engine, **options)  # made meanwhile

    @classmethod
    def _create_here(cls, folder: Path, embedder: Embedder, tables: str | None, engine: GraphEngine, options: dict):
        """The new memory's files, with the writers' lock held (``create``); a killed create's are cleared first."""
        leftovers.clear_unfinished(folder)
        (folder / leftovers.CREATING).touch()  # until the manifest is in place: a create killed before it starts again
        manifest = Manifest(embedder=EmbedderInfo(name=embedder.name, dim=embedder.dim), tables=tables,
                            graph_engine=engine.name)
        if options.get("image_embedder") is not None:
            image_embedder = options["image_embedder"]
            manifest.image_embedder = EmbedderInfo(name=image_embedder.name, dim=image_embedder.dim)
        with contextlib.closing(engine.open(folder / engine.file_name, read_only=False)) as graph:
            graph.ensure_schema()
        manifest.totals = VideoCatalog.create(folder, {}, manifest.generation).totals()
        fault_point("create-catalog-made")
        write_manifest(folder, manifest)  # last: the manifest makes the folder a memory
        (folder / leftovers.CREATING).unlink(missing_ok=True)
        return cls(folder, manifest, embedder, **options)

    @classmethod
    def open(cls, path: str | os.PathLike, embedder: Embedder | None = None, *, recover: bool = True,
             **options) -> Memory:
        """Open an existing memory. Without ``embedder``, the one it was built with is loaded lazily.
        A write that a killed process left half-done is finished or undone first, as its next writer
        would (``recover=False``, as ``memtools check`` does: leave it), when the folder can be
        written and no writer holds it; else the reads that need it say which command does it."""
        folder = Path(path)
        integrity.check_folder(folder, create=False)
        manifest = read_manifest(folder)
        manifest.check_compatible(folder, embedder.name if embedder else None, embedder.dim if embedder else None)
        if manifest.legacy:
            manifest = leftovers.migrate_on_open(folder) or manifest
        image_embedder = options.get("image_embedder")
        if image_embedder is not None:
            manifest.check_image_embedder(folder, image_embedder.name, image_embedder.dim)
        memory = cls(folder, manifest, embedder, **options)
        if recover:
            memory.recover_if_left()
        return memory

    @property
    def graph_file(self) -> Path:
        """The graph engine's database file."""
        return self.path / self.graph_engine.file_name

    @property
    def readers_beside_writer(self) -> bool:
        """Whether reads go on while another process writes (the graph engine allows it)."""
        return self.graph_engine.readers_beside_writer

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from memtools.embed import embedder_for_name

            self._embedder = embedder_for_name(self.manifest.embedder.name)
        return self._embedder

    @property
    def image_embedder(self) -> ImageEmbedder | None:
        """The image-text model of the keyframe vectors: the one given, else the manifest's (loaded lazily)."""
        if self._image_embedder is None and self.manifest.image_embedder is not None:
            from memtools.embed.images import image_embedder_for_name

            self._image_embedder = image_embedder_for_name(self.manifest.image_embedder.name)
        return self._image_embedder

    def use_image_embedder(self, image_embedder: ImageEmbedder) -> None:
        """Embed the keyframes of what is written from now on with this model (refused when the
        memory's keyframe vectors come from another one)."""
        self.manifest.check_image_embedder(self.path, image_embedder.name, image_embedder.dim)
        self._image_embedder = image_embedder

    @property
    def keyframes(self) -> KeyframeIndex | None:
        """The lance ``keyframes`` table, or None in a memory without keyframe vectors."""
        info = self.manifest.image_embedder
        if info is None:
            return None
        if self._keyframes is None or self._keyframes.dim != info.dim:
            self._keyframes = KeyframeIndex(self._vectors, info.dim)
            if self.readers_beside_writer:
                self._keyframes.pin(self.manifest.table_versions.get("keyframes"))
        return self._keyframes

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._release_graph()

    # --- folders ------------------------------------------------------------------------

    def frames_dir(self, video_id: str) -> Path:
        return self.path / "frames" / video_id

    def work_dir(self, video_id: str) -> Path:
        return self.path / "work" / video_id

    # --- reading ------------------------------------------------------------------------

    def _stamp(self) -> int:
        try:
            return (self.path / MANIFEST).stat().st_mtime_ns
        except FileNotFoundError:
            return 0

    def _release_graph(self) -> None:
        self._idle_at = 0.0
        if self._graph is not None:
            self._graph.close()
            self._graph = None

    def _reap(self) -> None:
        """The idle-release thread: sleeps until ``_idle_at`` (pushed on by every read), then lets the
        read-only graph go. A read holds ``_lock`` throughout, so nothing is closed under a reader."""
        while True:
            with self._lock:
                wait = self._idle_at - time.monotonic()
                if wait <= 0 or self._graph is None:
                    if self._graph is not None and self._graph.read_only:
                        self._graph.close()
                        self._graph = None
                    self._reaper = None
                    return
            if background.EXITING.wait(wait):  # the process is ending: close() or exit lets the graph go
                return

    def _pin_tables(self) -> None:
        """Beside a writer (``readers_beside_writer``), search the lance version the manifest recorded."""
        if self.readers_beside_writer:
            versions = self.manifest.table_versions
            self._vectors.pin(versions.get("nodes"))
            self._entities.pin(versions.get("entities"))
            if self._keyframes is not None:
                self._keyframes.pin(versions.get("keyframes"))

    def refresh(self) -> None:
        """Pick up a newer manifest (and with it, new data) written by another process."""
        with self._lock:  # never release the graph under a reader on another thread
            stamp = self._stamp()
            if stamp != self._manifest_stamp:
                self._manifest_stamp = stamp
                self.manifest = read_manifest(self.path)
                if self.manifest.graph_engine != self.graph_engine.name:  # `memtools migrate` switched it
                    self._closed = True
                    self._release_graph()
                    raise StoreError(f"memory at {self.path} was migrated to the {self.manifest.graph_engine} graph "
                                     "engine; open it again (restart the server or command)")
                self._outlines.clear()
                self._release_graph()
                self._refresh_tables()
                self._pin_tables()

    def _refresh_tables(self) -> None:
        """The lance handles brought to the newest version on disk. A writer does it once it holds the
        writers' lock: another process may have written (or been killed writing) since the handles were
        opened, and a row count or a version read through an older handle would find the memory damaged
        or restore the wrong version."""
        self._vectors.refresh()
        self._entities.refresh()
        if self._keyframes is not None:
            self._keyframes.refresh()

    @contextlib.contextmanager
    def reading(self, *, guard: bool = True) -> Iterator[GraphStore]:
        """The graph, open read-only for the duration of the block (waits briefly for writers).
        Raises ``MemoryDamaged`` when a part of the memory is missing (``guard=False``: open anyway)."""
        with self._lock:
            if self._closed:
                raise StoreError("this memory has been closed")
            deadline = time.monotonic() + self.busy_timeout
            refused: MemoryBusy | None = None  # the engine's last refusal, chained for whoever debugs it
            recovered = False  # a killed writer's commit was finished here (once per read)
            while True:
                if (not self.readers_beside_writer and (self.path / INTENT_FILE).exists()
                        and not leftovers.clear_stale_intent(self.path)):
                    self._release_graph()
                else:
                    self.refresh()
                    if guard:
                        integrity.guard(self)
                    if self._graph is None:
                        try:
                            self._graph = self.graph_engine.open(self.graph_file, read_only=True, buffer_pool_mb=64)
                        except RecoveryPending as exc:  # a killed writer's checkpoint, or a live one's
                            if not recovered and self.recover_if_left() is not None:
                                recovered = True
                                continue
                            refused = exc  # a writer at work finishes it; else the error names the command
                        except MemoryBusy as exc:
                            refused = exc
                    if self._graph is not None:
                        break
                if time.monotonic() >= deadline:
                    if isinstance(refused, RecoveryPending) and integrity.pending_recovery(
                            self.path, self.graph_file.name):
                        raise refused
                    raise MemoryBusy("memory is being updated, try again in a few seconds") from refused
                time.sleep(0.05)
            try:
                yield self._graph
            finally:
                if self.idle_release > 0 and self._graph is not None:
                    self._idle_at = time.monotonic() + self.idle_release
                    if self._reaper is None:
                        self._reaper = background.start(self._reap, name="memtools-idle-release")
                elif self.idle_release <= 0:
                    self._release_graph()

    def outline(self, video_id: str) -> Outline | None:
        """The root, super and macro events of a video (None if it is not in the memory)."""
        with self._lock:
            self.refresh()
            cached = self._outlines.get(video_id)
            if cached is not None:
                return cached
            with self.reading() as g:
                video = g.get(video_id)
                if not isinstance(video, Video):
                    return None
                supers, macros = tuple(g.supers(video_id)), tuple(g.macros_of_video(video_id))
            by_id: dict[str, SuperEvent | MacroEvent] = {s.id: s for s in supers}
            by_id.update({m.id: m for m in macros})
            outline = Outline(video, supers, macros, by_id)
            self._outlines[video_id] = outline
            return outline

    @property
    def vectors(self) -> VectorIndex:
        """The lance tables, after checking (once per generation) that they hold what the manifest lists."""
        integrity.guard_vectors(self, self._vectors)
        return self._vectors

    @property
    def vectors_unchecked(self) -> LanceIndex:
        return self._vectors

    @property
    def entities(self) -> EntityIndex:
        """Canonical entities (one row per real-world referent of a video, with its timeline)."""
        return self._entities

    def video_ids(self) -> list[str]:
        self.refresh()
        return self.manifest.videos.ids()

    def recorded_starts(self, video_ids: Iterable[str] | None = None) -> dict[str, datetime]:
        """Recording starts (aware; ``memtools.wallclock``) of these videos, or of all; untimed ones absent."""
        self.refresh()
        return {} if self.manifest.legacy else video_times.recorded_starts(self.manifest.catalog, video_ids)

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.path.rglob("*") if p.is_file())
