"""What a killed writer leaves behind, seen from outside the writers' lock: its intent file (readers
of kuzu step aside while it is there), its journal and the graph engine's shadow pages (which only a
writer's recovery, ``memtools.store.recovery``, can finish)."""

from __future__ import annotations

from pathlib import Path

from memtools.store.file_lock import try_lock, unlock
from memtools.store.integrity import INTENT_FILE, JOURNAL_FILE, LOCK_FILE


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


def pending_recovery(path: Path, graph_name: str) -> list[str]:
    """What a killed writer left for the next writer to finish: its journal, or the graph engine's
    shadow pages (a commit's checkpoint cut short, which a read-only open cannot replay). Empty
    when nothing is left, or when a writer holds the lock (it is at work and finishes its own)."""
    left = [name for name in (JOURNAL_FILE, graph_name + ".shadow") if (path / name).exists()]
    if not left:
        return []
    try:
        handle = open(path / LOCK_FILE, "a+")  # noqa: SIM115 - closed below
    except OSError:
        return left
    try:
        if not try_lock(handle):
            return []
        unlock(handle)
        return left
    finally:
        handle.close()
