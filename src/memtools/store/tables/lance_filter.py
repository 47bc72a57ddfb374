"""The lance side of the storage contract's filters: ``SearchFilter`` as a lance SQL expression,
with every value quoted or a float, never raw text; and a table handle pinned to a version.
Shared by the three lance tables (nodes, entities, keyframes)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from memtools.errors import StoreError
from memtools.store.base import SearchFilter

__all__ = ["filter_where", "quote", "table_at", "where_clause"]

log = logging.getLogger(__name__)


def quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def where_clause(video_id: str | None = None, kinds: Sequence[str] | None = None,
                 start: float | None = None, end: float | None = None, *,
                 video_ids: Sequence[str] | None = None, as_of: float | None = None) -> str | None:
    """A lance filter expression; every value is quoted or a float, never raw text.

    ``video_ids`` keeps rows of any of these videos; ``as_of`` keeps only what had ended by
    that second (MAGIC-Video's G<=t: a node still going on at t had not happened yet)."""
    parts = []
    if video_id is not None:
        parts.append(f"video_id = {quote(video_id)}")
    if video_ids is not None:
        parts.append("video_id IN (" + (", ".join(quote(v) for v in video_ids) or "''") + ")")
    if kinds:
        parts.append("kind IN (" + ", ".join(quote(k) for k in kinds) + ")")
    if start is not None:
        parts.append(f"t_end >= {float(start)!r}")
    if end is not None:
        parts.append(f"t_start <= {float(end)!r}")
    if as_of is not None:
        parts.append(f"t_end <= {float(as_of)!r}")
    return " AND ".join(parts) or None


def filter_where(f: SearchFilter) -> str | None:
    """The lance filter expression of a typed ``SearchFilter``."""
    return where_clause(None, f.kinds, f.start, f.end, video_ids=f.video_ids, as_of=f.as_of)


def table_at(db: Any, name: str, version: int) -> Any:
    """A second handle on lance table ``name``, checked out at ``version`` (a reader pinned to a commit)."""
    try:
        table = db.open_table(name)
        table.checkout(version)
    except Exception as exc:  # lance's own text (Rust paths) goes to the debug log, not to the user
        log.debug("opening lance table %r at version %s failed: %s", name, version, exc)
        raise StoreError(f"the {name} table at version {version} cannot be read (a file of that version is "
                         "missing or damaged); run `memtools check` on the memory") from exc
    return table
