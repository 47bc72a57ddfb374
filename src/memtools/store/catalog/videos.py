"""``videos.sqlite``: the per-video catalog of a memory (title, duration, status, counts of each video).

``memtools.json`` keeps the library-level fields; the entries of every video live here, in one SQLite
table, so a write batch touches its own videos' rows (one transaction) instead of parsing and
rewriting a list of every video. The file uses SQLite's rollback journal (``journal_mode=DELETE``,
never WAL): whenever no writer is inside a transaction the single ``videos.sqlite`` file is a
complete snapshot (copy it under ``memtools.lock``). Readers open it read-only (``mode=ro``).

**Generations.** Every row carries the manifest generation of the write that put it there, and the
last write's pre-images (the rows it replaced or deleted, or "did not exist") are kept in
``previous``. A reader whose manifest is at generation ``g`` sees each video as it was at ``g``
while the writer is between its catalog commit and its manifest rename (or was killed there): a
whole batch or none of it, like the graph and the lance tables it pins.

**Totals.** Triggers keep one ``totals`` row (searchable rows, ready videos, keyframe vectors, ...)
exact under every change, so a writer copies the library's sums into the manifest in O(1) instead
of summing every video (``VideoTotals``; ``memtools.store.integrity.checker`` reads them).

SQLite's own messages never reach users: a missing or unreadable file, or a cell that is not what
its column holds (counts that are not JSON, an emptied ``meta`` table, a status no write sets) is
``MemoryDamaged`` in plain words naming the cell and ``memtools repair`` (sqlite's text goes to the
debug log). ``cell_problems`` lists every such fault for ``memtools check``, with the journal mode,
the generation and the kept totals.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from memtools.errors import MemoryBusy, MemoryDamaged
from memtools.store.catalog.cells import (
    SUMS,
    DamagedCell,
    VideoEntry,
    VideoTotals,
    contributions,
    entry_of,
    generation_of,
    is_count,
    sums_of,
)
from memtools.store.catalog.time_rows import VideoTime
from memtools.store.catalog.video_times import sync
from memtools.store.resources import exhausted

log = logging.getLogger(__name__)

CATALOG = "videos.sqlite"
READ_TIMEOUT_S, WRITE_TIMEOUT_S = 10.0, 60.0
PAGE = 2000  # entries per read when iterating
WAL_HEADER = b"\x02\x02"  # bytes 18-19 of an SQLite file in WAL mode (1, 1: the rollback journal)
_COLUMNS = "title, duration, status, updated_at, counts, keyframe_vectors"
_ROW = dict(zip(SUMS, ("rows", "ready", "in_graph", "entity_videos", "ready_frames"), strict=True))  # sum -> column
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS videos (id TEXT PRIMARY KEY, title TEXT NOT NULL, duration REAL NOT NULL,
  status TEXT NOT NULL, updated_at TEXT NOT NULL, counts TEXT NOT NULL, keyframe_vectors INTEGER NOT NULL,
  gen INTEGER NOT NULL, rows INTEGER NOT NULL, ready INTEGER NOT NULL, in_graph INTEGER NOT NULL,
  entity_videos INTEGER NOT NULL, ready_frames INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS videos_status ON videos(status);
CREATE TABLE IF NOT EXISTS previous (id TEXT PRIMARY KEY, gen INTEGER NOT NULL, existed INTEGER NOT NULL,
  title TEXT, duration REAL, status TEXT, updated_at TEXT, counts TEXT, keyframe_vectors INTEGER);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS totals (one INTEGER PRIMARY KEY CHECK (one = 1), videos INTEGER NOT NULL,
  {", ".join(f"{name} INTEGER NOT NULL" for name in SUMS)});
INSERT OR IGNORE INTO totals VALUES (1, 0, {", ".join("0" for _ in SUMS)});
INSERT OR IGNORE INTO meta VALUES ('generation', 0);
CREATE TRIGGER IF NOT EXISTS videos_added AFTER INSERT ON videos BEGIN UPDATE totals SET videos = videos + 1,
  {", ".join(f"{n} = {n} + NEW.{c}" for n, c in _ROW.items())}; END;
CREATE TRIGGER IF NOT EXISTS videos_removed AFTER DELETE ON videos BEGIN UPDATE totals SET videos = videos - 1,
  {", ".join(f"{n} = {n} - OLD.{c}" for n, c in _ROW.items())}; END;
CREATE TRIGGER IF NOT EXISTS videos_changed AFTER UPDATE ON videos BEGIN UPDATE totals SET
  {", ".join(f"{n} = {n} - OLD.{c} + NEW.{c}" for n, c in _ROW.items())}; END;
"""
# each video as a reader at generation :g sees it: the last write's pre-image where that write came after :g
_VIEW = f"""SELECT id, {_COLUMNS} FROM videos v WHERE {{where}}
  NOT EXISTS (SELECT 1 FROM previous p WHERE p.id = v.id AND p.gen > :g)
  UNION ALL SELECT id, {_COLUMNS} FROM previous WHERE {{where}} gen > :g AND existed"""


def _lower(text: str | None) -> str | None:
    return None if text is None else text.lower()


def _values(vid: str, entry: VideoEntry, gen: int) -> tuple:
    return (vid, entry.title, float(entry.duration), entry.status, entry.updated_at,
            json.dumps(entry.counts, sort_keys=True), int(entry.keyframe_vectors), gen, *contributions(entry))


class VideoCatalog:
    """``videos.sqlite`` of one memory folder: reads through a read-only connection, writes (each one
    SQLite transaction) through a read-write one, made only by the process holding ``memtools.lock``."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.file = self.folder / CATALOG
        self._lock = threading.Lock()
        self._ro: sqlite3.Connection | None = None
        self._rw: sqlite3.Connection | None = None
        self._opened: tuple[int, int] | None = None  # (process, inode) the connections were made for

    def exists(self) -> bool:
        return self.file.is_file()

    def close(self) -> None:
        with self._lock:
            for conn in (self._ro, self._rw):
                if conn is not None:
                    conn.close()
            self._ro = self._rw = None

    # --- connections -------------------------------------------------------------------

    def _connect(self, *, write: bool, create: bool = False) -> sqlite3.Connection:
        mode = "rwc" if create else "rw" if write else "ro"
        conn = sqlite3.connect(f"{self.file.resolve().as_uri()}?mode={mode}", uri=True, check_same_thread=False,
                               timeout=WRITE_TIMEOUT_S if write else READ_TIMEOUT_S, isolation_level=None)
        conn.create_function("py_lower", 1, _lower, deterministic=True)  # SQLite's lower() folds ASCII only
        if write:
            conn.execute("PRAGMA journal_mode=DELETE")
            conn.execute("PRAGMA synchronous=FULL")
        return conn

    def _current(self) -> None:
        """Drop connections made before a fork, or to a file since replaced by rename (a migration, a repair)."""
        try:
            now = (os.getpid(), os.stat(self.file).st_ino)
        except FileNotFoundError:
            now = (os.getpid(), -1)
        if self._opened == now:
            return
        if self._opened is not None and self._opened[0] == now[0]:
            for conn in (self._ro, self._rw):
                if conn is not None:
                    conn.close()
        self._ro = self._rw = None
        self._opened = now

    def _read(self, query: str, params: dict[str, Any] | tuple = ()) -> list[tuple]:
        with self._lock:
            try:
                self._current()
                if self._ro is None:
                    if not self.file.is_file():
                        raise self._damaged("is missing")
                    self._ro = self._connect(write=False)
                return self._ro.execute(query, params).fetchall()
            except sqlite3.Error as exc:
                if self._ro is not None and _readonly_rollback(exc):  # a writer was killed mid-transaction
                    self._settle()
                    return self._ro.execute(query, params).fetchall()
                raise self._failed(exc) from exc

    def _settle(self) -> None:
        """Let SQLite roll back a transaction a killed writer left (a read-only connection cannot)."""
        try:
            conn = self._connect(write=True)
            conn.execute("SELECT count(*) FROM meta").fetchall()
            conn.close()
        except sqlite3.Error as exc:
            raise MemoryBusy(f"the memory at {self.folder} is being updated; try again in a few seconds") from exc

    def _write(self) -> sqlite3.Connection:
        self._current()
        if self._rw is None:
            if not self.file.is_file():
                raise self._damaged("is missing")
            self._rw = self._connect(write=True)
        return self._rw

    def _damaged(self, what: str) -> MemoryDamaged:
        return MemoryDamaged(damaged_message(self.folder, what))

    def _failed(self, exc: sqlite3.Error) -> Exception:
        log.debug("%s: %s", self.file, exc, exc_info=exc)
        out = exhausted(exc, f"reading {CATALOG}")  # "out of memory", "database or disk is full": not damage
        if out is not None:
            return out
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            return MemoryBusy(f"the memory at {self.folder} is being updated; try again in a few seconds")
        return self._damaged("cannot be read (the file is damaged or not a catalog)")

    @contextlib.contextmanager
    def _cells(self) -> Iterator[None]:
        """A damaged cell read inside the block is ``MemoryDamaged`` naming it and ``memtools repair``."""
        try:
            yield
        except DamagedCell as exc:
            raise self._damaged(f"has a damaged cell: {exc}") from None

    def _transaction(self, work) -> Any:
        """Run ``work(conn)`` in one SQLite transaction (all of it or none)."""
        with self._lock, self._cells():
            try:
                conn = self._write()
                conn.execute("BEGIN IMMEDIATE")
                try:
                    done = work(conn)
                    conn.execute("COMMIT")
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
                return done
            except sqlite3.Error as exc:
                raise self._failed(exc) from exc

    # --- reading (as at a manifest generation) -----------------------------------------

    def get(self, video_id: str, generation: int) -> VideoEntry | None:
        rows = self._read(_VIEW.format(where="id = :id AND"), {"id": video_id, "g": generation})
        with self._cells():
            return entry_of(rows[0][0], rows[0][1:]) if rows else None

    def count(self, generation: int) -> int:
        return int(self._read(f"SELECT count(*) FROM ({_VIEW.format(where='')})", {"g": generation})[0][0])

    def items(self, generation: int, status: str | None = None) -> Iterator[tuple[str, VideoEntry]]:
        """(id, entry) in id order, read a page at a time (memory stays flat however many videos)."""
        where = "id > :after AND " + ("status = :status AND" if status is not None else "")
        params: dict[str, Any] = {"g": generation, "status": status, "after": ""}
        while True:
            rows = self._read(f"{_VIEW.format(where=where)} ORDER BY id LIMIT {PAGE}", params)
            with self._cells():
                entries = [(row[0], entry_of(row[0], row[1:])) for row in rows]
            yield from entries
            if len(rows) < PAGE:
                return
            params["after"] = rows[-1][0]

    def page(self, generation: int, offset: int, limit: int,
             needle: str = "") -> tuple[list[tuple[str, VideoEntry]], int]:
        """(id, entry) of one page in id order whose id or title contains ``needle`` (lower case), and
        how many match: only the page's rows are read."""
        where = "(instr(py_lower(id), :needle) OR instr(py_lower(title), :needle)) AND" if needle else ""
        params = {"g": generation, "needle": needle, "limit": limit, "offset": offset}
        view = _VIEW.format(where=where)
        total = int(self._read(f"SELECT count(*) FROM ({view})", params)[0][0])
        rows = self._read(f"SELECT * FROM ({view}) ORDER BY id LIMIT :limit OFFSET :offset", params)
        with self._cells():
            return [(row[0], entry_of(row[0], row[1:])) for row in rows], total

    def ids(self, generation: int, status: str | None = None) -> list[str]:
        where = "status = :status AND" if status is not None else ""
        return [row[0] for row in self._read(f"SELECT id FROM ({_VIEW.format(where=where)}) ORDER BY id",
                                             {"g": generation, "status": status})]

    def generation(self) -> int:
        with self._cells():
            return generation_of(self._read("SELECT value FROM meta WHERE key = 'generation'"))

    def totals(self) -> VideoTotals:
        """The kept sums (as of the catalog's own generation)."""
        with self._cells():
            return sums_of(next(iter(self._read(f"SELECT videos, {', '.join(SUMS)} FROM totals")), None), "sums")

    def recount(self) -> VideoTotals:
        """The sums counted again from every row (``memtools check`` compares them with the kept ones)."""
        sums = ", ".join(f"coalesce(sum({c}), 0)" for c in _ROW.values())
        with self._cells():
            return sums_of(self._read(f"SELECT count(*), {sums} FROM videos")[0], "per-video sums")

    def wal(self) -> bool:
        """Whether the file is in WAL mode (it must use the rollback journal: see the module docstring)."""
        try:
            with open(self.file, "rb") as handle:
                return handle.read(20)[18:20] == WAL_HEADER
        except OSError:
            return False

    def raw_rows(self) -> list[tuple]:
        """Every row as stored: id, the six cells of an entry, then its five kept sums (``memtools check``)."""
        return self._read(f"SELECT id, {_COLUMNS}, {', '.join(_ROW.values())} FROM videos ORDER BY id")

    # --- writing (the process holding memtools.lock) ----------------------------------

    @classmethod
    def create(cls, folder: Path, entries: Mapping[str, VideoEntry], generation: int) -> VideoCatalog:
        """Write a whole catalog (a new memory, a migration, a rebuild) next to the folder's file and
        move it in place by rename: the old file stands until the new one is complete."""
        catalog = cls(folder)
        tmp = catalog.file.with_name(CATALOG + ".new")
        for leftover in (tmp, tmp.with_name(tmp.name + "-journal")):
            leftover.unlink(missing_ok=True)
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=DELETE")
            conn.executescript(_SCHEMA)
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO videos VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                             (_values(vid, e, generation) for vid, e in entries.items()))
            conn.execute("UPDATE meta SET value = ? WHERE key = 'generation'", (generation,))
            conn.execute("COMMIT")
        finally:
            conn.close()
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, catalog.file)
        return catalog

    def apply(self, upserts: Mapping[str, VideoEntry], deletes: Iterable[str], generation: int,
              times: Mapping[str, VideoTime | None] | None = None) -> VideoTotals:
        """A write's entries, as one transaction at manifest generation ``generation`` (the one the
        write commits); the rows it changes keep their pre-images for readers still at an older one.
        Applied once: a catalog already at ``generation`` (a write rolled forward again) is left as it is.
        ``times``: the written videos' recording starts (their days and weeks remade: ``store.video_times``)."""
        gone = [vid for vid in deletes if vid not in upserts]

        def work(conn: sqlite3.Connection) -> VideoTotals:
            at = generation_of(conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchall())
            if at > generation:  # only a write rolled forward again finds its own generation: this is damage
                raise DamagedCell(f"its generation {at} is ahead of the manifest's {generation - 1}")
            if at == generation:
                return _totals(conn)
            conn.execute("DELETE FROM previous")
            touched = [*upserts, *gone]
            conn.executemany(f"INSERT INTO previous SELECT id, ?, 1, {_COLUMNS} FROM videos WHERE id = ?",
                             ((generation, vid) for vid in touched))
            conn.executemany("INSERT OR IGNORE INTO previous (id, gen, existed) VALUES (?, ?, 0)",
                             ((vid, generation) for vid in touched))
            conn.executemany("DELETE FROM videos WHERE id = ?", ((vid,) for vid in gone))
            _upsert(conn, ((vid, e, generation) for vid, e in upserts.items()))
            sync(conn, times or {}, gone)
            conn.execute("UPDATE meta SET value = ? WHERE key = 'generation'", (generation,))
            return _totals(conn)

        return self._transaction(work)

    def times(self, query: str, params: dict[str, Any] | tuple = ()) -> list[tuple]:
        """Rows of the time index (``store.video_times``); none from a catalog made before it."""
        if not self._read("SELECT 1 FROM sqlite_master WHERE name = 'periods'"):
            return []
        return self._read(query, params)

    def remake_times(self, times: Mapping[str, VideoTime]) -> None:
        """The time index made again whole (``memtools repair``), in one transaction."""
        from memtools.store.catalog.video_times import rebuild

        self._transaction(lambda conn: rebuild(conn, times))

    def put(self, video_id: str, entry: VideoEntry) -> VideoTotals:
        """Change one entry now (a build status), keeping its generation: one row, one transaction."""

        def work(conn: sqlite3.Connection) -> VideoTotals:
            row = conn.execute("SELECT gen FROM videos WHERE id = ?", (video_id,)).fetchone()
            _upsert(conn, [(video_id, entry, row[0] if row and is_count(row[0]) else 0)])
            return _totals(conn)

        return self._transaction(work)

    def edit(self, upserts: Mapping[str, VideoEntry], deletes: Iterable[str], generation: int) -> VideoTotals:
        """Change several entries in one transaction, the catalog then at ``generation`` (repair, which
        restores the whole file if it fails later, so it keeps no pre-images)."""

        def work(conn: sqlite3.Connection) -> VideoTotals:
            conn.execute("DELETE FROM previous")
            conn.executemany("DELETE FROM videos WHERE id = ?", ((vid,) for vid in deletes))
            _upsert(conn, ((vid, e, generation) for vid, e in upserts.items()))
            conn.execute("UPDATE meta SET value = ? WHERE key = 'generation'", (generation,))
            return _totals(conn)

        return self._transaction(work)


def _upsert(conn: sqlite3.Connection, rows: Iterable[tuple[str, VideoEntry, int]]) -> None:
    conn.executemany(
        "INSERT INTO videos VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET title = excluded.title, "
        "duration = excluded.duration, status = excluded.status, updated_at = excluded.updated_at, "
        "counts = excluded.counts, keyframe_vectors = excluded.keyframe_vectors, gen = excluded.gen, "
        "rows = excluded.rows, ready = excluded.ready, in_graph = excluded.in_graph, "
        "entity_videos = excluded.entity_videos, ready_frames = excluded.ready_frames",
        (_values(vid, entry, gen) for vid, entry, gen in rows))


def _totals(conn: sqlite3.Connection) -> VideoTotals:
    return sums_of(conn.execute(f"SELECT videos, {', '.join(SUMS)} FROM totals").fetchone(), "sums")


def _readonly_rollback(exc: sqlite3.Error) -> bool:
    return getattr(exc, "sqlite_errorname", "") == "SQLITE_READONLY_ROLLBACK"


def damaged_message(folder: Path, what: str) -> str:
    return (f"the memory at {folder} is damaged: its list of videos ({CATALOG}) {what}. It cannot be read until it "
            f"is repaired; the user should run `memtools check --memory {folder}`, then "
            f"`memtools repair --memory {folder}` (it lists the videos again from the graph)")
