"""What a killed process leaves behind, seen from outside the writers' lock: a writer's intent file
(readers of kuzu step aside while it is there), its journal and the graph engine's shadow pages
(which only a writer's recovery, ``memtools.store.writes.recovery``, can finish); a ``Memory.create`` cut
short before its manifest; and a memory made before ``videos.sqlite``, moved there when opened."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from memtools.errors import StoreError
from memtools.store.catalog.manifest import Manifest, migrate_legacy
from memtools.store.catalog.videos import CATALOG
from memtools.store.file_lock import try_lock, unlock
from memtools.store.integrity.checker import INTENT_FILE, LOCK_FILE

log = logging.getLogger("memtools.store.memory")

CREATING = ".memtools-creating"  # a folder Memory.create has begun and not finished


def clear_stale_intent(path: Path) -> bool:
    """Remove ``.write-intent`` if no writer holds ``memtools.lock`` (a writer was killed); True if removed."""
    try:
        handle = open(path / LOCK_FILE, "a+")  # noqa: SIM115 - closed below
    except OSError:
        return False
    if not try_lock(handle):
        handle.close()
        return False
    try:
        (path / INTENT_FILE).unlink(missing_ok=True)
        return True
    except OSError:
        return False
    finally:
        unlock(handle)
        handle.close()


def clear_unfinished(folder: Path) -> None:
    """What a ``Memory.create`` killed before its manifest left (an empty graph, catalog and tables),
    so it starts again; ``work/`` (a build's checkpoints) stays."""
    left = [e for e in folder.iterdir() if e.name not in ("work", LOCK_FILE)]  # the lock: its holder clears
    if left:
        log.info("%s: finishing a memory whose creation was interrupted", folder)
    for entry in left:
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink(missing_ok=True)


def migrate_on_open(folder: Path) -> Manifest | None:
    """A memory made before ``videos.sqlite`` moves its list of videos there when it is opened, if no
    writer holds it (a writer migrates it itself) and the folder can be written; otherwise the list is
    read as it is. Crash-safe (``manifest.migrate_legacy``); a failure only leaves the list in place."""
    if not os.access(folder, os.W_OK):
        return None
    try:
        handle = open(folder / LOCK_FILE, "a+")  # noqa: SIM115 - held for the migration
    except OSError:
        return None
    try:
        if not try_lock(handle):
            return None
        try:
            return migrate_legacy(folder)
        finally:
            unlock(handle)
    except (OSError, StoreError) as exc:
        log.warning("could not move the list of videos of %s into %s (%s); it is read as it is", folder,
                    CATALOG, exc)
        return None
    finally:
        handle.close()
