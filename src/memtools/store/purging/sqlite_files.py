"""The memory's SQLite side files, with a purged video's rows gone and their bytes with them.

A ``DELETE`` frees a row's pages for reuse but leaves its bytes in the file; ``VACUUM`` writes the file
again from what is left (SQLite's rollback journal, ``journal_mode=DELETE``, which these files use, is
removed at the end of it). ``PRAGMA secure_delete`` zeroes what the ``DELETE`` frees as well, so nothing is
left even before the ``VACUUM`` has run. Both are idempotent: a purge killed part-way does them again.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from memtools.errors import StoreError
from memtools.store.catalog.videos import CATALOG
from memtools.store.graph.navigation import NAVIGATION
from memtools.store.library import meaning
from memtools.store.library.layer import LIBRARY

FILES = (LIBRARY, NAVIGATION, CATALOG)
"""The side files a video has rows in (the change log, ``changes.sqlite``, is redacted by ``memtools.changes``)."""
KEYS = ("video_id", "id")
"""A row belongs to a video when one of these columns names it (``videos.sqlite`` keys its rows by ``id``)."""


def _video_tables(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """(table, column) of every table with a column naming a video (``video_id``; else ``id`` in the catalog)."""
    out = []
    for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"):
        columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table!r})")}
        key = next((k for k in KEYS if k in columns), None)
        if key == "video_id" or (key == "id" and table in ("videos", "previous")):
            out.append((table, key))
    return out


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=60.0, isolation_level=None)
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.execute("PRAGMA secure_delete=ON")
    return conn


def rows_of(memory_path: Path, video_ids: list[str]) -> dict[str, int]:
    """Rows each table holds of these videos (``<file>:<table>``), for a purge's receipt."""
    out: dict[str, int] = {}
    if not video_ids:
        return out
    marks = ", ".join("?" for _ in video_ids)
    for name in FILES:
        path = Path(memory_path) / name
        if not path.is_file():
            continue
        try:
            with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=60.0)) as conn:
                for table, key in _video_tables(conn):
                    n = conn.execute(f"SELECT count(*) FROM {table} WHERE {key} IN ({marks})", video_ids).fetchone()[0]
                    if n:
                        out[f"{name}:{table}"] = int(n)
                if name == LIBRARY:
                    n = conn.execute("SELECT count(*) FROM activities WHERE activity NOT IN (SELECT activity FROM "
                                     f"occurrences WHERE video_id NOT IN ({marks}))", video_ids).fetchone()[0]
                    if n:
                        out[f"{name}:activities"] = int(n)
        except sqlite3.Error as exc:
            raise StoreError(f"reading {name} for a purge failed: {exc}") from exc
    return out


def purge_rows(memory_path: Path, video_ids: list[str]) -> None:
    """Delete whatever rows of these videos the side files still hold (a forget removed them already; this
    catches any left), then write each file again (``VACUUM``). The caller holds the writers' lock."""
    marks = ", ".join("?" for _ in video_ids)
    for name in FILES:
        path = Path(memory_path) / name
        if not path.is_file():
            continue
        def change(conn: sqlite3.Connection, name: str = name) -> None:
            for table, key in _video_tables(conn) if video_ids else []:
                conn.execute(f"DELETE FROM {table} WHERE {key} IN ({marks})", video_ids)
            if name == LIBRARY:
                drop_unused_activities(conn)

        vacuum(path, change)


def drop_unused_activities(conn: sqlite3.Connection) -> None:
    """``library.sqlite`` keeps an activity (its key and label are a moment's normalised words, with its vector) and
    the lemma vectors of its words after its last occurrence went: a purge removes those no remaining occurrence
    uses. A group whose leader goes gets the oldest remaining member as its leader (the group's key is the
    leader's activity, text of the purged video otherwise), and the ``words`` table keeps only the lemmas of the
    remaining labels (entity names it also caches are embedded again when a write next needs them)."""
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not {"activities", "occurrences", "words"} <= tables:
        return
    conn.execute("DELETE FROM activities WHERE activity NOT IN (SELECT activity FROM occurrences)")
    orphans = [g for (g,) in conn.execute("SELECT DISTINCT grp FROM activities WHERE grp NOT IN "
                                          "(SELECT activity FROM activities)")]
    for group in orphans:
        (leader,) = conn.execute("SELECT activity FROM activities WHERE grp = ? ORDER BY rowid LIMIT 1",
                                 (group,)).fetchone()
        conn.execute("UPDATE activities SET grp = ? WHERE grp = ?", (leader, group))
        conn.execute("UPDATE activities SET similarity = 1.0 WHERE activity = ?", (leader,))
    keep = meaning.words_of([label for (label,) in conn.execute("SELECT label FROM activities")])
    gone = [w for (w,) in conn.execute("SELECT word FROM words") if w not in keep]
    for start in range(0, len(gone), 900):
        part = gone[start:start + 900]
        conn.execute(f"DELETE FROM words WHERE word IN ({', '.join('?' for _ in part)})", part)


def vacuum(path: Path, change=None) -> None:
    """Run ``change(conn)`` in one transaction (with ``secure_delete`` on), then ``VACUUM`` the file."""
    try:
        with contextlib.closing(_connect(path)) as conn:
            if change is not None:
                conn.execute("BEGIN IMMEDIATE")
                change(conn)
                conn.execute("COMMIT")
            conn.execute("VACUUM")
    except sqlite3.Error as exc:
        raise StoreError(f"rewriting {path.name} for a purge failed: {exc}") from exc


__all__ = ["FILES", "drop_unused_activities", "purge_rows", "rows_of", "vacuum"]
