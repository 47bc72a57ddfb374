"""The files of a memory folder that name a purged video, removed or rewritten without it.

- whole files and folders: ``frames/<video>/`` (keyframes), ``work/<video>/`` (build checkpoints),
  ``voices/<video>.json`` and ``faces/<video>.json`` (centroids), and any folder the caller adds (the change
  log's kept copies, ``changes/<id>/``);
- files rewritten without the video's entries (each by temp file + rename, so a kill leaves the old file or
  the new one): ``lost-videos.json`` (``memtools.store.catalog.owed``), the jobs book ``jobs.json`` (finished
  jobs of the video; under its own lock, ``jobs.json.lock``), the reads audit ``reads.jsonl`` (lines whose
  arguments or node ids name the video) and a write's kept old versions ``.write-kept``.

Every function is idempotent and returns the paths it removed or rewrote, relative to the memory folder.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from memtools.store.catalog.owed import LOST
from memtools.store.file_lock import holding
from memtools.store.tables.faces import faces_path
from memtools.store.tables.voices import voices_path
from memtools.store.writes.kept import KEPT

JOBS = "jobs.json"
READS = "reads.jsonl"


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def video_paths(root: Path, video_id: str) -> list[Path]:
    """The files and folders that belong to one video alone."""
    return [root / "frames" / video_id, root / "work" / video_id, voices_path(root, video_id),
            faces_path(root, video_id)]


def listed(root: Path, paths: Iterable[Path]) -> list[str]:
    """Every file under these paths (a file itself, or each file of a folder), relative to ``root``."""
    out: list[str] = []
    for path in paths:
        if path.is_file():
            out.append(_rel(root, path))
        elif path.is_dir():
            out += sorted(_rel(root, p) for p in path.rglob("*") if p.is_file())
    return out


def remove(root: Path, paths: Iterable[Path]) -> list[str]:
    """Remove these files and folders; returns the files that went."""
    gone: list[str] = []
    for path in paths:
        gone += listed(root, [path])
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    return gone


def _names(value: Any, video_ids: set[str]) -> bool:
    """Whether a JSON value holds a string that is one of the videos or an id inside one (``<video>/...``)."""
    if isinstance(value, str):
        return value in video_ids or value.split("/", 1)[0] in video_ids or value.split("@", 1)[0] in video_ids
    if isinstance(value, dict):
        return any(_names(v, video_ids) for v in value.values())
    if isinstance(value, list):
        return any(_names(v, video_ids) for v in value)
    return False


def _replace(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.purge.tmp")
    with open(tmp, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


def _rewrite_lines(root: Path, name: str, keep) -> list[str]:
    path = root / name
    try:
        lines = path.read_bytes().splitlines(keepends=True)
    except FileNotFoundError:
        return []
    kept = [line for line in lines if keep(line)]
    if len(kept) == len(lines):
        return []
    _replace(path, b"".join(kept))
    return [name]


def rewrite_records(root: Path, video_ids: list[str]) -> list[str]:
    """``lost-videos.json``, ``jobs.json``, ``reads.jsonl`` and ``.write-kept`` without these videos."""
    wanted = set(video_ids)
    changed: list[str] = []

    def other(line: bytes) -> bool:
        try:
            record = json.loads(line)
        except ValueError:
            return bool(line.strip())  # a torn last line of someone else's append: left as it is
        if not isinstance(record, dict):
            return True
        video = record.get("video")
        if record.get("video_id") in wanted or (isinstance(video, dict) and video.get("id") in wanted):
            return False
        return not _names(record.get("node_ids", []), wanted) and not _names(record.get("arguments", {}), wanted)

    changed += _rewrite_lines(root, READS, other)
    changed += _rewrite_lines(root, KEPT, other)
    lost = root / LOST
    try:
        entries = json.loads(lost.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        entries = None
    if isinstance(entries, dict) and wanted & set(entries):
        left = {k: v for k, v in entries.items() if k not in wanted}
        if left:
            _replace(lost, json.dumps(left, indent=1, sort_keys=True).encode())
        else:
            lost.unlink()
        changed.append(LOST)
    jobs = root / JOBS
    if jobs.exists():
        with holding(jobs.with_name(JOBS + ".lock"), poll=0.01, timeout=30.0):
            try:
                book = json.loads(jobs.read_bytes())
            except (OSError, ValueError):
                book = None
            if isinstance(book, dict) and isinstance(book.get("jobs"), list):
                left_jobs = [j for j in book["jobs"] if not (isinstance(j, dict) and j.get("video_id") in wanted
                                                            and j.get("state") in ("done", "failed", "cancelled"))]
                if len(left_jobs) != len(book["jobs"]):
                    _replace(jobs, json.dumps({**book, "jobs": left_jobs}, indent=1).encode())
                    changed.append(JOBS)
    return changed


__all__ = ["JOBS", "READS", "listed", "remove", "rewrite_records", "video_paths"]
