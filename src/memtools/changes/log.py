"""The change log of one memory: ``changes.sqlite`` in the memory folder (stdlib ``sqlite3``).

One row per change (``c0001``, ``c0002``, ...): when, who, through which front end (python, cli,
mcp), what (``action`` and a one-line ``summary``), the video it touched, the video as it was before
(its ``VideoGraph`` JSON, compressed; ``NULL`` when it did not exist), a digest of the video as the
change leaves it, and its ``state``:

- ``pending``: recorded before the memory's own journaled write started; a kill leaves it so, and
  the next change settles it by comparing the video with the digest (``memtools.changes.apply``);
- ``done``: the write landed; ``undone_by`` names the change that undid it, if any;
- ``abandoned``: the write never landed (killed or failed); the memory is as before it.

Like ``videos.sqlite``: rollback journal (never WAL), ``synchronous=FULL``, so a row is whole or
absent after a kill. Written only under the memory's writer lock (``memtools.lock``).
"""

from __future__ import annotations

import json
import sqlite3
import time
import zlib
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

LOG_FILE = "changes.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    front_end TEXT NOT NULL,
    who TEXT NOT NULL,
    action TEXT NOT NULL,
    summary TEXT NOT NULL,
    video_id TEXT NOT NULL,
    before BLOB,
    after_digest TEXT,
    state TEXT NOT NULL,
    undoes TEXT,
    undone_by TEXT
)
"""


def change_id(seq: int) -> str:
    return f"c{seq:04d}"


def change_seq(text: str) -> int | None:
    """The sequence number of a change id (``c0007`` -> 7), or ``None`` when it is not one."""
    text = text.strip()
    if len(text) >= 2 and text[0] in "cC" and text[1:].isdigit() and len(text) <= 12:
        return int(text[1:])
    return None


@dataclass(frozen=True)
class Change:
    """One row of the change log (without the video's prior state: ``ChangeLog.before``)."""

    id: str
    at: float
    front_end: str
    who: str
    action: str
    summary: str
    video_id: str
    after_digest: str | None
    state: str
    undoes: str | None
    undone_by: str | None

    @property
    def when(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.at))

    def line(self) -> str:
        """One line for ``memtools log``."""
        state = {"pending": " (pending)", "abandoned": " (did not land)"}.get(self.state, "")
        undone = f" [undone by {self.undone_by}]" if self.undone_by else ""
        return (f"{self.id}  {self.when}  {self.who} via {self.front_end}  {self.action}: {self.summary}"
                f"{state}{undone}")


_COLUMNS = "seq, at, front_end, who, action, summary, video_id, after_digest, state, undoes, undone_by"


def _change(row: tuple) -> Change:
    return Change(change_id(row[0]), *row[1:])


class ChangeLog:
    """``changes.sqlite`` of the memory at ``folder`` (created on the first change)."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / LOG_FILE

    @contextmanager
    def _connect(self, write: bool = False) -> Iterator[sqlite3.Connection]:
        if not write and not self.path.exists():
            db = sqlite3.connect(":memory:")
        else:
            db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
        with closing(db):
            db.execute("PRAGMA journal_mode=DELETE")
            db.execute("PRAGMA synchronous=FULL")
            db.execute(_SCHEMA)
            yield db

    def begin(self, *, front_end: str, who: str, action: str, summary: str, video_id: str,
              before: str | None, after_digest: str | None, undoes: str | None = None) -> str:
        """Record a change about to be written (``pending``); returns its id."""
        blob = zlib.compress(before.encode()) if before is not None else None
        with self._connect(write=True) as db:
            cursor = db.execute(
                "INSERT INTO changes (at, front_end, who, action, summary, video_id, before, after_digest, state, "
                "undoes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?)",
                (time.time(), front_end, who, action, summary, video_id, blob, after_digest, undoes))
            assert cursor.lastrowid is not None
            return change_id(cursor.lastrowid)

    def settle(self, cid: str, landed: bool) -> None:
        """A pending change is ``done`` (and, for an undo, the change it undid marked) or ``abandoned``."""
        seq = change_seq(cid)
        with self._connect(write=True) as db:
            db.execute("BEGIN IMMEDIATE")
            db.execute("UPDATE changes SET state = ? WHERE seq = ? AND state = 'pending'",
                       ("done" if landed else "abandoned", seq))
            undoes = db.execute("SELECT undoes FROM changes WHERE seq = ?", (seq,)).fetchone()
            if landed and undoes and undoes[0]:
                db.execute("UPDATE changes SET undone_by = ? WHERE seq = ?", (cid, change_seq(undoes[0])))
            db.execute("COMMIT")

    def get(self, cid: str) -> Change | None:
        seq = change_seq(cid)
        if seq is None:
            return None
        with self._connect() as db:
            row = db.execute(f"SELECT {_COLUMNS} FROM changes WHERE seq = ?", (seq,)).fetchone()
        return _change(row) if row else None

    def before(self, cid: str) -> dict | None:
        """The touched video as it was before the change (``VideoGraph`` JSON data), ``None`` if it did not exist."""
        with self._connect() as db:
            row = db.execute("SELECT before FROM changes WHERE seq = ?", (change_seq(cid),)).fetchone()
        return json.loads(zlib.decompress(row[0])) if row and row[0] is not None else None

    def pending(self) -> list[Change]:
        with self._connect() as db:
            rows = db.execute(f"SELECT {_COLUMNS} FROM changes WHERE state = 'pending' ORDER BY seq").fetchall()
        return [_change(r) for r in rows]

    def entries(self, limit: int = 50, video_id: str | None = None) -> list[Change]:
        """The newest ``limit`` changes, newest first (of one video when ``video_id`` is given)."""
        where, args = ("WHERE video_id = ?", (video_id,)) if video_id else ("", ())
        with self._connect() as db:
            rows = db.execute(f"SELECT {_COLUMNS} FROM changes {where} ORDER BY seq DESC LIMIT ?",
                              (*args, limit)).fetchall()
        return [_change(r) for r in rows]


__all__ = ["LOG_FILE", "Change", "ChangeLog", "change_id", "change_seq"]
