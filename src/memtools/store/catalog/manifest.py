"""``memtools.json``: what a memory folder holds and how it was built.

Written atomically (temp file + rename) so a reader never sees half a manifest. The
``generation`` counter goes up with every committed write; readers compare it to notice
new data without a restart.

The manifest keeps the library-level fields only; each video's entry lives in ``videos.sqlite``
(``memtools.store.catalog.videos``), read through ``Manifest.videos``, a read-only mapping at the
manifest's generation. A manifest of schema version 1 still lists its videos itself ("legacy"):
it is moved into the catalog when the memory is opened with no writer on it, or by the first writer
(``migrate_legacy``); until then readers serve that list.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from memtools.errors import IncompatibleMemory, MemoryDamaged, MemoryNotFound
from memtools.schema import SCHEMA_VERSION
from memtools.store.catalog.videos import VideoCatalog, VideoEntry, VideoTotals
from memtools.store.faults import fault_point

MANIFEST = "memtools.json"
LEGACY_SCHEMA = 1  # manifests of this version list every video in memtools.json
CACHED_CATALOGS = 32  # open catalogs kept per process (their connections are reopened on demand)


class EmbedderInfo(BaseModel):
    name: str
    dim: int


__all__ = ["MANIFEST", "EmbedderInfo", "Manifest", "VideoEntry", "VideoTotals", "VideoView", "read_manifest",
           "write_manifest"]


class Manifest(BaseModel):
    format: str = "memtools-memory"
    schema_version: int = SCHEMA_VERSION
    embedder: EmbedderInfo
    image_embedder: EmbedderInfo | None = None  # set once keyframes are embedded (visual search)
    generation: int = 0
    tables: str | None = None  # lance tables on object storage (s3://...); None: vectors/ in the folder
    graph_engine: str = "kuzu"  # kuzu | ladybug (memtools.store.engines); fixed when the memory is created
    # lance table versions of the last committed write (readers beside a writer read these, see LanceIndex.pin)
    table_versions: dict[str, int] = Field(default_factory=dict)
    created_at: str = Field(default_factory=lambda: now())
    totals: VideoTotals | None = None  # the sums over the catalog at this generation (memtools.store.integrity.checker)
    _folder: Path | None = PrivateAttr(default=None)
    _legacy: dict[str, VideoEntry] | None = PrivateAttr(default=None)  # schema 1: the videos memtools.json lists
    _legacy_totals: VideoTotals | None = PrivateAttr(default=None)  # their sums, counted once (read-only)

    @property
    def videos(self) -> VideoView:
        """Every video's entry, read-only, as of this manifest's generation (writes go through the catalog)."""
        catalog = catalog_for(self._folder) if self._folder is not None and self._legacy is None else None
        return VideoView(catalog, self.generation, self._legacy)

    @property
    def legacy(self) -> bool:
        """Whether this manifest still lists its videos itself (schema 1, not yet migrated)."""
        return self._legacy is not None

    @property
    def catalog(self) -> VideoCatalog:
        """The folder's ``videos.sqlite`` (the writer's way to change entries)."""
        if self._folder is None:
            raise ValueError("this manifest was not read from a memory folder")
        return catalog_for(self._folder)

    def video_totals(self) -> VideoTotals:
        """The sums over the videos at this generation: kept in the manifest, else counted."""
        if self.totals is not None:
            return self.totals
        if self._legacy is not None:
            if self._legacy_totals is None:
                self._legacy_totals = VideoTotals.of(self._legacy.values())
            return self._legacy_totals
        return self.catalog.recount() if self._folder is not None else VideoTotals()

    def check_compatible(self, path: Path, embedder_name: str | None, dim: int | None) -> None:
        if self.schema_version > SCHEMA_VERSION:
            raise IncompatibleMemory(
                f"memory at {path} uses schema version {self.schema_version}, but this memtools reads up to "
                f"version {SCHEMA_VERSION}; upgrade memtools (pip install -U memtools) to open it"
            )
        if embedder_name is not None and (embedder_name != self.embedder.name or dim != self.embedder.dim):
            raise IncompatibleMemory(
                f"memory at {path} was built with embedder {self.embedder.name!r} (dim {self.embedder.dim}), "
                f"but it was opened with {embedder_name!r} (dim {dim}); vectors from different models cannot be "
                f"compared. Open it with the same embedder, or build a new memory with this one"
            )


    def check_image_embedder(self, path: Path, name: str, dim: int) -> None:
        """A memory's keyframe vectors can only be searched or extended with the model that made them."""
        info = self.image_embedder
        if info is not None and (info.name != name or info.dim != dim):
            raise IncompatibleMemory(
                f"memory at {path} embeds its keyframes with {info.name!r} (dim {info.dim}), not {name!r} (dim {dim}); "
                f"use the same image embedder, or build a new memory with this one"
            )


class _Read(BaseModel):
    """``memtools.json`` as read: the library-level fields (checked by ``Manifest``) and, in a legacy
    one (schema 1), ``videos``."""

    model_config = ConfigDict(extra="allow")
    videos: dict[str, VideoEntry] | None = None


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def read_manifest(folder: Path) -> Manifest:
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise MemoryNotFound(
            f"no memtools memory at {folder} ({MANIFEST} is missing); create one with "
            "`memtools import-captions` or `memtools build`"
        )
    try:
        read = _Read.model_validate_json(path.read_bytes())  # one pass, in pydantic's parser
        listed = read.videos
        manifest = Manifest.model_validate(read.model_extra or {})
        if listed is not None or manifest.schema_version <= LEGACY_SCHEMA:
            manifest._legacy = listed or {}
    except (ValidationError, UnicodeDecodeError, OSError) as exc:
        raise MemoryDamaged(f"{path} is damaged ({_reason(exc)}); restore it from a backup, or move the folder "
                            "away and import the videos again") from exc
    manifest._folder = Path(folder)
    return manifest


def _reason(exc: Exception) -> str:
    """One line for a manifest that cannot be read (pydantic's own text spans lines and links its docs)."""
    if isinstance(exc, ValidationError):
        error = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in error["loc"])
        if error["type"].startswith("json"):
            return f"not valid JSON: {error['msg']}"
        return f"{where}: {error['msg']}" if where else error["msg"]
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    return (exc.strerror if isinstance(exc, OSError) else None) or str(exc)


def write_manifest(folder: Path, manifest: Manifest) -> None:
    """Write ``memtools.json`` by rename (a legacy manifest keeps listing its videos)."""
    folder = Path(folder)
    data = manifest.model_dump(mode="json")
    if manifest._legacy is not None:
        data["videos"] = {vid: entry.model_dump(mode="json") for vid, entry in manifest._legacy.items()}
    fd, tmp = tempfile.mkstemp(prefix=".memtools-", suffix=".json", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(data, indent=2))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, folder / MANIFEST)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    manifest._folder = folder


def migrate_legacy(folder: Path) -> Manifest | None:
    """Move the videos a legacy manifest lists into ``videos.sqlite`` (the caller holds ``memtools.lock``).
    Crash-safe: the catalog is written whole and renamed in first, then the manifest without its list
    (schema version up, so an older memtools refuses the memory instead of seeing no videos); a kill in
    between leaves the legacy manifest, and the next writer does it again. Returns the new manifest, or
    None when there was nothing to migrate."""
    manifest = read_manifest(folder)
    if manifest._legacy is None:
        return None
    catalog = VideoCatalog.create(Path(folder), manifest._legacy, manifest.generation)
    fault_point("migrate-catalog-written")
    manifest._legacy = None
    manifest.schema_version = max(manifest.schema_version, SCHEMA_VERSION)
    manifest.totals = catalog.totals()
    write_manifest(folder, manifest)
    return manifest


_catalogs: OrderedDict[str, VideoCatalog] = OrderedDict()
_catalogs_lock = threading.Lock()


def catalog_for(folder: Path) -> VideoCatalog:
    """The process's ``VideoCatalog`` of a memory folder (a few are kept open; the oldest is closed)."""
    key = os.path.abspath(folder)
    with _catalogs_lock:
        catalog = _catalogs.get(key)
        if catalog is None:
            catalog = _catalogs[key] = VideoCatalog(Path(key))
            if len(_catalogs) > CACHED_CATALOGS:
                _catalogs.popitem(last=False)[1].close()
        _catalogs.move_to_end(key)
        return catalog


class VideoView(Mapping[str, VideoEntry]):
    """``Manifest.videos``: the entries as a read-only mapping, at the manifest's generation: a point
    lookup for ``in`` / ``[]`` / ``.get``, a COUNT for ``len``, rows streamed in id order by iteration.
    Writes go through ``VideoCatalog`` (the write path of ``memtools.store.writes.batch``); a legacy manifest
    that still lists its videos (not yet migrated: see ``migrate_legacy``) is served from that list."""

    def __init__(self, catalog: VideoCatalog | None, generation: int,
                 legacy: dict[str, VideoEntry] | None = None) -> None:
        self._catalog, self._generation, self._legacy = catalog, generation, legacy

    def __getitem__(self, video_id: str) -> VideoEntry:
        entry = self.get(video_id)
        if entry is None:
            raise KeyError(video_id)
        return entry

    def get(self, video_id: str, default: Any = None) -> Any:
        if self._legacy is not None:
            found = self._legacy.get(video_id)
            return default if found is None else found.model_copy(deep=True)
        if not isinstance(video_id, str) or self._catalog is None:
            return default
        found = self._catalog.get(video_id, self._generation)
        return default if found is None else found

    def __contains__(self, video_id: object) -> bool:
        return isinstance(video_id, str) and self.get(video_id) is not None

    def __len__(self) -> int:
        if self._legacy is not None:
            return len(self._legacy)
        return 0 if self._catalog is None else self._catalog.count(self._generation)

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids())

    def items(self, status: str | None = None) -> Iterator[tuple[str, VideoEntry]]:  # type: ignore[override]
        """(id, entry) in id order; ``status``: only entries with that status (filtered in SQL)."""
        if self._legacy is not None:
            return iter([(vid, e.model_copy(deep=True)) for vid, e in sorted(self._legacy.items())
                         if status is None or e.status == status])
        return iter(()) if self._catalog is None else self._catalog.items(self._generation, status)

    def values(self) -> Iterator[VideoEntry]:  # type: ignore[override]
        return (entry for _, entry in self.items())

    def page(self, offset: int, limit: int, needle: str = "") -> tuple[list[tuple[str, VideoEntry]], int]:
        """One page of (id, entry) in id order whose id or title contains ``needle`` (lower case), and
        how many match (the catalog reads only the page)."""
        if self._legacy is not None:  # only the page's entries are copied
            found = [(vid, e) for vid, e in sorted(self._legacy.items())
                     if needle in vid.lower() or needle in e.title.lower()]
            return [(vid, e.model_copy(deep=True)) for vid, e in found[offset:offset + limit]], len(found)
        if self._catalog is None:
            return [], 0
        return self._catalog.page(self._generation, offset, limit, needle)

    def ids(self, status: str | None = None) -> list[str]:
        """The video ids in order; ``status``: only those with that status."""
        if self._legacy is not None:
            return sorted(vid for vid, e in self._legacy.items() if status is None or e.status == status)
        return [] if self._catalog is None else self._catalog.ids(self._generation, status)
