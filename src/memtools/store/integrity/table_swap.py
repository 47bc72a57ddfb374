"""A lance table rebuilt aside, checked, then swapped in: how ``memtools repair`` replaces a whole table
without ever leaving a memory worse than it found it.

The replacement is written as ``NAME_repair`` beside ``NAME`` (same connection, so on disk or on
object storage alike); ``verify`` reads it back (row count, ids, vector width); only then does
``swap_in`` put it in place. On disk that is two folder renames (the old table is moved aside,
kept until the whole repair has finished, ``forget_old``, and put back by ``undo_swap`` if a later
step fails). On object storage, where
folders cannot be renamed, the old table is dropped and the checked rows are copied in. A
replacement that fails before the swap is dropped, and the old table was never touched.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

SUFFIX = "_repair"


class RebuildFailed(Exception):
    """The replacement table is not what it should be; the old table is left in place."""


class AsideTable:
    """``NAME_repair``: rows added in batches, checked, then swapped in for ``NAME``."""

    def __init__(self, db: Any, name: str, schema: pa.Schema, folder: Path | None) -> None:
        """``folder``: the folder holding ``NAME.lance`` on disk (None on object storage)."""
        self.db, self.name, self.schema, self.folder = db, name, schema, folder
        self.aside = name + SUFFIX
        self.table = db.create_table(self.aside, schema=schema, mode="overwrite")  # a leftover of a failed repair
        self.added = 0

    def add(self, rows: list[dict[str, Any]]) -> None:
        if rows:
            self.table.add(pa.Table.from_pylist(rows, schema=self.schema))
            self.added += len(rows)

    def verify(self, ids: Sequence[str], dim: int) -> None:
        """The table holds exactly ``ids`` (each once) with vectors ``dim`` wide, or ``RebuildFailed``."""
        found = self.table.count_rows()
        width = int(self.table.schema.field("vector").type.list_size)
        if width != dim:
            raise RebuildFailed(f"the rebuilt {self.name} table has {width}-dimensional vectors, not {dim}")
        if found != len(ids) or found != self.added:
            raise RebuildFailed(f"the rebuilt {self.name} table holds {found} rows, not {len(ids)}")
        have = Counter(self.table.search().select(["id"]).limit(None).to_arrow().column("id").to_pylist())
        if have != Counter(ids):
            raise RebuildFailed(f"the rebuilt {self.name} table does not hold the rows it was given")
        if self.table.count_rows("vector IS NULL"):
            raise RebuildFailed(f"the rebuilt {self.name} table has rows without a vector")

    def swap_in(self) -> None:
        """Put the checked replacement in place of ``NAME`` (which may be missing or unreadable)."""
        if self.folder is None:
            if self.name in self.db.list_tables().tables:
                self.db.drop_table(self.name)
            self.db.create_table(self.name, data=self.table.to_arrow(), schema=self.schema)
            self.db.drop_table(self.aside)
            return
        target, new, old = self._paths()
        shutil.rmtree(old, ignore_errors=True)
        if target.exists():
            target.rename(old)
        try:
            new.rename(target)
        except OSError:
            if old.exists():
                old.rename(target)
            raise

    def undo_swap(self) -> None:
        """Put the old table back (a later step of the repair failed); on disk only."""
        if self.folder is None:
            return
        target, _, old = self._paths()
        if old.exists():
            shutil.rmtree(target, ignore_errors=True)
            old.rename(target)

    def forget_old(self) -> None:
        """The repair finished: remove the old table, kept aside until now."""
        if self.folder is not None:
            shutil.rmtree(self._paths()[2], ignore_errors=True)

    def _paths(self) -> tuple[Path, Path, Path]:
        assert self.folder is not None
        return (self.folder / f"{self.name}.lance", self.folder / f"{self.aside}.lance",
                self.folder / f".{self.name}.lance.replaced")

    def discard(self) -> None:
        """Drop the replacement (a failed rebuild); the old table stays as it was."""
        try:
            self.db.drop_table(self.aside)
        except Exception:  # noqa: BLE001 - a half-made replacement: its folder goes
            if self.folder is not None:
                shutil.rmtree(self.folder / f"{self.aside}.lance", ignore_errors=True)
