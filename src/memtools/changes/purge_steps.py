"""The steps of a purge (``memtools.changes.purge``), each idempotent, and finishing one a kill interrupted.

A purge's change-log row (action ``purge``) is recorded ``pending`` with its plan before anything is removed:
the videos, the changes about them whose copies go (``changes``), and what the receipt will list (the files
and the rows per table, counted then). It holds ids and numbers, never content. ``carry_out`` then:

1. deletes each video still in the memory (the store's own journaled write, ``Memory.delete_video``);
2. removes its files (keyframes, ``work/``, voices, faces, the change log's kept copies ``changes/<id>/``)
   and its entries in the memory's records (``lost-videos.json``, ``jobs.json``, ``reads.jsonl``,
   ``.write-kept``: ``memtools.store.purging.files``);
3. redacts the change log's rows about it (their copies of the video dropped, their summaries replaced by
   "purged in cNNNN") and ``VACUUM``s ``changes.sqlite``;
4. writes the lance tables again without its rows and removes every old version
   (``memtools.store.purging.lance_rewrite``);
5. deletes what is left of it in ``library.sqlite``, ``navigation.sqlite`` and ``videos.sqlite`` and
   ``VACUUM``s them (``memtools.store.purging.sqlite_files``);
6. rewrites the graph engine's file (``memtools.store.purging.graph_copy``);
7. stores the receipt (``purges/<id>.json``) and marks the row ``done``.

Killed at any instant, the next writer (``finish_purges``, from ``settle_pending``) runs ``carry_out`` again
from the plan: every step finds done what was done and does the rest.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtools.changes.kept_video import kept_root
from memtools.changes.log import ChangeLog
from memtools.store.faults import fault_point
from memtools.store.graph.schema import TABLES
from memtools.store.purging import files, graph_copy, lance_rewrite, sqlite_files

if TYPE_CHECKING:
    from memtools.store import Memory

PURGE = "purge"
TABLE_OF = {kind.value: table.name for kind, table in TABLES.items()}
PURGES_DIR = "purges"
"""Under the memory folder: one receipt per purge, ``purges/<change id>.json``."""


def receipt_path(memory_path: Path, cid: str) -> Path:
    return Path(memory_path) / PURGES_DIR / f"{cid}.json"


def write_receipt(memory_path: Path, receipt: dict[str, Any]) -> None:
    """Store a receipt whole (temp file + rename, synced)."""
    path = receipt_path(memory_path, str(receipt["change_id"]))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(json.dumps(receipt, indent=1, ensure_ascii=True))
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


def plan_of(memory: Memory, log: ChangeLog, video_ids: list[str], reason: str) -> dict[str, Any]:
    """What a purge of these videos will remove, counted now (ids and numbers only)."""
    changes = log.ids_about(video_ids, skip_action=PURGE)
    root = memory.path
    paths = [p for v in video_ids for p in files.video_paths(root, v)]
    paths += [kept_root(root, c) for c in changes]
    rows: dict[str, int] = {}
    live = [v for v in video_ids if v in memory.manifest.videos]
    if live:
        with memory.reading(guard=False) as graph:
            for vid in live:
                for kind, n in graph.counts(vid).items():
                    if n:
                        key = f"graph:{TABLE_OF.get(kind, 'Rel' if kind == 'edges' else kind)}"
                        rows[key] = rows.get(key, 0) + int(n)
        rows.update(lance_rewrite.rows_of(memory, live))
    rows.update(sqlite_files.rows_of(root, video_ids))
    return {"videos": video_ids, "reason": reason, "changes": changes, "files": files.listed(root, paths),
            "rows": rows}


def carry_out(memory: Memory, log: ChangeLog, cid: str, plan: dict[str, Any]) -> dict[str, Any]:
    """Do (or finish) the purge ``cid`` of ``plan`` (module docstring); returns its receipt, stored."""
    videos = [str(v) for v in plan.get("videos", [])]
    changes = [str(c) for c in plan.get("changes", [])]
    root = memory.path
    for vid in videos:
        memory.delete_video(vid)
    fault_point("purge-deleted")
    paths = [p for v in videos for p in files.video_paths(root, v)] + [kept_root(root, c) for c in changes]
    removed = files.remove(root, paths)
    rewritten = files.rewrite_records(root, videos)
    fault_point("purge-files")
    log.redact(changes, f"purged in {cid}")
    log.vacuum()
    fault_point("purge-log")
    versions = lance_rewrite.rewrite_tables(memory, videos) if videos else {}
    fault_point("purge-tables")
    sqlite_files.purge_rows(root, videos)
    fault_point("purge-sqlite")
    if videos:
        graph_copy.rewrite_memory(memory)
    else:
        graph_copy.remove_copy(memory.graph_file)
    change = log.get(cid)
    at = datetime.fromtimestamp(change.at if change else 0, timezone.utc).isoformat(timespec="seconds")
    old = _stored(root, cid)
    receipt = {"change_id": cid, "reason": plan.get("reason", PURGE), "at": at,
               "who": change.who if change else "", "front_end": change.front_end if change else "",
               "videos": videos, "files": sorted({*plan.get("files", []), *removed, *rewritten, *old.get("files", [])}),
               "rows": dict(plan.get("rows", {})), "versions": _added(old.get("versions", {}), versions),
               "log_rows_redacted": len(changes), "bucket": old.get("bucket"),
               **{k: v for k, v in plan.items() if k == "clusters"}}
    write_receipt(root, receipt)
    fault_point("purge-receipt")
    return receipt


def _stored(root: Path, cid: str) -> dict[str, Any]:
    try:
        data = json.loads(receipt_path(root, cid).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _added(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {k: int(a.get(k, 0)) + int(b.get(k, 0)) for k in sorted({*a, *b}) if a.get(k, 0) or b.get(k, 0)}


def plan_in(log: ChangeLog, cid: str) -> dict[str, Any]:
    return dict((log.before(cid) or {}).get(PURGE, {}))


def finish_purges(memory: Memory, log: ChangeLog) -> None:
    """Finish the purges a killed process left pending (doing each again from its plan), then settle them."""
    for c in log.pending():
        if c.action == PURGE:
            carry_out(memory, log, c.id, plan_in(log, c.id))
            log.settle(c.id, True)


def purged_in(log: ChangeLog, video_id: str, after: str | None = None) -> str | None:
    """The purge (done or pending) of ``video_id`` recorded after change ``after``, if there is one."""
    from memtools.changes.log import change_seq

    floor = change_seq(after) if after else 0
    for c in log.of_action(PURGE):
        if c.state != "abandoned" and (change_seq(c.id) or 0) > (floor or 0) and \
                video_id in plan_in(log, c.id).get("videos", []):
            return c.id
    return None


__all__ = ["PURGE", "PURGES_DIR", "carry_out", "finish_purges", "plan_in", "plan_of", "purged_in", "receipt_path",
           "write_receipt"]
