"""How healthy is one lance table? Its vector width, the indexes a table of its kind must have, and
whether every index lance lists still has its files (``NAME.lance/_indices/<uuid>``).

Read by ``memtools check`` (every line), the per-read guard (``missing_index_files``: a few ``stat``
calls once per manifest generation) and ``memtools repair`` (which drops the indexes whose files are
gone, so that the table's ``finish_write`` builds them again). Tables on object storage have no
folder to ``stat``: only the indexes lance lists are compared there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memtools.store.tables import lance_fold

# The indexes each table's ``finish_write`` builds once it holds rows (vectors.py, entity_index.py,
# keyframe_index.py); the vector (ANN) index only from ``ANN_MIN_ROWS`` rows on.
EXPECTED_INDEXES: dict[str, tuple[str, ...]] = {
    "nodes": ("text", "video_id", "kind", "t_start", "t_end"),
    "entities": ("video_id",),
    "keyframes": ("video_id", "t", "id"),
}
ANN_TABLES = frozenset({"nodes", "keyframes"})


def describe(column: str) -> str:
    if column == "text":
        return "the full-text index"
    if column == "vector":
        return "the vector (ANN) index"
    return f"the index on {column}"


def vector_dim(table: Any) -> int:
    """The width of the table's ``vector`` column."""
    return int(table.schema.field("vector").type.list_size)


def table_folder(lance: Any, name: str) -> Path | None:
    """``vectors/NAME.lance`` of a table on disk; None on object storage."""
    return None if getattr(lance, "remote", False) else Path(lance.path) / f"{name}.lance"


def missing_index_files(table: Any, folder: Path | None) -> list[Any]:
    """The indexes lance lists whose files are gone (a ``stat`` per index; nothing on object storage)."""
    if folder is None:
        return []
    return [ix for ix in table.list_indices()
            if getattr(ix, "index_uuid", None) and not (folder / "_indices" / str(ix.index_uuid)).is_dir()]


def index_problems(table: Any, name: str, rows: int, folder: Path | None) -> list[str]:
    """Plain-words lines: the indexes the table should have and lacks, and those whose files are gone."""
    if rows == 0:
        return []  # lance indexes nothing in an empty table
    listed = table.list_indices()
    have = {tuple(ix.columns) for ix in listed}
    want = [*EXPECTED_INDEXES[name], *(["vector"] if name in ANN_TABLES and rows >= lance_fold.ANN_MIN_ROWS else [])]
    lines = [f"{name} table: {describe(column)} is missing" for column in want if (column,) not in have]
    for ix in missing_index_files(table, folder):
        lines.append(f"{name} table: the files of {describe(ix.columns[0])} are missing "
                     f"({name}.lance/_indices/{ix.index_uuid})")
    return lines


def drop_broken_indexes(table: Any, folder: Path | None) -> list[str]:
    """Drop the indexes whose files are gone (the table's ``finish_write`` builds them again); their columns."""
    dropped = []
    for ix in missing_index_files(table, folder):
        table.drop_index(ix.name)
        dropped.append(ix.columns[0])
    return dropped
