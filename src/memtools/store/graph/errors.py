"""What a graph engine's failure means, in plain words: kuzu's and ladybug's exceptions turned into
memtools errors (busy, a killed commit to finish, out of memory or disk, damage), with the
engine's own text kept for the debug log."""

from __future__ import annotations

import logging
from pathlib import Path

from memtools.errors import MemoryBusy, MemoryDamaged, OutOfResources, RecoveryPending, StoreError
from memtools.store.resources import exhausted

log = logging.getLogger("memtools.store.graph.cypher")

LOCK_MARKERS = ("Could not set lock", "lock on file")
# A read-only open that finds a checkpoint to replay (kuzu: shadow pages; ladybug: "checkpoint recovery is
# pending", also met during a live writer's checkpoint): only a writer's open replays it.
RECOVERY_MARKERS = ("replay shadow pages", "checkpoint recovery is pending")
# What kuzu/ladybug say when the database file is damaged or cut short (a partial copy, a full disk).
DAMAGE_MARKERS = ("Reading past the end of the file", "outside the database file", "Corrupted", "corrupted",
                  "checksum", "Checksum", "not a valid", "Invalid database")


def translate(exc: Exception, doing: str, memory: Path | None = None) -> Exception:
    """A memtools error in plain words for a kuzu/ladybug exception (chain it with ``from``); the
    engine's own text goes to the debug log, never to the user. ``memory``: the memory folder,
    named in the command that helps."""
    text = str(exc)
    log.debug("graph engine failed while %s: %s", doing, text)
    if any(marker in text for marker in LOCK_MARKERS):
        return MemoryBusy("memory is being updated by another process, try again in a few seconds")
    where = f" --memory {memory}" if memory is not None else ""
    if any(marker in text for marker in RECOVERY_MARKERS) or (".wal" in text and "Reading past the end" in text):
        # a read-only open after a killed commit, or beside a writer's WAL that is just beginning (ladybug):
        # the reader retries, or finishes the recovery itself when no writer holds the memory
        return RecoveryPending(recovery_message(memory))
    if "buffer pool is full" in text or ("Buffer manager exception" in text and "Mmap" not in text):
        return OutOfResources(f"the graph database ran out of memory while {doing} (one write needed more than "
                              f"its buffer pool): run `memtools check{where}`, then write fewer videos at a "
                              "time (import-captions --batch-size) or free memory and run the command again")
    if "No space left on device" in text:
        return OutOfResources(f"the graph database could not write while {doing}: No space left on device. Free "
                              "disk space and run the command again", resource="disk")
    out = exhausted(exc, doing)  # no memory to map (a ulimit -v), no file handles left: not damage
    if out is not None:
        return out
    if any(marker in text for marker in DAMAGE_MARKERS):
        return MemoryDamaged(f"the graph database cannot be read while {doing}: its file is damaged or truncated. "
                             f"Run `memtools check{where}` to see what is lost and how to get it back")
    return StoreError(f"the graph database failed while {doing}; `memtools check{where}` says whether the "
                      "memory is damaged (the engine's own message goes to the debug log)")


def recovery_message(memory: Path | None) -> str:
    """What a reader says of a memory a killed writer left mid-commit."""
    where = f" --memory {memory}" if memory is not None else ""
    return ("a process writing to this memory was killed in the middle of a write, and only a writer can finish or "
            f"undo it (nothing is lost): run `memtools recover{where}` (it needs write access to the folder; "
            "any write, such as running the same command again, does it too)")
