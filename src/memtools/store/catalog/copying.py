"""Copying a memory's list of videos (``videos.sqlite``) into another memory folder, as one
consistent snapshot (``memtools migrate``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memtools.store.catalog.videos import CATALOG, WRITE_TIMEOUT_S


def copy_catalog(source: Path, target: Path) -> None:
    """Copy ``videos.sqlite`` of one memory folder into another, consistently: SQLite's backup reads one
    snapshot (and first rolls back a transaction a killed writer left). Call it holding ``memtools.lock``."""
    if not (Path(source) / CATALOG).is_file():
        return  # a legacy memory: its memtools.json lists the videos
    src = sqlite3.connect(Path(source) / CATALOG, timeout=WRITE_TIMEOUT_S)
    dst = sqlite3.connect(Path(target) / CATALOG)
    try:
        src.backup(dst)
        dst.execute("PRAGMA journal_mode=DELETE")
    finally:
        dst.close()
        src.close()
