"""``publish``: a consistent, versioned snapshot of a memory folder on object storage.

1. The publish lock (``publish.lock``: one publish of a folder at a time) is taken; staging
   folders left by a killed publish are removed.
2. Under the writers' lock (``memtools.lock``: no write can start or be mid-way) the folder's
   durable parts are copied to a staging folder inside it (lance files hard-linked); the lock
   is held only for that copy.
3. The staged copy gets the checks of ``memtools check`` (``memtools.store.integrity.checker.check``);
   a damaged memory is refused (``MemoryDamaged``) before anything is uploaded.
4. Outside the lock: the staged files go to ``versions/<NNNNNN>/files/`` (those the previous
   version has unchanged are copied inside the store instead of uploaded), then the version's
   ``SNAPSHOT.json`` (every file, size, sha256), and only then ``LATEST.json`` (one PUT).
5. Every other version that holds a video a purge removed (``memtools.replica.purged``: each version's
   ``VIDEOS.json``, written before its ``SNAPSHOT.json``, lists its videos and the purges it was staged after)
   is deleted; then versions beyond the newest ``keep`` ones, and versions of killed publishes (partial, or
   whole but never pointed at). ``Published.purged`` holds what to record in each purge's receipt
   (``memtools publish`` records it: ``memtools.changes.purge.update_receipt``).

A publish killed at any point leaves ``LATEST.json`` at the previous version (readers serve it);
the next publish numbers its version past the partial one and deletes it.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from memtools.errors import ConfigError, MemoryDamaged, MemtoolsError, StoreError
from memtools.replica.bucket import Bucket
from memtools.replica.purged import VIDEOS, contents_now, delete_holding, read_contents, read_receipts
from memtools.replica.snapshot import (
    FILES,
    LATEST,
    SNAPSHOT,
    STAGING_PREFIX,
    VERSION_DIR,
    VERSIONS,
    FileEntry,
    Latest,
    Snapshot,
    list_files,
    stage,
    version_dir,
)
from memtools.store.faults import fault_point
from memtools.store.file_lock import holding

PUBLISH_LOCK = "publish.lock"
DEFAULT_KEEP = 3
UPLOAD_THREADS = 8


@dataclass
class Published:
    """What one publish did."""

    uri: str
    version: int
    generation: int
    files: int
    size: int
    seconds: float
    locked_seconds: float = 0.0  # how long writes were held off (the copy to the staging folder)
    uploaded: int = 0  # bytes sent; files the previous version has unchanged are copied inside the store
    removed: list[int] = field(default_factory=list)
    purged: dict[str, dict] = field(default_factory=dict)
    """By purge (change id): the record of what this publish deleted for it (``memtools.replica.purged``)."""

    def render(self) -> str:
        gone = f"; removed version(s) {', '.join(map(str, self.removed))}" if self.removed else ""
        for cid, record in sorted(self.purged.items()):
            deleted = record["versions_deleted"]
            gone += (f"; purge {cid}: version(s) {', '.join(map(str, deleted))} holding its video(s) deleted "
                     f"({record['objects_deleted']} object(s))" if deleted else
                     f"; purge {cid}: no other version holds its video(s)")
        return (f"Published version {self.version} (generation {self.generation}) to {self.uri}: {self.files} file(s), "
                f"{self.size / 1e6:.1f} MB ({self.uploaded / 1e6:.1f} MB uploaded, the rest unchanged) in "
                f"{self.seconds:.1f} s (writes held off {self.locked_seconds:.2f} s)"
                f"{gone}.\n"
                f"Serve it elsewhere: memtools serve --memory {self.uri}")


def publish(folder: str | Path, uri: str, *, keep: int = DEFAULT_KEEP, full: bool = False,
            environ: Mapping[str, str] | None = None, progress: Callable[[str], None] | None = None) -> Published:
    """Publish the memory at ``folder`` to ``uri`` (``s3://bucket/prefix``) as its next version.

    Files the previous version holds unchanged (same path, size and sha256 in its listing) are
    copied inside the store; ``full`` uploads every file instead (when the store's copies are doubted)."""
    from memtools.store import Memory
    from memtools.store.catalog.manifest import now, read_manifest
    from memtools.store.integrity.checker import JOURNAL_FILE
    from memtools.version import __version__

    if keep < 1:
        raise ConfigError(f"keep must be 1 or more versions, not {keep}")
    started = time.perf_counter()
    folder = Path(folder)
    bucket = Bucket(uri, environ)
    say = progress or (lambda _text: None)
    with Memory.open(folder) as memory:
        if memory.manifest.tables:
            raise ConfigError(
                f"the memory at {folder} keeps its lance tables at {memory.manifest.tables}, not in the folder; "
                "publish copies a whole memory folder, and tables on object storage change under a snapshot as the "
                "writer goes on. Serve it where the folder is, or publish a copy whose tables are local")
        bucket.check_bucket()
        with _publish_lock(folder):
            for stale in folder.glob(f"{STAGING_PREFIX}*"):
                shutil.rmtree(stale, ignore_errors=True)
            staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=folder))
            try:
                with memory.writes_paused():
                    locked = time.perf_counter()
                    if (folder / JOURNAL_FILE).exists():
                        raise StoreError(f"a write to {folder} was interrupted and is not recovered yet; run "
                                         f"`memtools repair --memory {folder}` (or any write), then publish again")
                    generation = read_manifest(folder).generation
                    stage(folder, staging)
                    locked = time.perf_counter() - locked
                fault_point("publish.staged")
                previous = read_latest(bucket)
                videos = check_staged(staging, folder, previous)
                receipts = read_receipts(staging, bucket.uri)
                contents = contents_now(staging, videos, receipts,
                                        read_contents(bucket, previous.version) if previous else None)
                files = list_files(staging)
                version = max([previous.version if previous else 0, *_versions(bucket)]) + 1
                say(f"uploading version {version}: {len(files)} file(s), {sum(f.size for f in files) / 1e6:.1f} MB")
                uploaded = _upload(bucket, staging, version, files, {} if full else _listed(bucket, previous))
                bucket.write_bytes(f"{version_dir(version)}/{VIDEOS}", contents.to_json())
                snapshot = Snapshot(version=version, generation=generation, memtools_version=__version__,
                                    created_at=now(), files=files)
                bucket.write_bytes(f"{version_dir(version)}/{SNAPSHOT}", snapshot.to_json())
                fault_point("publish.snapshot")
                bucket.write_bytes(LATEST, Latest(version, generation, snapshot.created_at).to_json())
                fault_point("publish.latest")
            finally:
                shutil.rmtree(staging, ignore_errors=True)
            others = [n for n, whole in _versions(bucket).items() if whole and n != version]  # prune: the rest
            purged = delete_holding(bucket, receipts, others, now(), version) if receipts else {}
            fault_point("publish.purged")
            removed = prune(bucket, version, keep, previous.version if previous else 0)
    return Published(bucket.uri, version, generation, len(files), snapshot.size, time.perf_counter() - started,
                     locked, uploaded, removed, purged)


def check_staged(staging: Path, folder: Path, previous: Latest | None) -> list[str]:
    """The checks of ``memtools check`` on the staged copy of ``folder``: ``MemoryDamaged`` naming what is wrong
    when it is damaged (nothing is uploaded, and ``LATEST.json`` keeps naming ``previous``); the copy's video ids
    when it is whole."""
    from memtools.store import Memory
    from memtools.store.integrity.checker import check

    kept = f"LATEST.json still names version {previous.version}" if previous is not None else "nothing was uploaded"
    try:
        with Memory.open(staging) as copy:
            report = check(copy)
            videos = copy.video_ids() if report.ok else []
    except MemtoolsError as exc:
        text = str(exc).replace(str(staging), str(folder))
        raise MemoryDamaged(f"refusing to publish the memory at {folder}: its copy cannot be opened ({text}); "
                            f"{kept}. Run `memtools check --memory {folder}`, then publish again") from exc
    if report.ok:
        return videos
    first, more = report.problems[0], len(report.problems) - 1
    also = f" (and {more} more problem(s))" if more else ""
    fix = (f"Run `memtools repair --memory {folder}`" if any(p.repairable for p in report.problems)
           else f"See `memtools check --memory {folder}` for how to restore it")
    raise MemoryDamaged(f"refusing to publish the memory at {folder}: it is damaged: [{first.part}] "
                        f"{first.text}{also}; {kept}. {fix}, then publish again")


def read_latest(bucket: Bucket) -> Latest | None:
    data = bucket.read_bytes(LATEST)
    return None if data is None else Latest.from_json(data, f"{bucket.uri}/{LATEST}")


def _versions(bucket: Bucket) -> dict[int, bool]:
    """Every version folder under ``versions/``: whether it is whole (has its ``SNAPSHOT.json``)."""
    out: dict[int, bool] = {}
    for item in bucket.list(VERSIONS):
        parts = item.key.split("/")
        if len(parts) >= 3 and VERSION_DIR.fullmatch(parts[1]):
            n = int(parts[1])
            out[n] = out.get(n, False) or (len(parts) == 3 and parts[2] == SNAPSHOT)
    return out


def prune(bucket: Bucket, current: int, keep: int, previous: int = 0) -> list[int]:
    """Delete all but the newest ``keep`` whole versions up to ``current``, every partial one, and every one
    between ``previous`` (LATEST before this publish) and ``current`` (killed before LATEST moved); which went."""
    versions = _versions(bucket)
    served = (n for n, whole in versions.items() if whole and (n <= previous or n == current))
    kept = sorted(served, reverse=True)[:keep]
    removed = sorted(n for n in versions if n not in kept)
    for n in removed:
        bucket.delete_under(version_dir(n))
    return removed


def _listed(bucket: Bucket, latest: Latest | None) -> dict[tuple[str, int, str], str]:
    """The files of the version ``latest`` names, by (path, size, sha256): their keys in the store."""
    data = bucket.read_bytes(f"{version_dir(latest.version)}/{SNAPSHOT}") if latest else None
    if latest is None or data is None:
        return {}
    try:
        snapshot = Snapshot.from_json(data, f"{bucket.uri}/{version_dir(latest.version)}/{SNAPSHOT}")
    except StoreError:
        return {}  # a listing this memtools cannot read: upload everything
    return {(f.path, f.size, f.sha256): f"{version_dir(latest.version)}/{FILES}/{f.path}" for f in snapshot.files}


def _upload(bucket: Bucket, staging: Path, version: int, files: list[FileEntry],
            previous: dict[tuple[str, int, str], str]) -> int:
    """Put every file under ``versions/<version>/files/``: copied inside the store when the previous version has
    it unchanged (lance files, frames), else uploaded. The bytes uploaded."""

    def put(entry: FileEntry) -> int:
        key = f"{version_dir(version)}/{FILES}/{entry.path}"
        same = previous.get((entry.path, entry.size, entry.sha256))
        if same is not None and bucket.copy(same, key, entry.size):
            return 0
        bucket.upload(staging / entry.path, key)
        return entry.size

    sent = 0
    with ThreadPoolExecutor(UPLOAD_THREADS, thread_name_prefix="memtools-publish") as pool:
        for done in as_completed([pool.submit(put, f) for f in files]):
            sent += done.result()
            fault_point("publish.upload")
    return sent


@contextlib.contextmanager
def _publish_lock(folder: Path) -> Iterator[None]:
    with holding(folder / PUBLISH_LOCK, lambda: print(
            f"another `memtools publish` of {folder} is running; waiting for it to finish, then publishing what "
            "it left (interrupt to stop waiting)", file=sys.stderr, flush=True)):
        yield
