"""``navigation.sqlite``: the navigation rows (``store/graph/rows.py``) kept beside the graph file.

The rows (one ``VideoOutline`` per video, one ``MacroDetail`` per macro event, one ``NodeEdges``
per node: JSON built from the video's graph) were first stored as kuzu node tables, in the graph's
own transaction. At 100,000 videos that made each import batch's graph COMMIT cost +669 MiB and
2.2 s, of which the navigation rows +414 MiB and 0.8 s (``benchmarks/graph_commit.py``): kuzu keeps
a table in node groups of 131,072 rows, and when an append overflows the space a string column has
in the last group, the COMMIT reads and rewrites that column whole. A kilobyte of JSON a row makes
that column 100-250 MB. SQLite appends the same rows into its B-tree pages at the cost of the batch.

The rows are derived: each is a function of its video's graph. They are written once the graph's
COMMIT (the write's commit point) has returned, in one SQLite transaction per batch; a write killed
before that is finished by the next writer's recovery, which writes the rows of the journal's videos
again from the graph as it then stands (``KuzuGraph.refresh_navigation``). ``memtools check`` counts
them against the graph and ``memtools repair`` writes missing ones again. A reader beside a writer
(ladybug allows it; kuzu's readers step aside during a write) can meet a replaced video's new graph
with its old rows for the few milliseconds between the two commits, as it can meet lance's new rows
with the old graph: the catalog and manifest, written last, still name the old version.

Reading never fails on this file: a memory without it (made before it, or a copy that left it out),
or one a kill left mid-transaction, answers from the older places (kuzu's own navigation tables of
memories written before this file, else the original graph queries), only slower.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from memtools.store.graph.rows import DERIVED, columns

log = logging.getLogger(__name__)

NAVIGATION = "navigation.sqlite"
TIMEOUT_S = 30.0
_KEYS_A_QUERY = 900  # SQLite's default limit on bound parameters is 999


def _schema() -> str:
    statements = []
    for name in DERIVED:
        cols = ", ".join(f"{c} TEXT NOT NULL" for c in columns(name)[2:])
        statements.append(f"CREATE TABLE IF NOT EXISTS {name} (id TEXT PRIMARY KEY, video_id TEXT NOT NULL, {cols})")
        statements.append(f"CREATE INDEX IF NOT EXISTS {name}_video ON {name}(video_id)")
    return ";\n".join(statements) + ";"


class NavigationRows:
    """The navigation rows of one memory folder's graph. ``write``: this process holds the writers'
    lock (the file is created on the first write); otherwise reads go through a read-only connection."""

    def __init__(self, folder: Path, *, write: bool) -> None:
        self.file = Path(folder) / NAVIGATION
        self.write = write
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = 0

    def exists(self) -> bool:
        return self.file.is_file()

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def _connection(self, *, create: bool = False) -> sqlite3.Connection | None:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        self._conn = None
        if not self.write:
            if not self.file.is_file():
                return None
            uri = f"{self.file.resolve().as_uri()}?mode=ro"
        else:
            if not create and not self.file.is_file():
                return None
            uri = f"{self.file.resolve().as_uri()}?mode=rwc"
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=TIMEOUT_S, isolation_level=None)
        if self.write:
            conn.execute("PRAGMA journal_mode=DELETE")  # one file: copies and replicas take it whole
            conn.executescript(_schema())
        self._conn, self._pid = conn, os.getpid()
        return conn

    # --- reading ----------------------------------------------------------------------

    def row(self, table: str, key: str) -> tuple[str, ...] | None:
        """The JSON columns of one row (``columns(table)`` after id and video_id), or None: no such row,
        no file, or a file that cannot be read now (the caller falls back; ``memtools check`` reports it)."""
        query = f"SELECT {', '.join(columns(table)[2:])} FROM {table} WHERE id = ?"  # noqa: S608 - names are ours
        with self._lock:
            try:
                conn = self._connection()
                if conn is None:
                    return None
                found = conn.execute(query, (key,)).fetchone()
            except sqlite3.Error as exc:
                log.warning("%s cannot be read (%s); navigation falls back to graph queries", self.file, exc)
                self._drop()
                return None
        return tuple(found) if found is not None else None

    def counts(self) -> dict[str, dict[str, int]]:
        """Per video, how many rows each table holds (raises ``sqlite3.Error`` when the file cannot be read)."""
        got: dict[str, dict[str, int]] = {}
        with self._lock:
            conn = self._connection()
            if conn is None:
                return got
            for name in DERIVED:
                for vid, n in conn.execute(f"SELECT video_id, count(*) FROM {name} GROUP BY video_id"):  # noqa: S608
                    got.setdefault(vid, {})[name] = int(n)
        return got

    def _drop(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None

    # --- writing (the process holding the writers' lock) ----------------------------------

    def replace(self, video_ids: Iterable[str], rows: Mapping[str, Sequence[dict[str, str]]]) -> None:
        """In one transaction: drop every row of ``video_ids`` and add ``rows`` (table -> rows)."""
        ids = list(dict.fromkeys(video_ids))
        with self._lock:
            conn = self._connection(create=True)
            assert conn is not None
            conn.execute("BEGIN IMMEDIATE")
            try:
                for name in DERIVED:
                    for start in range(0, len(ids), _KEYS_A_QUERY):
                        chunk = ids[start:start + _KEYS_A_QUERY]
                        conn.execute(f"DELETE FROM {name} WHERE video_id IN ({', '.join('?' * len(chunk))})",  # noqa: S608
                                     chunk)
                    cols = columns(name)
                    conn.executemany(f"INSERT OR REPLACE INTO {name} VALUES ({', '.join('?' * len(cols))})",  # noqa: S608
                                     ([row[c] for c in cols] for row in rows.get(name, ())))
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def discard(self) -> None:
        """Move an unreadable file aside (``memtools repair``); the rows are written again from the graph."""
        with self._lock:
            self._drop()
            if self.file.exists():
                os.replace(self.file, self.file.with_name(NAVIGATION + ".damaged"))
            self.file.with_name(NAVIGATION + "-journal").unlink(missing_ok=True)
