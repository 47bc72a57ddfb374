"""Reading an export archive as untrusted input: every check runs before the import writes anything.

``ArchiveReader(path)`` opens the zip, reads ``manifest.json`` (format, version, the list of files),
refuses a member whose name is not one of the format's (zip slip: nothing is ever extracted by the
name a member gives), a member the manifest does not list or lists with another size, a total past
``MAX_TOTAL_BYTES``, and a newer format version. ``verify()`` then reads every member once: its
SHA-256 and size must be the manifest's (a member never yields more bytes than declared, so a
lying header cannot unpack past it) and every JSON line and vector chunk must parse and validate.
Only then does the import read the data again to write it.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, TypeVar

import numpy as np
from pydantic import BaseModel, ValidationError

from memtools.archive import format as fmt
from memtools.errors import ImportFormatError
from memtools.schema import VideoGraph
from memtools.store.tables.faces import Face
from memtools.store.tables.voices import Voice

M = TypeVar("M", bound=BaseModel)
READ_BLOCK = 1 << 20


class ArchiveReader:
    """An export archive opened for reading (a context manager)."""

    def __init__(self, path: Path, *, max_bytes: int = fmt.MAX_TOTAL_BYTES) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise ImportFormatError(f"{self.path} is not a file; pass the archive `memtools export` wrote")
        try:
            self._zip = zipfile.ZipFile(self.path)
        except (zipfile.BadZipFile, OSError) as exc:
            raise ImportFormatError(f"{self.path} is not a memtools export (not a readable zip file: {exc})") from exc
        try:
            self.manifest, self.manifest_sha256 = self._read_manifest()
            self._check_members(max_bytes)
        except BaseException:
            self._zip.close()
            raise

    def __enter__(self) -> ArchiveReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._zip.close()

    def _bad(self, what: str) -> ImportFormatError:
        return ImportFormatError(f"{self.path}: {what}; the archive is damaged or not a memtools export "
                                 "(make it again with `memtools export`)")

    def _read_manifest(self) -> tuple[fmt.ArchiveManifest, str]:
        try:
            info = self._zip.getinfo(fmt.MANIFEST)
        except KeyError:
            raise self._bad(f"it holds no {fmt.MANIFEST}") from None
        if info.file_size > fmt.MAX_MANIFEST_BYTES:
            raise self._bad(f"{fmt.MANIFEST} is {info.file_size:,} bytes (at most {fmt.MAX_MANIFEST_BYTES:,})")
        with self._zip.open(info) as handle:
            raw = handle.read(fmt.MAX_MANIFEST_BYTES + 1)
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise self._bad(f"{fmt.MANIFEST} is not JSON ({exc})") from exc
        if not isinstance(data, dict) or data.get("format") != fmt.FORMAT:
            raise self._bad(f"{fmt.MANIFEST} does not name the format {fmt.FORMAT!r}")
        version = data.get("format_version")
        if isinstance(version, int) and not isinstance(version, bool) and version > fmt.FORMAT_VERSION:
            raise ImportFormatError(
                f"{self.path} is a memtools export of format version {version}, made by a newer memtools "
                f"({data.get('memtools_version') or 'unknown version'}); this one reads versions up to "
                f"{fmt.FORMAT_VERSION}: upgrade memtools (pip install -U memtools) to import it")
        try:
            manifest = fmt.ArchiveManifest.model_validate(data)
        except ValidationError as exc:
            raise self._bad(f"{fmt.MANIFEST} is not valid: {_first_error(exc)}") from exc
        return manifest, hashlib.sha256(raw).hexdigest()

    def _check_members(self, max_bytes: int) -> None:
        names = [i.filename for i in self._zip.infolist()]
        if len(set(names)) != len(names):
            raise self._bad("a member name appears twice")
        listed = self.manifest.files
        for info in self._zip.infolist():
            if info.filename == fmt.MANIFEST:
                continue
            problem = fmt.member_problem(info.filename)
            if problem:
                raise self._bad(f"member {info.filename[:200]!r} {problem}")
            if info.filename not in listed:
                raise self._bad(f"member {info.filename!r} is not listed in {fmt.MANIFEST}")
            if info.file_size != listed[info.filename].bytes:
                raise self._bad(f"member {info.filename!r} unpacks to {info.file_size:,} bytes, not the "
                                f"{listed[info.filename].bytes:,} its manifest lists")
        missing = sorted(set(listed) - set(names))
        if missing:
            raise self._bad(f"{len(missing)} listed file(s) are missing, first {missing[0]!r}")
        for name in listed:
            problem = fmt.member_problem(name)
            if problem:
                raise self._bad(f"{fmt.MANIFEST} lists {name[:200]!r}, which {problem}")
        total = sum(f.bytes for f in listed.values())
        if total > max_bytes:
            raise self._bad(f"it unpacks to {total:,} bytes, more than the {max_bytes:,} allowed")
        for name in (fmt.VIDEOS, fmt.CATALOG):
            if name not in listed:
                raise self._bad(f"it holds no {name}")
        chunks = {n for i in range(self.manifest.chunks) for n in fmt.chunk_names(i)}
        extra = sorted(n for n in listed if n.startswith("vectors/") and n not in chunks)
        if extra or not chunks <= set(listed):
            raise self._bad(f"its vector chunks do not match the manifest's count ({self.manifest.chunks})")

    # --- reading members ----------------------------------------------------------------

    def names(self, prefix: str) -> list[str]:
        return sorted(n for n in self.manifest.files if n.startswith(prefix))

    def has(self, name: str) -> bool:
        return name in self.manifest.files

    @contextlib.contextmanager
    def open(self, name: str) -> Iterator[_Checked]:
        """A member as a stream that checks its size and SHA-256 against the manifest when read to its end."""
        info = self.manifest.files[name]
        with self._zip.open(name) as raw:
            yield _Checked(raw, name, info, self)

    def read(self, name: str) -> bytes:
        with self.open(name) as handle:
            return handle.read()

    def json(self, name: str, model: type[M]) -> M:
        try:
            return model.model_validate_json(self.read(name))
        except ValidationError as exc:
            raise self._bad(f"{name} is not valid: {_first_error(exc)}") from exc

    def rows(self, name: str, model: type[M]) -> Iterator[M]:
        """The validated rows of a JSON-lines member (an absent optional member has none)."""
        if not self.has(name):
            return
        with self.open(name) as handle:
            for n, line in enumerate(_lines(handle, name, self), 1):
                if line.strip():
                    try:
                        yield model.model_validate_json(line)
                    except ValidationError as exc:
                        raise self._bad(f"{name} line {n} is not valid: {_first_error(exc)}") from exc

    def videos(self) -> Iterator[VideoGraph]:
        return self.rows(fmt.VIDEOS, VideoGraph)

    def chunk(self, n: int) -> tuple[list[str], np.ndarray]:
        """Vector chunk ``n``: its texts and their float32 vectors (rows, dim)."""
        texts_name, vectors_name = fmt.chunk_names(n)
        texts: list[str] = []
        with self.open(texts_name) as handle:
            for line in _lines(handle, texts_name, self):
                try:
                    text = json.loads(line)
                except ValueError as exc:
                    raise self._bad(f"{texts_name} holds a line that is not JSON ({exc})") from exc
                if not isinstance(text, str):
                    raise self._bad(f"{texts_name} holds a line that is not a JSON string")
                texts.append(text)
        try:
            vectors = np.load(io.BytesIO(self.read(vectors_name)), allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise self._bad(f"{vectors_name} is not a .npy array ({exc})") from exc
        dim = self.manifest.embedder.dim
        if vectors.dtype != np.float32 or vectors.shape != (len(texts), dim):
            raise self._bad(f"{vectors_name} holds {vectors.dtype} {vectors.shape}, not float32 ({len(texts)}, {dim})")
        if not np.isfinite(vectors).all():
            raise self._bad(f"{vectors_name} holds values that are not finite")
        return texts, vectors

    def verify(self) -> dict[str, int]:
        """Read every member once (sizes, SHA-256, JSON, models, vector shapes); counts of what was read."""
        seen: dict[str, int] = {"videos": 0, "texts": 0}
        ids: set[str] = set()
        for graph in self.videos():
            if graph.video_id in ids:
                raise self._bad(f"video {graph.video_id!r} appears twice in {fmt.VIDEOS}")
            try:
                graph.check()
            except ValueError as exc:
                raise self._bad(f"video {graph.video_id!r} in {fmt.VIDEOS} is inconsistent: {exc}") from exc
            ids.add(graph.video_id)
        seen["videos"] = len(ids)
        catalog = {row.video_id for row in self.rows(fmt.CATALOG, fmt.CatalogRow)}
        if catalog != ids:
            raise self._bad(f"{fmt.CATALOG} and {fmt.VIDEOS} list different videos")
        for model, name in ((fmt.LibraryId, fmt.LIBRARY_IDS), (fmt.ClusterRow, fmt.CLUSTERS)):
            seen[name] = sum(1 for _ in self.rows(name, model))
        if self.has(fmt.COUNTERS):
            self.json(fmt.COUNTERS, fmt.Counters)
        for n in range(self.manifest.chunks):
            seen["texts"] += len(self.chunk(n)[0])
        for name in self.manifest.files:
            if name.startswith(("voices/", "faces/", "frames/")):
                video = name.split("/")[1].removesuffix(".json")
                if video not in ids:
                    raise self._bad(f"{name} belongs to no video of the archive")
                if name.startswith("frames/"):
                    self.read(name)
                else:
                    self.clusters_file(name)
        return seen

    def clusters_file(self, name: str) -> list[Voice] | list[Face]:
        """The validated voice or face clusters of ``voices/<video>.json`` or ``faces/<video>.json``."""
        key, model = ("voices", Voice) if name.startswith("voices/") else ("faces", Face)
        try:
            data = json.loads(self.read(name))
            rows = data[key] if isinstance(data, dict) and isinstance(data.get(key), list) else None
            if rows is None:
                raise ValueError(f"no list {key!r}")
            return [model.model_validate(r) for r in rows]  # type: ignore[return-value]
        except (ValueError, ValidationError) as exc:
            raise self._bad(f"{name} is not valid ({str(exc).splitlines()[0]})") from exc


class _Checked(io.RawIOBase):
    """A member's stream, held to the manifest's size and hash."""

    def __init__(self, raw: IO[bytes], name: str, info: fmt.FileInfo, reader: ArchiveReader) -> None:
        self.raw, self.name, self.info, self.reader = raw, name, info, reader
        self.hash, self.left = hashlib.sha256(), info.bytes

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            data = self.raw.read(min(len(buffer), self.left + 1))
        except (zipfile.BadZipFile, OSError, EOFError) as exc:  # a CRC error, a truncated file
            raise self.reader._bad(f"member {self.name!r} cannot be read ({exc})") from exc
        if len(data) > self.left:
            raise self.reader._bad(f"member {self.name!r} unpacks past its listed {self.info.bytes:,} bytes")
        self.left -= len(data)
        self.hash.update(data)
        if not data and (self.left or self.hash.hexdigest() != self.info.sha256):
            raise self.reader._bad(f"member {self.name!r} does not match its SHA-256 in the manifest")
        buffer[:len(data)] = data
        return len(data)


def _lines(handle: _Checked, name: str, reader: ArchiveReader) -> Iterator[str]:
    stream = io.BufferedReader(handle, READ_BLOCK)
    while True:
        line = stream.readline(fmt.MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > fmt.MAX_LINE_BYTES:
            raise reader._bad(f"{name} holds a line longer than {fmt.MAX_LINE_BYTES:,} bytes")
        try:
            yield line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise reader._bad(f"{name} is not UTF-8 ({exc})") from exc


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ())) or "value"
    return f"{where}: {err.get('msg', 'invalid')}"


__all__ = ["ArchiveReader"]
