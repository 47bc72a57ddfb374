"""What one entry of ``videos.sqlite`` (``memtools.store.catalog.videos``) holds, the sums kept over
them, and whether a cell read from the file is sound.

A cell edited by hand or cut short (counts that are not JSON, a status no write sets, an emptied
``meta`` table) must never become a ``JSONDecodeError`` or ``IndexError`` in a tool: each read
checks its cells here and raises ``DamagedCell``, which the catalog turns into ``MemoryDamaged``
naming the cell and ``memtools repair``. ``lenient_entry`` gives repair what the sound cells hold.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from memtools.ontology import SEARCHABLE_KINDS

SEARCHABLE = tuple(kind.value for kind in SEARCHABLE_KINDS)
STATUSES = ("ready", "building", "failed", "lost")
SUMS = ("rows", "ready", "in_graph", "entity_videos", "keyframe_vectors")
_CELLS = ("title", "duration", "status", "updated_at", "counts", "keyframe_vectors")


class VideoEntry(BaseModel):
    title: str = ""
    duration: float = 0.0
    status: str = "ready"  # ready | building | failed | lost
    updated_at: str = ""
    counts: dict[str, int] = {}
    keyframe_vectors: int = 0  # rows in the lance ``keyframes`` table (memories with an image embedder)


class VideoTotals(BaseModel):
    """The library's sums over its videos, kept in the manifest for the checks run before every read and write."""

    videos: int = 0
    rows: int = 0  # lance rows: each written video's profile row plus its searchable nodes (status != lost)
    ready: int = 0
    in_graph: int = 0  # videos the graph holds: written ones (they have counts) not marked lost
    entity_videos: int = 0  # ready videos with entities (their profiles live in the ``entities`` table)
    keyframe_vectors: int = 0  # of ready videos

    @classmethod
    def of(cls, entries: Iterable[VideoEntry]) -> VideoTotals:
        totals = cls()
        for entry in entries:
            totals.videos += 1
            for name, value in zip(SUMS, contributions(entry), strict=True):
                setattr(totals, name, getattr(totals, name) + value)
        return totals


def contributions(entry: VideoEntry) -> tuple[int, int, int, int, int]:
    """(rows, ready, in_graph, entity_videos, ready keyframe vectors) one entry adds to the totals."""
    written = bool(entry.counts) and entry.status != "lost"
    rows = (1 + sum(entry.counts.get(kind, 0) for kind in SEARCHABLE)) if written else 0
    ready = entry.status == "ready"
    return (rows, int(ready), int(written), int(ready and entry.counts.get("entity", 0) > 0),
            entry.keyframe_vectors if ready else 0)


class DamagedCell(ValueError):
    """A cell of ``videos.sqlite`` that is not what its column holds (its text names the cell)."""


def is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _counts(text: Any) -> dict[str, int] | None:
    """A ``counts`` cell: a JSON object of counts (None: it is not one)."""
    try:
        counts = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    ok = isinstance(counts, dict) and all(is_count(n) for n in counts.values())
    return counts if ok else None


def cell_fault(row: tuple) -> str | None:
    """What is wrong with one row's cells (title, duration, status, updated_at, counts, keyframe_vectors):
    None when each holds what its column should."""
    title, duration, status, updated_at, counts, frames = row
    for name, ok in (("title", isinstance(title, str)),
                     ("duration", type(duration) in (int, float) and duration >= 0),
                     ("status", status in STATUSES), ("updated_at", isinstance(updated_at, str)),
                     ("counts", _counts(counts) is not None), ("keyframe_vectors", is_count(frames))):
        if not ok:
            return f"column {name} holds {_shown(row[_CELLS.index(name)])}"
    return None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def entry_of(vid: str, row: tuple) -> VideoEntry:
    fault = cell_fault(row)
    if fault is not None:
        raise DamagedCell(f"the entry of video {vid!r} is damaged ({fault})")
    title, duration, status, updated_at, counts, frames = row
    return VideoEntry.model_construct(title=title, duration=float(duration), status=status, updated_at=updated_at,
                                      counts=json.loads(counts), keyframe_vectors=frames)


def generation_of(rows: list[tuple]) -> int:
    if len(rows) != 1 or not is_count(rows[0][0]):
        raise DamagedCell("its generation (the table meta) is missing or not a number")
    return int(rows[0][0])


def sums_of(row: tuple | None, what: str) -> VideoTotals:
    if row is None or not all(type(n) in (int, float) and n == int(n) for n in row):
        raise DamagedCell(f"its {what} (the table totals) are missing or not numbers")
    return VideoTotals(**dict(zip(("videos", *SUMS), (int(n) for n in row), strict=True)))


def lenient_entry(row: tuple) -> tuple[VideoEntry, bool]:
    """An entry from whatever cells of a row are sound (a damaged one takes its default; a damaged status
    reads ``failed``: the graph tells repair if the video was written), and whether any cell was damaged."""
    title, duration, status, updated_at, counts, frames = row
    entry = VideoEntry(title=title if isinstance(title, str) else "",
                       duration=float(duration) if type(duration) in (int, float) and duration >= 0 else 0.0,
                       status=status if status in STATUSES else "failed",
                       updated_at=updated_at if isinstance(updated_at, str) else "",
                       counts=_counts(counts) or {}, keyframe_vectors=frames if is_count(frames) else 0)
    return entry, cell_fault(row) is not None
