"""Writing an export archive: members streamed into a zip beside the target, hashed as they are written,
``manifest.json`` last, then the finished file renamed into place (a killed export leaves no archive,
only its ``.partial`` file, which the next export of that name replaces)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

from memtools.archive import format as fmt
from memtools.errors import ConfigError

FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # every member's zip time: the same memory exports to the same members


class ArchiveWriter:
    """A zip being written to ``<out>.partial``; ``finish(manifest)`` adds the manifest and renames it to ``out``."""

    def __init__(self, out: Path, *, overwrite: bool = False) -> None:
        self.out = Path(out)
        if self.out.is_dir():
            raise ConfigError(f"{self.out} is a folder; name the archive file to write (e.g. {self.out}/memory.zip)")
        if self.out.exists() and not overwrite:
            raise ConfigError(f"{self.out} exists; choose another name, or remove it first")
        if not self.out.parent.is_dir():
            raise ConfigError(f"{self.out.parent} is not a folder; create it first")
        self.partial = self.out.with_name(self.out.name + ".partial")
        self.files: dict[str, fmt.FileInfo] = {}
        self._zip = zipfile.ZipFile(self.partial, "w", allowZip64=True)

    @contextlib.contextmanager
    def member(self, name: str, *, compress: bool = True) -> Iterator[IO[bytes]]:
        """A member written as a stream (hashed and counted for the manifest)."""
        if fmt.member_problem(name) is not None or name in self.files:
            raise ValueError(f"not a member name of this format, or written twice: {name!r}")
        info = zipfile.ZipInfo(name, date_time=FIXED_TIME)
        info.compress_type = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
        hashed = _Hashing()
        with self._zip.open(info, "w", force_zip64=True) as handle:
            hashed.target = handle
            yield hashed  # type: ignore[misc]
        self.files[name] = fmt.FileInfo(bytes=hashed.size, sha256=hashed.hash.hexdigest())

    def add(self, name: str, data: bytes, *, compress: bool = True) -> None:
        with self.member(name, compress=compress) as handle:
            handle.write(data)

    def add_json(self, name: str, value: Any) -> None:
        self.add(name, json.dumps(value, ensure_ascii=False, indent=1).encode("utf-8"))

    def add_npy(self, name: str, array: np.ndarray) -> None:
        buffer = io.BytesIO()
        np.save(buffer, np.ascontiguousarray(array, dtype=np.float32), allow_pickle=False)
        self.add(name, buffer.getvalue(), compress=False)

    def add_file(self, name: str, path: Path) -> None:
        with open(path, "rb") as source, self.member(name, compress=False) as handle:
            while block := source.read(1 << 20):
                handle.write(block)

    def finish(self, manifest: fmt.ArchiveManifest) -> Path:
        manifest.files = dict(self.files)
        info = zipfile.ZipInfo(fmt.MANIFEST, date_time=FIXED_TIME)
        info.compress_type = zipfile.ZIP_DEFLATED
        self._zip.writestr(info, manifest.model_dump_json(indent=1))
        self._zip.close()
        with open(self.partial, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(self.partial, self.out)
        return self.out

    def abandon(self) -> None:
        with contextlib.suppress(OSError):
            self._zip.close()
        self.partial.unlink(missing_ok=True)


class _Hashing(io.RawIOBase):
    def __init__(self) -> None:
        self.target: IO[bytes] | None = None
        self.hash, self.size = hashlib.sha256(), 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        assert self.target is not None
        view = bytes(data)
        self.hash.update(view)
        self.size += len(view)
        self.target.write(view)
        return len(view)


__all__ = ["ArchiveWriter"]
