"""The memories under ``--memories DIR``: each subfolder holding a memory (``memtools.json``) whose name is a plain
folder name (``MEMORY_NAME``), served by its own ``MemtoolsServer``.

They are found at start, and DIR is scanned again for new ones when a request needs the list and the last scan is
older than ``RESCAN_SECONDS`` (a memory created or imported under DIR while the server runs shows up within
seconds). A memory that goes away stays listed until the server restarts; its tools then say the memory cannot be
read. A folder that cannot be opened (an unfinished import, a newer format) is skipped, logged, and tried again at
the next scan.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memtools.errors import ConfigError, MemtoolsError
from memtools.mcp.tokens_file import MEMORY_NAME
from memtools.store.catalog.manifest import MANIFEST

log = logging.getLogger(__name__)

RESCAN_SECONDS = 10.0


@dataclass
class Served:
    """One memory of the server: its name, its own MCP server, and what to close at the end."""

    name: str
    server: Any  # memtools.mcp.server.MemtoolsServer
    close: Callable[[], None]


class Memories:
    """The served memories by name (see the module docstring); ``open_one(name, folder)`` serves one."""

    def __init__(self, folder: str | Path, open_one: Callable[[str, Path], Served],
                 rescan_seconds: float = RESCAN_SECONDS) -> None:
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise ConfigError(f"--memories {folder}: not a folder; give the folder whose subfolders are memories")
        self._open_one = open_one
        self._rescan_seconds = rescan_seconds
        self._served: dict[str, Served] = {}
        self._lock = threading.Lock()
        self._scanned_at = -math.inf

    def scan(self) -> None:
        """Serve the memories under the folder that are not served yet."""
        with self._lock:
            self._scanned_at = time.monotonic()
            try:
                children = sorted(self.folder.iterdir())
            except OSError as exc:
                log.warning("cannot list %s: %s", self.folder, exc)
                return
            for child in children:
                name = child.name
                if name in self._served or not MEMORY_NAME.fullmatch(name) or not (child / MANIFEST).is_file():
                    continue
                try:
                    self._served[name] = self._open_one(name, child)
                except MemtoolsError as exc:
                    log.warning("not serving %s: %s", child, exc)
                    continue
                log.info("serving memory %s from %s", name, child)

    def all(self) -> dict[str, Served]:
        """Every served memory by name (scanning again first when the last scan is old)."""
        if time.monotonic() - self._scanned_at >= self._rescan_seconds:
            self.scan()
        with self._lock:
            return dict(self._served)

    def close(self) -> None:
        with self._lock:
            served, self._served = list(self._served.values()), {}
        for one in served:
            try:
                one.close()
            except Exception:  # one memory that fails to close must not keep the others open
                log.warning("could not close memory %s", one.name, exc_info=True)


__all__ = ["RESCAN_SECONDS", "Memories", "Served"]
