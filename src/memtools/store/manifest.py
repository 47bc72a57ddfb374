"""``memtools.json``: what a memory folder holds and how it was built.

Written atomically (temp file + rename) so a reader never sees half a manifest. The
``generation`` counter goes up with every committed write; readers compare it to notice
new data without a restart.
"""

from __future__ import annotations

import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from memtools.errors import IncompatibleMemory, MemoryDamaged, MemoryNotFound
from memtools.schema import SCHEMA_VERSION

MANIFEST = "memtools.json"


class EmbedderInfo(BaseModel):
    name: str
    dim: int


class VideoEntry(BaseModel):
    title: str = ""
    duration: float = 0.0
    status: str = "ready"  # ready | building | failed
    updated_at: str = ""
    counts: dict[str, int] = Field(default_factory=dict)
    keyframe_vectors: int = 0  # rows in the lance ``keyframes`` table (memories with an image embedder)


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
    videos: dict[str, VideoEntry] = Field(default_factory=dict)

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


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def read_manifest(folder: Path) -> Manifest:
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise MemoryNotFound(
            f"no memtools memory at {folder} ({MANIFEST} is missing); create one with "
            "`memtools import-captions` or `memtools build`"
        )
    try:
        return Manifest.model_validate_json(path.read_text(encoding="utf-8"))
    except (ValidationError, UnicodeDecodeError, OSError) as exc:
        raise MemoryDamaged(f"{path} is damaged ({_reason(exc)}); restore it from a backup, or move the folder "
                            "away and import the videos again") from exc


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
    folder = Path(folder)
    fd, tmp = tempfile.mkstemp(prefix=".memtools-", suffix=".json", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(manifest.model_dump_json(indent=2))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, folder / MANIFEST)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
