"""Published versions that hold a purged video: which they are, and deleting them (``memtools publish`` after a
purge, ``memtools.changes.purge``).

Every version gets ``versions/<NNNNNN>/VIDEOS.json`` beside its ``SNAPSHOT.json`` (written before it, so a whole
version has both; readers ignore it)::

    {"format": 1, "videos": [...], "seen": [...], "purges": ["c0012", ...]}

- ``videos``: the video ids the memory's catalog listed when the version was staged;
- ``seen``: every video id whose bytes the version may hold though it does not list it: the ids the change log
  names (a forgotten video stays in the log's prior states and in its kept copies), and the ``seen`` of the
  version before it (a deleted video's bytes stay in the graph file until a purge rewrites it). A purged video
  stays named here too: a version staged after its purge is told apart by ``purges``;
- ``purges``: the purge receipts (``<memory>/purges/<change_id>.json``) the folder held then: this version was
  staged after them and holds none of their videos' bytes.

A version holds a purged video of receipt P unless its ``VIDEOS.json`` lists P among its ``purges``, or names the
video in neither ``videos`` nor ``seen``. A version without a readable ``VIDEOS.json`` (published by an older
memtools) is taken to hold it. After a new version is whole and ``LATEST.json`` names it, every other version
that holds a purged video is deleted at once: nothing is kept for replicas in flight (a replica downloading a
deleted version is told it is gone and moves to the new one at its next poll; the copy it serves meanwhile is
its own, removed when it moves), so a receipt's ``pending_until`` is always ``null``.

What a video added and deleted between two publishes through the Python ``Memory`` API, without the change log,
left in the graph file is in no list: such a video is not known to this module.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from contextlib import closing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memtools.errors import StoreError
from memtools.replica.bucket import Bucket
from memtools.replica.snapshot import check_format, version_dir

VIDEOS = "VIDEOS.json"
RECEIPTS_DIR = "purges"
CHANGE_LOG = "changes.sqlite"
FORMAT = 1


@dataclass
class Contents:
    """``VIDEOS.json``: what one version holds (see the module docstring)."""

    videos: list[str] = field(default_factory=list)
    seen: list[str] = field(default_factory=list)
    purges: list[str] = field(default_factory=list)
    format: int = FORMAT

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), indent=1).encode()

    @classmethod
    def from_json(cls, data: bytes, where: str) -> Contents:
        try:
            raw = json.loads(data)
            contents = cls(videos=[str(v) for v in raw["videos"]], seen=[str(v) for v in raw.get("seen", [])],
                           purges=[str(p) for p in raw.get("purges", [])], format=raw.get("format", FORMAT))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise StoreError(f"{where} is not a memtools list of videos ({exc})") from exc
        check_format(contents.format, where)
        return contents

    def may_hold(self, receipt: Receipt) -> bool:
        """Whether this version may hold bytes of a video ``receipt`` purged."""
        if receipt.change_id in self.purges:
            return False
        return bool(set(receipt.videos) & (set(self.videos) | set(self.seen)))


@dataclass(frozen=True)
class Receipt:
    """What publish needs of one purge receipt: its change, its videos and what it says of this bucket already."""

    change_id: str
    videos: tuple[str, ...]
    recorded: dict[str, Any] | None  # the record for this bucket's URI, if a publish wrote one


def read_receipts(folder: Path, uri: str) -> list[Receipt]:
    """The purge receipts of the memory at ``folder`` (none when it has none). One that cannot be read stops the
    publish: which versions hold its videos could not be told."""
    out = []
    for path in sorted((folder / RECEIPTS_DIR).glob("c*.json")):
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            change_id, videos = str(raw["change_id"]), tuple(str(v) for v in raw["videos"])
        except (OSError, ValueError, TypeError, KeyError) as exc:
            raise StoreError(f"cannot read the purge receipt {path} ({exc}): publishing needs it to delete the "
                             "published versions that hold the purged videos. Restore the file from a backup "
                             "(or fix its JSON), then publish again") from exc
        out.append(Receipt(change_id, videos, _recorded(raw, uri)))
    return out


def _recorded(raw: dict, uri: str) -> dict[str, Any] | None:
    buckets = raw.get("buckets")
    if isinstance(buckets, dict) and isinstance(buckets.get(uri), dict):
        return buckets[uri]
    bucket = raw.get("bucket")
    return bucket if isinstance(bucket, dict) and bucket.get("uri") == uri else None


def logged_videos(folder: Path) -> set[str]:
    """Every video id the memory's change log names (``changes.sqlite``; none when there is no log)."""
    path = folder / CHANGE_LOG
    if not path.is_file():
        return set()
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            return {row[0] for row in db.execute("SELECT DISTINCT video_id FROM changes") if row[0]}
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read the change log {path} ({exc}); run `memtools check --memory {folder}`, "
                         "then publish again") from exc


def contents_now(folder: Path, videos: Iterable[str], receipts: list[Receipt], before: Contents | None) -> Contents:
    """The ``VIDEOS.json`` of a version staged now from ``folder`` (the caller holds the writers' lock), with the
    listing of the version before it (``before``; None when there is none or it has none)."""
    listed = set(videos)
    seen = logged_videos(folder) | set(before.seen if before else ()) | set(before.videos if before else ())
    return Contents(videos=sorted(listed), seen=sorted(seen - listed), purges=sorted(r.change_id for r in receipts))


def read_contents(bucket: Bucket, version: int) -> Contents | None:
    """A version's ``VIDEOS.json``, or None when it has none or it cannot be read (it is then taken to hold
    every purged video)."""
    key = f"{version_dir(version)}/{VIDEOS}"
    data = bucket.read_bytes(key)
    if data is None:
        return None
    try:
        return Contents.from_json(data, f"{bucket.uri}/{key}")
    except StoreError:
        return None


def delete_holding(bucket: Bucket, receipts: list[Receipt], versions: Iterable[int], at: str,
                   current: int) -> dict[str, dict[str, Any]]:
    """Delete each of ``versions`` that holds a video of one of ``receipts``; the record to keep in each receipt
    that needs one: a receipt this bucket's URI has no record for yet, or one whose videos a version held."""
    held: dict[str, list[int]] = {r.change_id: [] for r in receipts}
    objects: dict[int, int] = {}
    for version in sorted(versions):
        contents = read_contents(bucket, version)
        holders = [r for r in receipts if contents is None or contents.may_hold(r)]
        if not holders:
            continue
        objects[version] = len(bucket.list(version_dir(version)))
        bucket.delete_under(version_dir(version))
        for r in holders:
            held[r.change_id].append(version)
    records = {}
    for r in receipts:
        gone = held[r.change_id]
        if r.recorded is not None and not gone:
            continue
        earlier = r.recorded or {}
        records[r.change_id] = {
            "uri": bucket.uri, "at": at, "version": current,
            "versions_deleted": sorted({*earlier.get("versions_deleted", []), *gone}),
            "objects_deleted": int(earlier.get("objects_deleted", 0)) + sum(objects[v] for v in gone),
            "pending_until": None}
    return records


def receipt_fields(raw: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """The fields to update in a receipt (``raw``, as read) with ``record``: ``bucket`` (the latest record) and
    ``buckets`` (the record of every URI published to)."""
    buckets = raw.get("buckets")
    return {"bucket": record, "buckets": {**(buckets if isinstance(buckets, dict) else {}), record["uri"]: record}}
