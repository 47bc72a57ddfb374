"""The lance ``entities`` table: one row per canonical entity (see ``memtools.store.tables.entities``),
with its names, aliases, dated timeline (JSON) and a vector of its names and attributes.

It lives beside the ``nodes`` table in the same lance folder and is written in the same step
as the rest of a video (``Memory._write_batch``); a memory built before canonical entities
existed simply has no such table, and the entity tools say so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from memtools.errors import StoreError
from memtools.store.tables.lance_filter import quote, table_at
from memtools.store.tables.lance_fold import bitmaps_to_rebuild, fold, rebuild_as_btree
from memtools.store.tables.vectors import LanceIndex

TABLE = "entities"
_COLUMNS = ["id", "video_id", "name", "entity_type", "aliases", "description", "mentions", "t_first", "t_last",
            "timeline"]


def entities_schema(dim: int) -> pa.Schema:
    return pa.schema([
        ("id", pa.string()), ("video_id", pa.string()), ("name", pa.string()), ("entity_type", pa.string()),
        ("aliases", pa.string()), ("description", pa.string()), ("mentions", pa.string()),
        ("t_first", pa.float64()), ("t_last", pa.float64()), ("text", pa.string()), ("timeline", pa.string()),
        ("vector", pa.list_(pa.float32(), dim)),
    ])


@dataclass(frozen=True)
class EntityRow:
    id: str
    video_id: str
    name: str
    entity_type: str
    aliases: list[str]
    description: str
    mentions: list[str]
    t_first: float
    t_last: float
    timeline: list[dict[str, Any]] = field(repr=False)
    score: float = 0.0

    @classmethod
    def from_row(cls, row: dict[str, Any], score: float = 0.0) -> EntityRow:
        return cls(row["id"], row["video_id"], row["name"], row["entity_type"], json.loads(row["aliases"] or "[]"),
                   row["description"] or "", json.loads(row["mentions"] or "[]"), row["t_first"], row["t_last"],
                   json.loads(row["timeline"] or "[]"), score)


class EntityIndex:
    """Reads and writes of the ``entities`` table, over a ``LanceIndex``'s connection."""

    name = TABLE

    def __init__(self, lance: LanceIndex) -> None:
        self.lance = lance
        self._table = None
        self._pinned: int | None = None
        self._pinned_table = None

    def pin(self, version: int | None) -> None:
        """Read as of this table version (None: the latest), like ``LanceIndex.pin``: a reader
        beside a writer never sees the rows of a write whose graph step has not committed."""
        if version != self._pinned:
            self._pinned, self._pinned_table = version, None

    def reading_table(self):
        """The table reads use: the pinned version when one is set, else the latest."""
        table = self.table()
        if table is None or self._pinned is None or table.version == self._pinned:
            return table
        if self._pinned_table is None:
            self._pinned_table = table_at(self.lance._db, self.name, self._pinned)
        return self._pinned_table

    def schema(self) -> pa.Schema:
        return entities_schema(self.lance.dim)

    def table(self, create: bool = False):
        if self._table is None:
            try:
                db = self.lance._db
                if self.name in db.list_tables().tables:
                    self._table = db.open_table(self.name)
                elif create:
                    self._table = db.create_table(self.name, schema=self.schema())
            except StoreError:
                raise
            except Exception as exc:
                raise StoreError(f"vector store table {self.name!r} failed to open: {exc}") from exc
        return self._table

    def close_handles(self) -> None:
        """Let go of the table handles (``LanceIndex.close_handles``); the next use opens them again."""
        self._table = self._pinned_table = None

    def refresh(self) -> None:
        if self._table is not None:
            try:
                self._table.checkout_latest()
            except Exception:
                self._table = None

    # --- writes -------------------------------------------------------------------------

    def version(self) -> int | None:
        table = self.table()
        return None if table is None else table.version

    def replace_videos(self, video_ids: Sequence[str], rows: list[dict[str, Any]]) -> None:
        table = self.table(create=bool(rows))
        if table is None:
            return
        try:
            if video_ids and table.count_rows() > 0:
                table.delete("video_id IN (" + ", ".join(quote(v) for v in video_ids) + ")")
            if rows:
                table.add(pa.Table.from_pylist(rows, schema=self.schema()))
        except Exception as exc:
            raise StoreError(f"{self.name} table write failed: {exc}") from exc

    def restore(self, version: int | None) -> None:
        try:
            if version is None:
                if self.name in self.lance._db.list_tables().tables:
                    self.lance._db.drop_table(self.name)
                self._table = None
            else:
                table = self.table()
                table.checkout(version)
                table.restore()
        except Exception as exc:
            raise StoreError(f"could not roll the {self.name} table back to version {version}: {exc}") from exc

    def finish_write(self) -> None:
        table = self.table()
        if table is None or table.count_rows() == 0:
            return
        try:
            from lancedb.index import BTree

            indexes, scalar = table.list_indices(), [("video_id", BTree())]  # one value a video: see lance_fold
            if ("video_id",) not in {tuple(ix.columns) for ix in indexes}:
                table.create_index("video_id", config=scalar[0][1])
            rebuild_as_btree(table, bitmaps_to_rebuild(indexes, scalar))
            fold(table)  # compaction bounded, the index updated, old versions pruned
        except Exception as exc:
            raise StoreError(f"{self.name} table indexing failed: {exc}") from exc

    # --- reads --------------------------------------------------------------------------

    def exists(self) -> bool:
        return self.table() is not None

    def _rows(self, where: str, limit: int) -> list[dict[str, Any]]:
        table = self.reading_table()
        if table is None:
            return []
        try:
            return table.search().where(where).select(_COLUMNS).limit(limit).to_list()
        except Exception as exc:
            raise StoreError(f"entity lookup failed: {exc}") from exc

    def get(self, entity_id: str) -> EntityRow | None:
        rows = self._rows(f"id = {quote(entity_id)}", 1)
        return EntityRow.from_row(rows[0]) if rows else None

    def by_ids(self, entity_ids: Sequence[str]) -> list[EntityRow]:
        """These canonical entities (those the table holds), a few hundred ids per query."""
        out: list[EntityRow] = []
        for i in range(0, len(entity_ids), 500):
            chunk = entity_ids[i:i + 500]
            out += [EntityRow.from_row(r) for r in self._rows(f"id IN ({', '.join(quote(x) for x in chunk)})",
                                                                 len(chunk))]
        return out

    def places(self, video_ids: Sequence[str]) -> list[EntityRow]:
        """The LOCATION entities of these videos."""
        return self.with_places([], video_ids)[1]

    def with_places(self, entity_ids: Sequence[str],
                    video_ids: Sequence[str]) -> tuple[list[EntityRow], list[EntityRow]]:
        """These canonical entities, and the LOCATION entities of these videos: one query per 500 ids of each (a
        library timeline needs both, and each query has a fixed cost)."""
        ids, videos = list(dict.fromkeys(entity_ids)), list(dict.fromkeys(video_ids))
        found: dict[str, EntityRow] = {}
        for i in range(0, max(len(ids), len(videos)), 500):
            parts = [f"id IN ({', '.join(quote(x) for x in ids[i:i + 500])})"] if ids[i:i + 500] else []
            if videos[i:i + 500]:
                listed = ", ".join(quote(v) for v in videos[i:i + 500])
                parts.append(f"(entity_type = 'LOCATION' AND video_id IN ({listed}))")
            for r in self._rows(" OR ".join(parts), 100_000):
                found.setdefault(r["id"], EntityRow.from_row(r))
        wanted, places = set(ids), set(videos)
        return ([r for r in found.values() if r.id in wanted],
                [r for r in found.values() if r.entity_type == "LOCATION" and r.video_id in places])

    def of_video(self, video_id: str, limit: int = 10_000) -> list[EntityRow]:
        return [EntityRow.from_row(r) for r in self._rows(f"video_id = {quote(video_id)}", limit)]

    def by_name(self, name: str, video_id: str | None = None, limit: int = 50) -> list[EntityRow]:
        """Entities whose name or an alias has a word starting with ``name`` (case-insensitive):
        "ball" finds "a red ball" and "balls", not "football"."""
        text = " ".join(name.lower().split())
        needle = text.replace("'", "''").replace("%", "").replace("_", "")
        where = f"(lower(name) LIKE '%{needle}%' OR lower(aliases) LIKE '%{needle}%')"
        if video_id is not None:
            where += f" AND video_id = {quote(video_id)}"
        word = re.compile(r"(?<![a-z0-9])" + re.escape(text))
        rows = [EntityRow.from_row(r) for r in self._rows(where, 20 * limit)]
        return [r for r in rows if any(word.search(n.lower()) for n in (r.name, *r.aliases))][:limit]

    def search(self, vector: np.ndarray, limit: int, video_id: str | None = None) -> list[EntityRow]:
        table = self.reading_table()
        if table is None:
            return []
        try:
            query = table.search(vector.tolist(), vector_column_name="vector").distance_type("cosine")
            if video_id is not None:
                query = query.where(f"video_id = {quote(video_id)}", prefilter=True)
            rows = query.select([*_COLUMNS, "_distance"]).limit(limit).to_list()
        except Exception as exc:
            raise StoreError(f"entity search failed: {exc}") from exc
        return [EntityRow.from_row(r, 1.0 - float(r["_distance"])) for r in rows]
