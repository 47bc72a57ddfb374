"""What a published version is: the files of a memory folder, listed with sizes and hashes.

Layout under ``s3://bucket/prefix``::

    LATEST.json                      {"version": 7, ...}: the version readers serve (one PUT: atomic)
    versions/000007/SNAPSHOT.json    every file of version 7 with its size and sha256
    versions/000007/files/...        the memory folder as it was (memtools.json, graph, vectors/, frames/, ...)

A version is whole once its ``SNAPSHOT.json`` is written; ``LATEST.json`` moves to it only after
that, so a reader never sees a half-written version. ``stage`` copies the folder's durable parts
(everything but locks, journals, temp files and ``work/``) while the caller holds the writers' lock.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path

from memtools.errors import StoreError

LATEST = "LATEST.json"
SNAPSHOT = "SNAPSHOT.json"
VERSIONS = "versions"
FILES = "files"
FORMAT = 1
KNOWN_FORMATS = (1,)
"""The formats of ``LATEST.json`` and ``SNAPSHOT.json`` this memtools reads; any other is refused."""
VERSION_DIR = re.compile(r"\d{6,}")
STAGING_PREFIX = ".publish-"
SKIPPED_TOP = {"work", "memtools.lock", ".write-intent", ".write-journal", "publish.lock", "faces", "reads.jsonl"}
"""Top-level names never published: checkpoints of builds, the writers' lock, a write's intent and journal,
the face clusters (biometric data stays on the machine that found it: docs/faces.md) and the audit log of
reads (``memtools serve --audit-reads``: who asked what stays where it was asked)."""
SKIPPED_SUFFIXES = (".tmp", ".part", "-journal", "-wal", "-shm", ".lock")
"""Temp files, and SQLite's side files (a SQLite catalog is copied whole through its backup API)."""
SQLITE_HEADER = b"SQLite format 3\x00"


def version_dir(version: int) -> str:
    return f"{VERSIONS}/{version:06d}"


def skipped(relative: Path) -> bool:
    """Whether a file of the memory folder (relative path) stays out of a snapshot."""
    top = relative.parts[0]
    name = relative.name
    return (top in SKIPPED_TOP or top.startswith(STAGING_PREFIX) or top.startswith(".memtools-")
            or name.endswith(SKIPPED_SUFFIXES) or name.startswith(".~"))


@dataclass
class FileEntry:
    path: str
    size: int
    sha256: str


@dataclass
class Snapshot:
    """``SNAPSHOT.json``: one version's files and what it was made from."""

    version: int
    generation: int
    memtools_version: str
    created_at: str
    files: list[FileEntry] = field(default_factory=list)
    format: int = FORMAT

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), indent=1).encode()

    @classmethod
    def from_json(cls, data: bytes, where: str) -> Snapshot:
        try:
            raw = json.loads(data)
            files = [FileEntry(**f) for f in raw.pop("files")]
            snapshot = cls(files=files, **raw)
        except (ValueError, TypeError, KeyError) as exc:
            raise StoreError(f"{where} is not a memtools snapshot listing ({exc}); publish the memory again") from exc
        check_format(snapshot.format, where)
        for f in snapshot.files:
            if Path(f.path).is_absolute() or ".." in Path(f.path).parts:
                raise StoreError(f"{where} lists a file outside the memory ({f.path!r}); publish the memory again")
        return snapshot


@dataclass
class Latest:
    """``LATEST.json``: the version readers serve."""

    version: int
    generation: int
    created_at: str
    format: int = FORMAT

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), indent=1).encode()

    @classmethod
    def from_json(cls, data: bytes, where: str) -> Latest:
        try:
            raw = json.loads(data)
            latest = cls(version=int(raw["version"]), generation=int(raw.get("generation", 0)),
                         created_at=str(raw.get("created_at", "")), format=raw.get("format", FORMAT))
        except (ValueError, TypeError, KeyError) as exc:
            raise StoreError(f"{where} is not a memtools LATEST pointer ({exc}); publish the memory again") from exc
        check_format(latest.format, where)
        return latest


def check_format(found: object, where: str) -> None:
    """``StoreError`` unless ``found`` (a listing's ``format``) is one this memtools reads."""
    if type(found) is int and found in KNOWN_FORMATS:
        return
    from memtools.version import __version__

    raise StoreError(f"{where} is in format {found!r}, which memtools {__version__} does not read (it reads format "
                     f"{', '.join(map(str, KNOWN_FORMATS))}): another memtools wrote it. Upgrade memtools here, or "
                     "publish with this one to another prefix")


def stage(folder: Path, staging: Path) -> None:
    """Copy the durable files of the memory ``folder`` into ``staging`` (the caller holds the writers' lock).

    Files inside lance tables (``*.lance/``) are hard-linked: lance never changes a data, index,
    deletion, transaction or version file it wrote (new versions are new files), so a link is as
    good as a copy and costs nothing; its small JSON hints are copied. A SQLite file
    (``videos.sqlite``) goes through SQLite's backup API, which includes what its write-ahead log
    holds. Every other file (the graph, the manifest, frames) is copied.
    """
    for root, dirs, files in os.walk(folder):
        here = Path(root)
        rel_dir = here.relative_to(folder)
        dirs[:] = [d for d in dirs if not skipped(rel_dir / d)]
        for name in files:
            rel = rel_dir / name
            if skipped(rel):
                continue
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if any(part.endswith(".lance") for part in rel.parts[:-1]) and not name.endswith(".json"):
                try:
                    os.link(here / name, target)
                    continue
                except OSError:
                    pass  # another filesystem, or links not allowed: copy
            if _is_sqlite(here / name):
                _backup_sqlite(here / name, target)
            else:
                shutil.copy2(here / name, target)


def _is_sqlite(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(len(SQLITE_HEADER)) == SQLITE_HEADER


def _backup_sqlite(source: Path, target: Path) -> None:
    import sqlite3

    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    try:
        dst = sqlite3.connect(target)
        try:
            src.backup(dst)
            dst.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, no side files to publish
        finally:
            dst.close()
    finally:
        src.close()


def list_files(staging: Path) -> list[FileEntry]:
    """Every file under ``staging`` with its size and sha256, in a stable order (never a file ``skipped`` names,
    such as a lock file left by the check of the staged copy)."""
    return [FileEntry(path.relative_to(staging).as_posix(), path.stat().st_size, sha256_of(path))
            for path in sorted(p for p in staging.rglob("*") if p.is_file() and not skipped(p.relative_to(staging)))]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
