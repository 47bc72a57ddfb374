"""Writing videos into a memory: one atomic step per batch across lance and kuzu, replace,
delete and status. ``Memory`` (``memtools.store.memory``) mixes this in; it supplies the paths,
the engines; this half holds ``_writing()`` (process lock, intent file, graph opened read-write).

A batch is all-or-nothing under ``kill -9`` at any point (docs/storage.md, "A write killed at
any point"):

1. ``_writing()`` takes ``memtools.lock``, drops ``.write-intent`` (readers of kuzu step aside),
   opens the graph read-write and lets ``recovery.recover`` finish or undo a write killed
   earlier; then ``write_checks.check_before_write`` refuses a memory whose parts disagree.
2. The batch's ``.write-journal`` is recorded (token, video ids, lance versions before, manifest
   generation, the manifest entries to record) before anything changes.
3. Lance: old rows of replaced videos deleted, new rows added (``nodes``, ``entities``,
   ``keyframes``).
4. One graph transaction: the old version deleted, the new one inserted; then, once its COMMIT
   has returned, a second small transaction stores the token in ``WriteMark``: that COMMIT is the
   commit point (the engines can drop a COPY's rows when a kill lands in the checkpoint of the
   COMMIT that holds them, while keeping a mark written beside them; docs/storage.md). Then the
   navigation rows in ``navigation.sqlite``, one SQLite transaction (``store/graph/navigation.py``).
5. The staged keyframe folders swapped in (``memtools.store.writes.frame_swap``); indexes folded in;
   the batch's entries upserted into ``videos.sqlite`` in one SQLite transaction, tagged with the
   next generation (``store.video_catalog``); the manifest written (by rename) with that
   generation and the catalog's totals; the old keyframe folders removed; the journal removed.

A failure the process survives is undone at once (lance restored, graph rolled back); a kill is
recovered by the next writer: token in the graph and the graph holding the journal's counts ->
roll forward (the catalog gets the journal's entries unless it already has that generation, then
the manifest), else roll back everywhere (``memtools.store.writes.recovery``); either way the
journal's videos get their navigation rows again from the graph as it then stands.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from memtools.errors import ConfigError, StoreError
from memtools.heap import give_back
from memtools.schema import VideoGraph
from memtools.store.base import VideoWrites
from memtools.store.catalog import owed
from memtools.store.catalog.manifest import VideoEntry, now, read_manifest, write_manifest
from memtools.store.faults import fault_point
from memtools.store.library import layer as library
from memtools.store.tables import faces, keyframe_vectors, voices
from memtools.store.tables.entities import entity_rows
from memtools.store.tables.payload import index_rows
from memtools.store.writes import engine_log, frame_swap, kept, recovery, write_checks
from memtools.store.writes.held_vectors import held_vectors
from memtools.store.writes.lock import WriterLock
from memtools.store.writes.recording_times import stamp_times, time_entries, times_of
from memtools.wallclock import RecordingRule

if TYPE_CHECKING:
    from memtools.embed.base import Embedder
    from memtools.embed.images import ImageEmbedder
    from memtools.store.base import GraphEngine
    from memtools.store.catalog.manifest import Manifest
    from memtools.store.catalog.parts import MemoryParts
    from memtools.store.catalog.videos import VideoTotals
    from memtools.store.outline import Outline
    from memtools.store.tables.entity_index import EntityIndex
    from memtools.store.tables.keyframe_index import KeyframeIndex
    from memtools.store.tables.vectors import LanceIndex

EMBED_BATCH = 4096  # texts per embedder call: the embedder sorts a call by length, so fewer pads
BATCH_NODES = 30_000    # a write batch also ends once it holds this many nodes (keeps a batch within the pool)
EMBED_CACHE_TEXTS = 50_000  # texts whose vectors an import keeps for reuse across batches
INDEX_EVERY_NODES = 50_000  # a long write folds new rows into the lance indexes this often (a fold's
                            # memory follows the rows it folds: +126 MiB for 66k new vectors, +194 for 133k)


class MemoryWrites(WriterLock, VideoWrites):
    """The write half of ``Memory`` (the ``VideoWrites`` contract; ``write_video`` comes from it)."""

    recording_rule: RecordingRule = RecordingRule()  # finds written videos' recording starts (memtools.wallclock)

    if TYPE_CHECKING:  # what ``Memory`` supplies (declared for type checkers; Memory defines each)
        path: Path
        manifest: Manifest
        _vectors: LanceIndex
        _entities: EntityIndex
        _outlines: dict[str, Outline]
        _manifest_stamp: int

        @property
        def embedder(self) -> Embedder: ...

        @property
        def image_embedder(self) -> ImageEmbedder | None: ...

        @property
        def keyframes(self) -> KeyframeIndex | None: ...

        def frames_dir(self, video_id: str) -> Path: ...

        def _stamp(self) -> int: ...

        def _pin_tables(self) -> None: ...

        _lock: threading.RLock
        _lock_depth: int
        write_timeout: float
        _recovered: str | None  # what the last ``_writing()`` recovered (``recovery.recover``)

        @property
        def graph_engine(self) -> GraphEngine: ...

        @property
        def graph_file(self) -> Path: ...

        def _release_graph(self) -> None: ...

    def write_videos(self, graphs: Iterable[VideoGraph], *, batch_size: int = 200,
                     progress: Callable[[int], None] | None = None, embed_cache: dict[str, object] | None = None,
                     index: bool = True, staged_frames: Mapping[str, Path] | None = None) -> int:
        """Write many videos, ``batch_size`` (or ``BATCH_NODES`` nodes) per atomic step.
        ``embed_cache`` (text -> vector) carries embeddings across calls, so a text shared by
        several batches is embedded once. Returns how many were written.

        The lance indexes are brought up to date (and old versions pruned) after the first
        batch, every ``INDEX_EVERY_NODES`` nodes and at the end, not after every batch: compacting
        a growing table per batch made long imports slow and their memory and disk grow. Rows not
        yet folded in are still found (lance scans them). ``index=False`` leaves it all to a later
        ``finish_indexes()`` (bulk imports that write one batch per call).

        ``staged_frames`` (video id -> staging root, ``memtools.store.writes.frame_swap``): the video's
        keyframe files are staged there and replace its keyframe folder whole, in the same
        atomic step; a video without one keeps whatever its folder holds."""
        embed_cache = {} if embed_cache is None else embed_cache
        written = nodes = pending = 0
        batch: list[VideoGraph] = []

        def flush() -> None:
            nonlocal written, pending, batch
            pending += sum(len(g.entities) + len(g.events) + len(g.ocr) + len(g.macros) for g in batch)
            fold = index and (written == 0 or pending >= INDEX_EVERY_NODES)
            self._write_batch(batch, embed_cache, index=fold, staged=staged_frames or {})
            pending = 0 if fold else pending
            written += len(batch)
            batch = []
            if progress:
                progress(written)

        for graph in graphs:
            batch.append(graph)
            nodes += len(graph.entities) + len(graph.events) + len(graph.ocr) + len(graph.macros)
            if len(batch) >= batch_size or nodes >= BATCH_NODES:
                nodes = 0
                flush()
        if batch:
            flush()
        if index and pending:
            self.finish_indexes()
        return written

    def finish_indexes(self, *, release: bool = False, share_written: float | None = None) -> None:
        """Fold rows written since the last indexing into the lance indexes; prune old versions
        (``memtools.store.tables.lance_fold``: each fold's memory follows the rows it folds).
        ``share_written`` (a bulk import: the share of its videos written so far, > 0): a vector
        index built now gets the partitions of the table the import will end with.
        ``release`` (a bulk import, which searches nothing meanwhile): the lance handles are let go
        after the fold (opened again on next use) and the memory freed before and by it goes back to
        the system (``memtools.heap``), so the next fold starts from less."""
        if release:
            give_back()
        with self._tables_writing():
            self._vectors.finish_write(share_written=share_written, release=release)
            self._entities.finish_write()
            if self.keyframes is not None:
                self.keyframes.finish_write()
            self._commit_manifest(read_manifest(self.path))
            if release:
                self._vectors.close_handles()
                self._entities.close_handles()
        if release:
            gc.collect()
            give_back()

    def _commit_manifest(self, manifest, totals: VideoTotals | None = None) -> None:
        """Write the manifest of a finished write (``totals``: the catalog's sums after it, when its entries
        changed), with the lance version readers beside a writer read."""
        manifest.totals = totals if totals is not None else manifest.totals
        keyframes = self.keyframes
        versions = {"nodes": self._vectors.version(), "entities": self._entities.version(),
                    "keyframes": keyframes.version() if keyframes is not None else None}
        manifest.table_versions.update({name: v for name, v in versions.items() if v is not None})
        write_manifest(self.path, manifest)
        self.manifest = manifest
        self._manifest_stamp = self._stamp()
        self._outlines.clear()
        self._pin_tables()

    def _write_batch(self, graphs: Sequence[VideoGraph], vectors: dict[str, object], *, index: bool = True,
                     staged: Mapping[str, Path]) -> None:
        ids = [g.video_id for g in graphs]
        if len(set(ids)) != len(ids):
            raise ConfigError(f"the same video id appears twice in one write: {sorted(ids)}")
        for g in graphs:
            try:
                g.check()
            except ValueError as exc:
                raise StoreError(f"refusing to write an inconsistent graph: {exc}") from exc
        stamp_times(graphs, self.recording_rule)
        rows = index_rows(graphs)
        self._reuse_held(rows, vectors)
        self._embed_rows(rows, vectors)
        profiles = entity_rows(graphs, {row["id"]: row["vector"] for row in rows if row["kind"] == "entity"})
        self._reuse_held(profiles, vectors)
        self._embed_rows(profiles, vectors)
        frames = keyframe_vectors.frame_rows(self.path, graphs, self.image_embedder, staged)
        swap = frame_swap.plan(self.path, self.frames_dir, graphs, staged)
        with self._writing() as kuzu:
            kuzu.ensure_schema()
            manifest = read_manifest(self.path)
            existing = [vid for vid in ids if vid in manifest.videos]
            keyframes = keyframe_vectors.table_for_write(cast("MemoryParts", self), frames)
            tables = recovery.versions(cast("MemoryParts", self))
            tables["keyframes"] = keyframes.version() if keyframes is not None else None
            entries = {g.video_id: VideoEntry(
                title=g.video.title, duration=g.video.duration, status="ready", updated_at=now(),
                counts={"super": len(g.supers), "macro": len(g.macros), "entity": len(g.entities),
                        "event": len(g.events), "ocr": len(g.ocr), "keyframe": len(g.keyframes),
                        "edges": len(g.edges), **({"speech": len(g.speech)} if g.speech else {})},
                keyframe_vectors=frames.per_video.get(g.video_id, 0)) for g in graphs}
            replaced = [vid for vid in existing if manifest.videos[vid].status == "ready"]
            journaled = time_entries(graphs, entries)
            times = times_of(journaled)  # what the catalog will record: a value it cannot hold fails here
            old = kuzu.video_graphs(replaced)
            kept.keep(self.path, old)  # before the journal: a kill at any instant leaves each old version whole
            journal = recovery.Journal(
                "write", ids, tables, manifest.generation, journaled,
                frames.info.model_dump() if frames.info is not None else None, frames=swap,
                replaced=replaced, kept=sorted(old), command=kept.command_line())
            fault_point("write-start")
            recovery.begin(cast("MemoryParts", self), journal, kuzu)
            if existing:  # it deletes from the graph: a cut-short checkpoint puts this back (engine_log)
                engine_log.snapshot(self.path, self.graph_file, self.graph_engine.name, journal.token)
            # Lance first: kuzu 0.11.3 loses existing edges when a transaction that ran
            # COPY Rel is rolled back by hand, so everything that can fail happens before
            # the kuzu transaction, which then only copies validated rows and commits.

            def undo() -> None:
                self._vectors.restore(tables["nodes"])
                self._entities.restore(tables["entities"])
                if keyframes is not None:
                    keyframes.restore(tables["keyframes"])
                frame_swap.unstage(self.path, self.frames_dir, swap, journal.token)
                recovery.end(cast("MemoryParts", self))

            try:
                frame_swap.stage(self.path, self.frames_dir, swap, journal.token)
                self._vectors.replace_videos(existing, rows)
                fault_point("nodes-written")
                self._entities.replace_videos(existing, profiles)
                fault_point("entities-written")
                if keyframes is not None:
                    keyframes.replace_videos(existing, frames.rows)
            except BaseException:
                undo()
                raise
            try:
                kuzu.begin()
                fault_point("graph-begun")
                try:
                    kuzu.delete_videos(existing)
                    fault_point("graph-deleted")
                    kuzu.insert(graphs)
                    fault_point("graph-inserted")
                except BaseException as exc:
                    with contextlib.suppress(StoreError):
                        kuzu.rollback()
                    write_checks.report_lost_edges(kuzu, manifest.videos, exc)
                    raise
                kuzu.commit()
            except BaseException:
                undo()
                raise
            recovery.commit_mark(cast("MemoryParts", self), kuzu, journal)
            # committed: from here on a kill or a failure of the disk is finished by the next writer (recovery.recover)
            with recovery.finished_or_undone(cast("MemoryParts", self), kuzu, journal):
                fault_point("graph-committed")
                kuzu.store_navigation(existing, graphs)
                fault_point("navigation-written")
                frame_swap.swap_in(self.path, self.frames_dir, swap, journal.token)
                if index:
                    self._vectors.finish_write()
                    self._entities.finish_write()
                    if keyframes is not None:
                        keyframes.finish_write()
                    fault_point("indexed")
                parts = cast("MemoryParts", self)
                library.after_write(parts, kuzu, graphs, profiles, existing, journal.generation, vectors)
                fault_point("library-written")
                manifest = read_manifest(self.path)
                frames.record(manifest)
                totals = manifest.catalog.apply(entries, (), journal.generation + 1, times)
                fault_point("catalog-written")
                manifest.generation = journal.generation + 1
                self._commit_manifest(manifest, totals)
                fault_point("manifest-written")
                frame_swap.clean(self.path)
                recovery.end(cast("MemoryParts", self))
            owed.settle(self.path, ids)  # videos a recovery had to remove are whole again

    def _reuse_held(self, rows: list[dict], cache: dict[str, object]) -> None:
        """Put in ``cache`` the vectors the memory holds for the texts of ``rows``: one text, one vector
        in one memory (``memtools.store.writes.held_vectors``). Repairs embed afresh: they distrust the tables."""
        texts = [t for t in dict.fromkeys(row["text"] for row in rows) if t not in cache]
        if not texts or (not self._vectors.remote and not Path(self._vectors.path).is_dir()):
            return  # nothing held (and a read must not make the folder: the write's guard reports it missing)
        try:
            tables = (self._vectors.nodes(), self._entities.table())
        except StoreError:
            return  # the write opens them itself, after any recovery, and says what is wrong
        cache.update(held_vectors(tables, texts, self.embedder.dim))

    def _embed_rows(self, rows: list[dict], cache: dict[str, object]) -> None:
        """Set ``row["vector"]`` from its text; each distinct text is embedded once (captions repeat a lot)."""
        if len(cache) > EMBED_CACHE_TEXTS:  # bounded: a stream of any length keeps memory flat
            cache.clear()
        unique = [t for t in dict.fromkeys(row["text"] for row in rows) if t not in cache]
        for i in range(0, len(unique), EMBED_BATCH):
            chunk = unique[i:i + EMBED_BATCH]
            cache.update(zip(chunk, self.embedder.embed_documents(chunk), strict=True))
        for row in rows:
            row["vector"] = cache[row["text"]]

    def delete_video(self, video_id: str) -> bool:
        """Remove a video, its vectors and its frames. Returns False if it was not there."""
        with self._writing() as kuzu:
            manifest = read_manifest(self.path)
            if video_id not in manifest.videos:
                return False
            kuzu.ensure_schema()
            keyframes = self.keyframes
            tables = recovery.versions(cast("MemoryParts", self))
            journal = recovery.Journal("delete", [video_id], tables, manifest.generation)
            recovery.begin(cast("MemoryParts", self), journal, kuzu)
            engine_log.snapshot(self.path, self.graph_file, self.graph_engine.name, journal.token)
            try:
                self._vectors.delete_videos([video_id])
                self._entities.replace_videos([video_id], [])
                if keyframes is not None:
                    keyframes.replace_videos([video_id], [])
                kuzu.begin()
                try:
                    kuzu.delete_videos([video_id])
                except BaseException:
                    with contextlib.suppress(StoreError):
                        kuzu.rollback()
                    raise
                kuzu.commit()
            except BaseException:
                self._vectors.restore(tables["nodes"])
                self._entities.restore(tables["entities"])
                if keyframes is not None:
                    keyframes.restore(tables["keyframes"])
                recovery.end(cast("MemoryParts", self))
                raise
            recovery.commit_mark(cast("MemoryParts", self), kuzu, journal)
            fault_point("graph-committed")
            kuzu.store_navigation([video_id], [])
            frame_swap.move_aside(self.path, self.frames_dir(video_id), journal.token)
            self._vectors.finish_write()
            self._entities.finish_write()
            library.after_write(cast("MemoryParts", self), kuzu, [], [], [video_id], journal.generation)
            totals = manifest.catalog.apply({}, [video_id], journal.generation + 1)
            fault_point("catalog-written")
            manifest.generation = journal.generation + 1
            self._commit_manifest(manifest, totals)
            frame_swap.clean(self.path)
            voices.remove_voices(self.path, video_id)  # its voice centroids (memtools.store.tables.voices), if any
            faces.remove_faces(self.path, video_id)  # and its face clusters (memtools.store.tables.faces)
            recovery.end(cast("MemoryParts", self))
        return True

    def set_status(self, video_id: str, status: str) -> None:
        """Record a build status (``building``/``failed``) for a video not yet written."""
        with self._process_lock():
            manifest = read_manifest(self.path)
            entry = manifest.videos.get(video_id) or VideoEntry()
            entry.status, entry.updated_at = status, now()
            totals = manifest.catalog.put(video_id, entry)  # one row, one transaction: whole or not at all
            if manifest.catalog.generation() <= manifest.generation:  # else a killed write's roll-forward sets them
                manifest.totals = totals
            write_manifest(self.path, manifest)  # a new stamp: readers see the status at once
            self.manifest = manifest
            self._manifest_stamp = self._stamp()
            self._outlines.clear()

    # --- writing ------------------------------------------------------------------------


