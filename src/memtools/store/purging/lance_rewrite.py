"""Rewriting the lance tables so that deleted rows leave no bytes behind (a purge, ``memtools.changes.purge``).

A lance ``delete`` only marks rows deleted (``_deletions/``): the rows stay in their data files, in the old
versions' files, and in the indexes built over them (the full-text index keeps their words). A purge therefore
writes each table's remaining rows as one new version (``mode="overwrite"``: fresh data files, no index), builds
its indexes again (the table's own ``finish_write``), and removes every older version at once, with the files
no version references (``cleanup_old_versions(older_than=0, delete_unverified=True)``: safe here because the
writers' lock is held, and readers re-read the manifest, which records the new versions, before each search).

Each step is idempotent: a purge killed part-way is finished by doing it again (a kill between the overwrite
and the index build leaves a table without indexes, which the next write or ``finish_write`` builds anyway).
"""

from __future__ import annotations

import warnings
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from memtools.errors import StoreError
from memtools.store.catalog.manifest import read_manifest
from memtools.store.faults import fault_point
from memtools.store.tables.lance_filter import quote

if TYPE_CHECKING:
    from memtools.store import Memory

TABLES = ("nodes", "entities", "keyframes")


def _tables(memory: Memory) -> dict[str, Any]:
    """The memory's lance tables that exist, by name (the handles ``Memory`` itself writes through)."""
    found = {"nodes": memory.vectors_unchecked.nodes(), "entities": memory.entities.table()}
    keyframes = memory.keyframes
    found["keyframes"] = keyframes.table() if keyframes is not None else None
    return {name: table for name, table in found.items() if table is not None}


def rows_of(memory: Memory, video_ids: list[str]) -> dict[str, int]:
    """Rows each table holds of these videos (``lance:<table>``), for a purge's receipt."""
    if not video_ids:
        return {}
    where = "video_id IN (" + ", ".join(quote(v) for v in video_ids) + ")"
    out = {}
    for name, table in _tables(memory).items():
        try:
            n = table.count_rows(where)
        except Exception as exc:  # lance raises plain errors
            raise StoreError(f"counting the rows of table {name} failed: {exc}") from exc
        if n:
            out[f"lance:{name}"] = int(n)
    return out


def _drop_old(table: Any) -> int:
    """Remove every version but the newest (and files no version references); returns how many went."""
    before = len(table.list_versions())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "removes every version except the latest": that is the point
        table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
    table.checkout_latest()
    return max(0, before - len(table.list_versions()))


def rewrite_tables(memory: Memory, video_ids: list[str]) -> dict[str, int]:
    """Write each table's rows again without any row of ``video_ids`` (``memory`` already deleted them, or
    this deletes what is left), rebuild the indexes, drop every old version. Returns the versions removed per
    table (``lance:<table>``). The caller holds the writers' lock."""
    removed: dict[str, int] = {}
    where = "video_id IN (" + ", ".join(quote(v) for v in video_ids) + ")" if video_ids else None
    with memory._tables_writing():
        for name, table in _tables(memory).items():
            try:
                if where is not None and table.count_rows(where):
                    table.delete(where)
                rows = table.to_arrow()
                table.add(rows, mode="overwrite")
                fault_point("purge-table-written")
                removed[f"lance:{name}"] = _drop_old(table)
            except Exception as exc:
                raise StoreError(f"rewriting lance table {name} failed: {exc}") from exc
        memory.vectors_unchecked.finish_write()
        memory.entities.finish_write()
        if memory.keyframes is not None:
            memory.keyframes.finish_write()
        for name, table in _tables(memory).items():
            removed[f"lance:{name}"] = removed.get(f"lance:{name}", 0) + _drop_old(table)
        memory.vectors_unchecked.refresh()
        memory.entities.refresh()
        memory._commit_manifest(read_manifest(memory.path))
    return removed


__all__ = ["TABLES", "rewrite_tables", "rows_of"]
