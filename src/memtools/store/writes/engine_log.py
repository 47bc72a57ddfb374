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
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

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


__all__ = ["CHECKPOINTING", "LOG_SUFFIX", "REPLAYS_LOG_WRONGLY", "discard_log"]
