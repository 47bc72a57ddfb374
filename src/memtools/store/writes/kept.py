"""What a replace keeps of the old versions of its videos until it is whole.

A replace deletes a video's old version and COPYs the new one in one graph transaction. kuzu 0.11.3
and ladybug can keep that transaction's DELETE and lose its COPY when a kill lands in the
checkpoint of its COMMIT (docs/storage.md, "What the engines guarantee"): both versions would be
gone. So before its journal is written, a write reads the old versions of the videos it replaces
back whole (``GraphReads.video_graphs``) into ``.write-kept`` (JSON lines, written by rename and
synced). Recovery that rolls the write back puts an old version the graph no longer holds back
from that file, in a transaction of its own, and verifies it; the file goes with the journal.

Only when an old version cannot be put back (a journal written before this file existed, or the
file damaged) is a video removed; ``memtools.store.catalog.owed`` then names it until it is written
again. The journal records the command that wrote (``command_line``), so that note can say what to run.
"""

from __future__ import annotations

import logging
import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path

from pydantic import ValidationError

from memtools.schema import VideoGraph

log = logging.getLogger(__name__)

KEPT = ".write-kept"


def keep(path: Path, old: Mapping[str, VideoGraph]) -> None:
    """Write the old versions a write replaces, whole and synced, before its journal (none: no file)."""
    drop(path)
    if not old:
        return
    target = path / KEPT
    tmp = target.with_name(KEPT + ".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        for graph in old.values():
            out.write(graph.model_dump_json() + "\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, target)


def kept(path: Path) -> dict[str, VideoGraph]:
    """The old versions ``keep`` wrote; none when the file is missing or cannot be read whole."""
    try:
        lines = (path / KEPT).read_text(encoding="utf-8").splitlines()
        graphs = [VideoGraph.model_validate_json(line) for line in lines if line.strip()]
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, ValidationError) as exc:
        log.warning("the old versions kept aside in %s cannot be read (%s)", path / KEPT, exc)
        return {}
    return {g.video_id: g for g in graphs}


def drop(path: Path) -> None:
    """The write is whole (or undone): its old versions are no longer needed."""
    (path / (KEPT + ".tmp")).unlink(missing_ok=True)
    (path / KEPT).unlink(missing_ok=True)


def command_line() -> str | None:
    """The ``memtools`` command this process runs (what a user types again), or None from the API."""
    if Path(sys.argv[0]).name not in ("memtools", "__main__.py") or len(sys.argv) < 2:
        return None
    return shlex.join(["memtools", *sys.argv[1:]])
