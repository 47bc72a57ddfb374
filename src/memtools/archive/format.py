"""The export archive's format: its name and version, the files it holds and the models of their rows.

One zip file (docs/export.md documents every file and field):

    manifest.json                       ArchiveManifest: format, version, embedder, engine, counts, files
    videos.jsonl                        one VideoGraph per line, as the store reads it back
    catalog.jsonl                       CatalogRow per video: title, duration, times, counts
    library/ids.jsonl                   LibraryId per line: the library ids a video's entities and people had
    library/counters.json               the next library entity and person numbers
    library/clusters.jsonl              ClusterRow per voice, face or named-speaker cluster (names, persons)
    vectors/texts-NNNN.jsonl            the texts of chunk NNNN, one JSON string per line
    vectors/vectors-NNNN.npy            their vectors: float32 (rows, dim), row i = line i
    voices/<video>.json, faces/<video>.json   biometric centroids (``--with-biometrics`` only)
    frames/<video>/<file>               keyframe images (``--with-keyframes`` only)

Version policy: ``FORMAT_VERSION`` grows by one whenever a reader of the previous version would misread
an archive (a file or field removed or changed in meaning); fields and files added so that an older
reader may ignore them keep the version. A reader refuses a newer version and reads every older one.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field

from memtools.schema import video_id_problem

FORMAT = "memtools-export"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
VIDEOS = "videos.jsonl"
CATALOG = "catalog.jsonl"
LIBRARY_IDS = "library/ids.jsonl"
COUNTERS = "library/counters.json"
CLUSTERS = "library/clusters.jsonl"
CHUNK_ROWS = 50_000
"""Texts per vector chunk: an import holds one chunk's rows beside the dict it builds (bounded parse memory)."""

MAX_MANIFEST_BYTES = 16 << 20
MAX_LINE_BYTES = 256 << 20  # one JSON line (one video's graph): far above any real video's
MAX_TOTAL_BYTES = 256 << 30  # what an archive may unpack to in all, whatever its manifest claims

_FIXED = frozenset({VIDEOS, CATALOG, LIBRARY_IDS, COUNTERS, CLUSTERS})
_CHUNK = re.compile(r"^vectors/(texts-\d{4}\.jsonl|vectors-\d{4}\.npy)$")
_PER_VIDEO = re.compile(r"^(voices|faces)/([^/]+)\.json$")
_FRAME = re.compile(r"^frames/([^/]+)/([A-Za-z0-9_][A-Za-z0-9._-]{0,199})$")


def member_problem(name: str) -> str | None:
    """What is wrong with a member name of an archive (None: it is one this format has). Only the names
    above are accepted, so no member can name a place outside where the import puts it (zip slip)."""
    if name == MANIFEST or name in _FIXED or _CHUNK.match(name):
        return None
    per_video, frame = _PER_VIDEO.match(name), _FRAME.match(name)
    video_id = per_video.group(2) if per_video else frame.group(1) if frame else None
    if video_id is not None:
        problem = video_id_problem(video_id)
        return None if problem is None else f"names a video id that {problem}"
    return "is not a file of this format (absolute or '..' paths, backslashes and unknown names are refused)"


def chunk_names(n: int) -> tuple[str, str]:
    return f"vectors/texts-{n:04d}.jsonl", f"vectors/vectors-{n:04d}.npy"


class FileInfo(BaseModel):
    """One member of the archive: its size unpacked and its SHA-256, checked before anything is written."""

    bytes: int = Field(ge=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class EmbedderName(BaseModel):
    name: str
    dim: int = Field(ge=1)


class Contents(BaseModel):
    """What the archive holds beyond the graphs, catalog and people."""

    vectors: bool = True
    biometrics: bool = False
    keyframes: bool = False


class ArchiveManifest(BaseModel):
    """``manifest.json``: read first; every other member must be listed in ``files``."""

    format: Literal["memtools-export"] = "memtools-export"
    format_version: int = Field(FORMAT_VERSION, ge=1)
    memtools_version: str = ""
    created_at: str = ""
    source_engine: str = ""  # the graph engine of the exported memory (an import may use another)
    schema_version: int = 0  # the memory's schema version (memtools.schema.SCHEMA_VERSION)
    embedder: EmbedderName
    image_embedder: EmbedderName | None = None  # keyframe image vectors are not carried: recomputed on import
    contents: Contents = Field(default_factory=Contents)
    counts: dict[str, int] = Field(default_factory=dict)
    chunks: int = Field(0, ge=0)  # vector chunks (vectors/*-0000 .. chunks-1)
    files: dict[str, FileInfo] = Field(default_factory=dict)


class CatalogRow(BaseModel):
    """``catalog.jsonl``: one exported video's catalog entry."""

    video_id: str
    title: str = ""
    duration: float = Field(0.0, ge=0)
    status: str = "ready"
    updated_at: str = ""
    recorded_at: str | None = None  # the recording start (also on the graph's video root)
    counts: dict[str, int] = Field(default_factory=dict)


class LibraryId(BaseModel):
    """``library/ids.jsonl``: a library id a video's entity or person had, kept by the import."""

    video_id: str
    entity_type: str  # PERSON, OBJECT, ... or person:voice / person:face / person:name
    key: str  # the entity's normalised name, or the cluster label
    lib_id: str = Field(pattern=r"^lib/(entity|person)_\d+$")


class Counters(BaseModel):
    """``library/counters.json``: the next numbers of new library entities and people."""

    next_number: int = Field(1, ge=1)
    next_person: int = Field(1, ge=1)


class ClusterRow(BaseModel):
    """``library/clusters.jsonl``: one voice, face or named-speaker cluster and its person (no vectors)."""

    video_id: str
    kind: str
    label: str
    name: str | None = None
    user_named: bool = False
    spans: list[tuple[float, float]] = Field(default_factory=list)
    canonical_id: str | None = None
    person_id: str | None = None


__all__ = ["CATALOG", "CHUNK_ROWS", "CLUSTERS", "COUNTERS", "FORMAT", "FORMAT_VERSION", "LIBRARY_IDS", "MANIFEST",
           "MAX_LINE_BYTES", "MAX_MANIFEST_BYTES", "MAX_TOTAL_BYTES", "VIDEOS", "ArchiveManifest", "CatalogRow",
           "ClusterRow", "Contents", "Counters", "EmbedderName", "FileInfo", "LibraryId", "chunk_names",
           "member_problem"]
