"""The change log of one memory: ``changes.sqlite`` in the memory folder (stdlib ``sqlite3``).

One row per change (``c0001``, ``c0002``, ...): when, who, through which front end (python, cli,
mcp), what (``action`` and a one-line ``summary``), the video it touched, the video as it was before
(its ``VideoGraph`` JSON, compressed; ``NULL`` when it did not exist), a digest of the video as the
change leaves it, and its ``state``:

- ``pending``: recorded before the memory's own journaled write started; a kill leaves it so, and
  the next change settles it by comparing the video with the digest (``memtools.changes.apply``);
- ``done``: the write landed; ``undone_by`` names the change that undid it, if any;
- ``abandoned``: the write never landed (killed or failed); the memory is as before it.

Who and what are data, never layout: every text field is stored and shown as one line (``shown``: a control
character, line separator, bidirectional override or lone surrogate escaped as ``\\n``, ``\\x1b``, ``\\u202e``,
``\\ud800``; an identity that is not a string, which the OAuth verifier refuses already, as its JSON text), at
most ``WHO_MAX`` characters for who and ``WHAT_MAX`` for what (cut with "…"). Rows an older version wrote are
cleaned the same way when read, so neither a note nor an OAuth subject can make ``memtools log`` print a line that
looks like another change.

Like ``videos.sqlite``: rollback journal (never WAL), ``synchronous=FULL``, so a row is whole or
absent after a kill. Written only under the memory's writer lock (``memtools.lock``).
"""

from __future__ import annotations

import json
import sqlite3
import time
import unicodedata
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


WHO_MAX = 200
"""Characters of who made a change (a user, token subject or client) kept and shown."""
WHAT_MAX = 500
"""Characters of a change's summary kept and shown."""
NAME_MAX = 40
"""Characters of a front end or action name."""
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
ELLIPSIS = "\u2026"


def _escaped(char: str) -> str:
    if char in _ESCAPES:
        return _ESCAPES[char]
    if char in _BIDI or unicodedata.category(char) in ("Cc", "Cs", "Zl", "Zp"):
        code = ord(char)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
    return char


def _as_json(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=True, sort_keys=True, default=str)
    except (TypeError, ValueError):  # a circular structure, keys that cannot be sorted
        return repr(value)


def shown(value: object, limit: int) -> str:
    """``value`` as one line of data, at most ``limit`` characters: a non-string as its JSON text; control
    characters, line and paragraph separators, bidirectional controls and lone surrogates escaped (``\\n``,
    ``\\x1b``, ``\\u2028``, ``\\ud800``); cut with "…" (never inside an escape) when longer."""
    text = value if isinstance(value, str) else _as_json(value)
    out: list[str] = []
    used = 0
    for char in text[:limit + 1]:  # escapes only grow: what is past the limit is never shown
        piece = _escaped(char)
        if used + len(piece) > limit:
            while used + len(ELLIPSIS) > limit and out:  # room for the ellipsis
                used -= len(out.pop())
            out.append(ELLIPSIS)
            break
        out.append(piece)
        used += len(piece)
    return "".join(out)


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

    def record(self) -> dict[str, object]:
        """The change as data (``memtools log --json``: one JSON object per line)."""
        return {"id": self.id, "at": self.at, "when": self.when, "who": self.who, "front_end": self.front_end,
                "action": self.action, "summary": self.summary, "video_id": self.video_id, "state": self.state,
                "undoes": self.undoes, "undone_by": self.undone_by}

    def line(self) -> str:
        """One line for ``memtools log`` (its fields are one line each: ``shown``)."""
        state = {"pending": " (pending)", "abandoned": " (did not land)"}.get(self.state, "")
        undone = f" [undone by {self.undone_by}]" if self.undone_by else ""
        return (f"{self.id}  {self.when}  {self.who} via {self.front_end}  {self.action}: {self.summary}"
                f"{state}{undone}")


_COLUMNS = "seq, at, front_end, who, action, summary, video_id, after_digest, state, undoes, undone_by"


def _change(row: tuple) -> Change:
    """A row as a ``Change``, its texts ``shown`` (rows written before they were cleaned when stored, too)."""
    seq, at, front_end, who, action, summary, *rest = row
    return Change(change_id(seq), at, shown(front_end, NAME_MAX), shown(who, WHO_MAX), shown(action, NAME_MAX),
                  shown(summary, WHAT_MAX), *rest)


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
        """Record a change about to be written (``pending``); returns its id. Who and what are stored ``shown``."""
        blob = zlib.compress(before.encode()) if before is not None else None
        front_end, who, action = shown(front_end, NAME_MAX), shown(who, WHO_MAX), shown(action, NAME_MAX)
        summary = shown(summary, WHAT_MAX)
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

    def ids_about(self, video_ids: list[str], *, skip_action: str | None = None) -> list[str]:
        """The ids of every change about these videos (oldest first), but those of action ``skip_action``."""
        if not video_ids:
            return []
        marks = ", ".join("?" for _ in video_ids)
        with self._connect() as db:
            rows = db.execute(f"SELECT seq FROM changes WHERE video_id IN ({marks}) AND action != ? ORDER BY seq",
                              [*video_ids, skip_action or ""]).fetchall()
        return [change_id(r[0]) for r in rows]

    def of_action(self, action: str) -> list[Change]:
        """Every change of one action, oldest first."""
        with self._connect() as db:
            rows = db.execute(f"SELECT {_COLUMNS} FROM changes WHERE action = ? ORDER BY seq", (action,)).fetchall()
        return [_change(r) for r in rows]

    def redact(self, cids: list[str], summary: str) -> int:
        """Drop the video copies of these changes (``before``) and replace their summaries (a purge: who, when,
        which action and id stay); returns how many rows held a copy or a summary to change. Idempotent."""
        seqs = [s for s in (change_seq(c) for c in cids) if s is not None]
        if not seqs:
            return 0
        marks = ", ".join("?" for _ in seqs)
        with self._connect(write=True) as db:
            db.execute("PRAGMA secure_delete=ON")
            db.execute("BEGIN IMMEDIATE")
            cursor = db.execute(f"UPDATE changes SET before = NULL, summary = ? WHERE seq IN ({marks}) AND "
                                "(before IS NOT NULL OR summary != ?)", (shown(summary, WHAT_MAX), *seqs,
                                                                         shown(summary, WHAT_MAX)))
            db.execute("COMMIT")
            return cursor.rowcount

    def vacuum(self) -> None:
        """Write the file again from what it holds, so redacted rows leave no bytes behind."""
        if self.path.exists():
            with self._connect(write=True) as db:
                db.execute("VACUUM")

    def entries(self, limit: int = 50, video_id: str | None = None) -> list[Change]:
        """The newest ``limit`` changes, newest first (of one video when ``video_id`` is given)."""
        where, args = ("WHERE video_id = ?", (video_id,)) if video_id else ("", ())
        with self._connect() as db:
            rows = db.execute(f"SELECT {_COLUMNS} FROM changes {where} ORDER BY seq DESC LIMIT ?",
                              (*args, limit)).fetchall()
        return [_change(r) for r in rows]


__all__ = ["LOG_FILE", "WHAT_MAX", "WHO_MAX", "Change", "ChangeLog", "change_id", "change_seq", "shown"]
