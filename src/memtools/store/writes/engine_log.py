"""The graph engine's log of a killed write: replayed by the engine, or dropped where the engine replays it wrongly.

kuzu 0.11.3 (frozen) replays a logged ``DETACH DELETE`` of one video's nodes with edges of *other* videos lost: 4 of
the 7 edges of ``vid00`` went after a kill inside the delete of ``vid03`` (``benchmarks/crash_random.py --ops purge
--modes commit``; the same with ``Memory.delete_video`` alone), while the same transaction, committed and
checkpointed, loses nothing, and ladybug 0.22 replays it right. So a journaled write begins with the log empty
(``recovery.begin`` checkpoints first and records ``clean_log``) and checkpoints its graph part as soon as its mark
is committed (``recovery.commit_mark``), before it writes anything else; at any kill the log then holds that write's
graph part alone, or only what came after it. A writer opening the graph after the kill drops that log
(``discard_log``), and recovery rolls the write back as one whose graph part never landed (or forward, recomputing
what came after the checkpoint).

A kill *inside* a checkpoint is the engine's to finish from its shadow pages (``graph.kuzu.shadow``), and kuzu
0.11.3 finishes the checkpoint of such a delete with other videos' edges lost too (3 of 24 commit-mode kills of a
purge). So a write that deletes from a kuzu graph copies the checkpointed graph file first (``snapshot``:
``.memtools-graph-before-<token>``, beside it, never published); a writer that finds the checkpoint cut short puts
that copy back instead (``restore_snapshot``), and recovery rolls the write back as one whose graph part never
landed. The copy goes as soon as the write's graph part is checkpointed (``drop_snapshots``).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

from memtools.store.durable import sync_folder
from memtools.store.integrity.checker import JOURNAL_FILE

log = logging.getLogger(__name__)


LOG_SUFFIX = ".wal"
CHECKPOINTING = (".shadow", ".wal.checkpoint")
"""Beside the graph file: the engine's log, and what it writes while a checkpoint runs."""
REPLAYS_LOG_WRONGLY = frozenset({"kuzu"})
"""Engines whose replay of a logged transaction is not what the transaction did: kuzu 0.11.3 (frozen) replays a
logged ``DETACH DELETE`` of one video's nodes with edges of other videos lost (4 of 7 edges of ``vid00`` after a
kill inside the delete of ``vid03``, ``benchmarks/crash_random.py --ops purge --modes commit``); ladybug 0.22
replays it right."""


def discard_log(memory_path: Path, graph_file: Path, engine: str) -> bool:
    """Before a writer opens the graph after a kill: drop the engine's log of the interrupted write instead of letting
    the engine replay it, where the engine replays it wrongly (``REPLAYS_LOG_WRONGLY``). Only when the journal says
    the log held that write alone (``clean_log``) and no checkpoint was under way (then the engine must finish it):
    the graph file is then as the last checkpoint left it, before the write's graph part, which the write
    checkpoints as soon as its mark is committed (``commit_mark``), before it writes anything else. Recovery then
    rolls the write back as one whose graph part never landed (or forward, when the log held only what came after
    that checkpoint, which recovery computes again). Returns whether the log was dropped."""
    log_file = graph_file.with_name(graph_file.name + LOG_SUFFIX)
    if engine not in REPLAYS_LOG_WRONGLY or not log_file.exists():
        return False
    if any(graph_file.with_name(graph_file.name + s).exists() for s in CHECKPOINTING):
        return False
    try:
        clean = bool(json.loads((Path(memory_path) / JOURNAL_FILE).read_text(encoding="utf-8")).get("clean_log"))
    except (OSError, ValueError, AttributeError):
        return False  # no journal (a write that finished, or none), or one recover() reports as damaged
    if not clean:
        return False
    log_file.unlink()
    log.warning("recovery of %s: dropped the graph engine's log of the interrupted write (%s replays it wrongly); "
                "the write is rolled back from its journal", memory_path, engine)
    return True


SNAPSHOT = ".memtools-graph-before-"
"""The graph file as a deleting write found it (``snapshot``), named by the write's token."""
RESTORING = ".memtools-graph-restoring-"
"""A snapshot being put back: once renamed so, it is put back whatever else a kill left."""


def snapshot(memory_path: Path, graph_file: Path, engine: str, token: str) -> Path | None:
    """Copy the graph file (checkpointed: its log is empty) before a write deletes from it, where the engine finishes
    a cut-short checkpoint of a delete wrongly (``REPLAYS_LOG_WRONGLY``). Returns the copy, or None."""
    if engine not in REPLAYS_LOG_WRONGLY or not graph_file.is_file():
        return None
    drop_snapshots(memory_path)
    target = Path(memory_path) / (SNAPSHOT + token)
    tmp = target.with_name(target.name + ".tmp")
    shutil.copyfile(graph_file, tmp)
    with open(tmp, "rb+") as handle:
        os.fsync(handle.fileno())
    os.replace(tmp, target)
    sync_folder(Path(memory_path))
    return target


def drop_snapshots(memory_path: Path) -> None:
    """Remove every graph snapshot (the write's graph part is checkpointed, or the write is over)."""
    for path in Path(memory_path).glob(SNAPSHOT + "*"):
        path.unlink(missing_ok=True)


def restore_snapshot(memory_path: Path, graph_file: Path) -> bool:
    """Before a writer opens the graph after a kill: where a deleting write's checkpoint was cut short (the engine's
    shadow pages or set-aside log are left) and that write's snapshot is there, put the snapshot back and drop what the
    engine left; recovery then rolls the write back. A snapshot of no pending write (the journal names another token,
    or none) is removed. Returns whether the graph was put back."""
    folder = Path(memory_path)
    restoring = sorted(folder.glob(RESTORING + "*"))
    if not restoring:
        snapshots = [p for p in folder.glob(SNAPSHOT + "*") if not p.name.endswith(".tmp")]
        for tmp in folder.glob(SNAPSHOT + "*.tmp"):
            tmp.unlink(missing_ok=True)
        if not snapshots:
            return False
        token = _journal_token(folder)
        ours = [p for p in snapshots if token is not None and p.name == SNAPSHOT + token]
        for other in (p for p in snapshots if p not in ours):
            other.unlink(missing_ok=True)
        cut_short = any(graph_file.with_name(graph_file.name + s).exists() for s in CHECKPOINTING)
        if not ours or not cut_short:
            return False  # the log alone (discard_log), or nothing: the graph file is whole
        restoring = [ours[0].rename(folder / (RESTORING + ours[0].name.removeprefix(SNAPSHOT)))]
        sync_folder(folder)
    for suffix in (*CHECKPOINTING, LOG_SUFFIX):
        graph_file.with_name(graph_file.name + suffix).unlink(missing_ok=True)
    os.replace(restoring[0], graph_file)
    sync_folder(folder)
    log.warning("recovery of %s: a checkpoint of the interrupted write was cut short; the graph as the write found it "
                "was put back, and the write is rolled back from its journal", memory_path)
    return True


def _journal_token(folder: Path) -> str | None:
    try:
        journal = json.loads((folder / JOURNAL_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    token = journal.get("token") if isinstance(journal, dict) else None
    return token if isinstance(token, str) and journal.get("clean_log") else None


__all__ = ["CHECKPOINTING", "LOG_SUFFIX", "REPLAYS_LOG_WRONGLY", "RESTORING", "SNAPSHOT", "discard_log",
           "drop_snapshots", "restore_snapshot", "snapshot"]
