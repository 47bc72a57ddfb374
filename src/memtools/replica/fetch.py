"""Bringing a published version to this machine: a cache folder per server process, whole versions only.

``ServerCache`` owns ``<cache>/<bucket>/<prefix>/server-XXXX/`` while its lock file is held;
a server that starts removes the folders of servers that are gone (their lock is free).
``download_version`` fetches every file of a version's ``SNAPSHOT.json`` into a temp folder,
checks sizes and sha256 hashes and that every part a memory needs is there (``missing_parts``), and renames
the folder to ``v<NNNNNN>-...`` only when all is whole.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO

from memtools.errors import ConfigError, MemoryNotFound, MemtoolsError, StoreError
from memtools.replica.bucket import Bucket
from memtools.replica.publish import read_latest
from memtools.replica.snapshot import FILES, SNAPSHOT, FileEntry, Latest, Snapshot, sha256_of, version_dir
from memtools.store.file_lock import try_lock, unlock

CACHE_ENV = "MEMTOOLS_CACHE_DIR"
DOWNLOAD_THREADS = 8
SWEEP_LOCK = ".sweep.lock"


def default_cache_dir() -> Path:
    """``$MEMTOOLS_CACHE_DIR``, else ``$XDG_CACHE_HOME/memtools/replicas``, else ``~/.cache/memtools/replicas``."""
    if os.environ.get(CACHE_ENV, "").strip():
        return Path(os.environ[CACHE_ENV].strip())
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "memtools" / "replicas"


def latest_of(bucket: Bucket) -> Latest:
    """The version ``LATEST.json`` names, or ``MemoryNotFound`` saying nothing was published there yet."""
    latest = read_latest(bucket)
    if latest is None:
        raise MemoryNotFound(f"nothing is published at {bucket.uri} yet (no LATEST.json): run `memtools publish "
                             f"--memory DIR {bucket.uri}` where the memory is, or check the prefix")
    return latest


class ServerCache:
    """This server process's own folder under the cache: held by a lock file while the server runs."""

    def __init__(self, root: Path, bucket: Bucket) -> None:
        base = root / bucket.bucket / bucket.prefix.replace("/", "__")
        try:
            base.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create the replica cache folder {base} ({exc.strerror}); give a writable one "
                              "with --cache-dir") from exc
        with _held(base / SWEEP_LOCK):  # no server is between creating its folder and locking it meanwhile
            for lock_file in base.glob("server-*.lock"):
                _remove_if_gone(lock_file)
            self.folder = Path(tempfile.mkdtemp(prefix="server-", dir=base))
            self._handle: IO[str] | None = open(f"{self.folder}.lock", "a+")  # noqa: SIM115 - held while serving
            if not try_lock(self._handle):
                raise StoreError(f"cannot lock the replica cache folder {self.folder}")

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        if self._handle is not None:
            Path(self._handle.name).unlink(missing_ok=True)
            unlock(self._handle)
            self._handle.close()
            self._handle = None


def download_version(bucket: Bucket, version: int, into: Path,
                     have: tuple[Path, Snapshot] | None = None) -> tuple[Path, Snapshot, int]:
    """Version ``version`` whole in ``into/v<NNNNNN>-<random>`` (sizes and hashes checked), its snapshot listing
    and the bytes downloaded. ``have``: a version already here (its folder and listing); its files that are
    unchanged are hard-linked (and checked) instead of downloaded."""
    where = f"{bucket.uri}/{version_dir(version)}/{SNAPSHOT}"
    data = bucket.read_bytes(f"{version_dir(version)}/{SNAPSHOT}")
    if data is None:
        raise StoreError(f"{where} is missing: version {version} is not whole (removed by a newer publish?)")
    snapshot = Snapshot.from_json(data, where)
    incoming = Path(tempfile.mkdtemp(prefix=f".incoming-{version:06d}-", dir=into))
    final = incoming.with_name(incoming.name.replace(".incoming-", "v", 1))  # unique: an old copy may be in use
    try:
        local = {} if have is None else {(f.path, f.size, f.sha256): have[0] / f.path for f in have[1].files}
        with ThreadPoolExecutor(DOWNLOAD_THREADS, thread_name_prefix="memtools-replica") as pool:
            fetched = sum(pool.map(lambda f: _fetch(bucket, version, f, incoming, local), snapshot.files))
        missing = missing_parts(incoming)
        if missing:
            raise StoreError(f"{bucket.uri} version {version} lacks part(s) every memory needs: {'; '.join(missing)}; "
                             f"it is not served. Publish the memory again (`memtools publish` checks it first)")
        incoming.rename(final)
    except BaseException:
        shutil.rmtree(incoming, ignore_errors=True)
        raise
    return final, snapshot, fetched


def missing_parts(folder: Path) -> list[str]:
    """What a downloaded version lacks of the parts every memory needs: ``memtools.json``, ``videos.sqlite``
    (a schema-1 manifest lists its videos itself), the graph file of its engine, and the lance tables its
    manifest implies (``memtools.store.integrity.checker.quick_problems``)."""
    from memtools.store.catalog.manifest import MANIFEST, read_manifest
    from memtools.store.integrity.checker import quick_problems

    if not (folder / MANIFEST).is_file():
        return [f"{MANIFEST} is missing"]
    try:
        manifest = read_manifest(folder)
    except MemtoolsError as exc:
        return [f"{MANIFEST} cannot be read ({str(exc).replace(f'{folder}{os.sep}', '')})"]
    return [problem.text for problem in quick_problems(folder, manifest)]


def _fetch(bucket: Bucket, version: int, entry: FileEntry, into: Path, local: dict[tuple[str, int, str], Path]) -> int:
    """One file of the version into ``into``, checked; the bytes downloaded (0 when an unchanged local copy served)."""
    same = local.get((entry.path, entry.size, entry.sha256))
    if same is not None and _linked(same, into / entry.path, entry):
        return 0
    size, sha256 = bucket.download(f"{version_dir(version)}/{FILES}/{entry.path}", into / entry.path)
    if (size, sha256) != (entry.size, entry.sha256):
        raise StoreError(f"{bucket.uri} version {version}: {entry.path} is {size} bytes with sha256 {sha256[:12]}..., "
                         f"but SNAPSHOT.json says {entry.size} bytes, {entry.sha256[:12]}...; publish again")
    return size


def _linked(source: Path, target: Path, entry: FileEntry) -> bool:
    """Hard-link ``source`` (a file of the version served now) to ``target`` if it still has the listed bytes."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        os.link(source, target)
    except OSError:
        return False
    if (target.stat().st_size, sha256_of(target)) == (entry.size, entry.sha256):
        return True
    target.unlink()
    return False


def _remove_if_gone(lock_file: Path) -> None:
    """A server folder whose lock nobody holds belongs to a server that is gone: remove it."""
    with open(lock_file, "a+") as handle:
        if not try_lock(handle):
            return
        try:
            shutil.rmtree(lock_file.with_suffix(""), ignore_errors=True)
            lock_file.unlink(missing_ok=True)
        finally:
            unlock(handle)


@contextlib.contextmanager
def _held(path: Path, wait: float = 30.0):
    with open(path, "a+") as handle:
        deadline = time.monotonic() + wait
        while not try_lock(handle):
            if time.monotonic() > deadline:
                raise StoreError(f"another server kept {path} locked for {wait:.0f} s; try again")
            time.sleep(0.05)
        try:
            yield
        finally:
            unlock(handle)
