"""Small per-video JSON files beside the tables (``voices/``, ``faces/``): where each lives, written whole.

    path = per_video_file(memory.path, "faces", "talk")   # faces/talk.json ("/" in an id becomes "_")
    write_whole(path, {"video_id": "talk", "faces": [...]})  # a temporary file, then rename
    rows = read_rows(path, "faces")                       # the list under that key; None when unreadable
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def per_video_file(memory_path: Path, folder: str, video_id: str) -> Path:
    return Path(memory_path) / folder / f"{video_id.replace('/', '_')}.json"


def write_whole(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as JSON at ``path``: a reader sees the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())  # durable before it replaces the old one (a forget must stay done)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_rows(path: Path, key: str) -> list[Any] | None:
    """The list under ``key`` in the JSON file at ``path``: [] when there is no file, None when it is damaged."""
    try:
        rows = json.loads(path.read_text(encoding="utf-8")).get(key, [])
    except FileNotFoundError:
        return []
    except (OSError, ValueError, AttributeError):
        return None
    return rows if isinstance(rows, list) else None
