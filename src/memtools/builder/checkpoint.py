"""Build checkpoints under ``memory.work_dir(video_id)``: every model answer and stage output.

Every file is written atomically (temp file in the same folder, fsync, rename), so a build
killed at any moment leaves each checkpoint either whole or absent, never half written.
``state.json`` names the source (content hash) and the build fingerprint; a work folder
made for another file or other settings is cleared rather than reused.

Layout::

    work/<video_id>/
      state.json                  content hash + config fingerprint
      keyframes.json              keyframe times and file names
      calls/<step>.json           raw model answers (one per attempt) with usage
      segment/window_000.json     a segmentation window, cleaned
      extract/macro_0003.json     a macro event's subgraph, cleaned
      aggregate/chunk_00.json     aggregation of a run of macro events, cleaned
      aggregate/root.json         the root (chunked builds only)
      report.json                 what was repaired or dropped, counts, usage
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from memtools.errors import BuildError


def atomic_write_bytes(path: Path, data: bytes, *, durable: bool = False) -> None:
    """Write ``data`` to ``path`` so that readers (and a later run) see all of it or nothing.

    The rename makes it atomic for a killed process. ``durable`` adds an fsync, which only
    matters for a power cut; checkpoints skip it (a torn checkpoint reads as absent and that
    step is simply redone), so a build does not wait on the disk for every model answer.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_json(path: Path, data: Any) -> None:
    atomic_write_bytes(path, json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False).encode("utf-8"))


class Checkpoints:
    """JSON checkpoints in one work folder, addressed by relative names like ``extract/macro_0003``."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def path(self, name: str) -> Path:
        return self.folder / f"{name}.json"

    def load(self, name: str) -> Any | None:
        """The stored value, or None when it is absent (or unreadable: then it is redone)."""
        path = self.path(name)
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            path.unlink(missing_ok=True)
            return None

    def save(self, name: str, value: Any) -> None:
        try:
            atomic_write_json(self.path(name), value)
        except OSError as exc:
            raise BuildError(f"cannot write checkpoint {self.path(name)}: {exc}") from exc

    def has(self, name: str) -> bool:
        return self.path(name).is_file()

    def prepare(self, state: dict[str, Any], *, fresh: bool = False) -> bool:
        """Make the folder ready for a build with ``state``; True when earlier work is reused.

        Earlier work is discarded when ``fresh`` is set or it was made for another file or
        with other settings.
        """
        previous = self.load("state")
        reuse = not fresh and previous == state
        if not reuse and self.folder.exists():
            shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True, exist_ok=True)
        if not reuse:
            self.save("state", state)
        self._sweep_temp_files()
        return reuse and previous is not None

    def _sweep_temp_files(self) -> None:
        """Temp files a killed run left behind."""
        for tmp in self.folder.rglob(".*.tmp"):
            tmp.unlink(missing_ok=True)
