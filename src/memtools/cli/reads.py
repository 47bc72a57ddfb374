"""``memtools log --reads``: the memory's audit of reads (``reads.jsonl``, written by ``memtools serve
--audit-reads``; ``memtools.mcp.audit_reads``), newest first.

Every field came from a client and is shown as data: one line per call, control characters and line breaks
escaped (``memtools.changes.log.shown``), the caller cut at 200 characters, the arguments at 500 and the ids at
500.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import deque
from pathlib import Path

READS_HELP = ("the audit of reads instead (reads.jsonl, written by `memtools serve --audit-reads`): one line per "
              "tool call, newest first: when, caller, tool(arguments) and the node ids returned; with --json the "
              "records as stored (keys at, caller, tool, arguments, node_ids)")


def reads_line(record: dict) -> str:
    from memtools.changes.log import shown

    ids = record["node_ids"] if isinstance(record["node_ids"], list) else []
    found = f"{len(ids)} id{'s' if len(ids) != 1 else ''}" + (f": {shown(', '.join(map(str, ids)), 500)}" if ids
                                                              else "")
    return (f"{shown(record['at'], 40)}  {shown(record['caller'], 200)}  {shown(record['tool'], 80)}"
            f"({shown(record['arguments'], 500)})  -> {found}")


def print_reads(args: argparse.Namespace, limit: int) -> int:
    from memtools.errors import MemoryNotFound
    from memtools.mcp.audit_reads import READS_FILE, records
    from memtools.store.catalog.manifest import MANIFEST

    folder = Path(args.memory)
    if not (folder / MANIFEST).is_file():
        raise MemoryNotFound(f"{folder} is not a memory folder (no {MANIFEST}); pass the folder `memtools serve` "
                             "serves")
    newest: deque[dict] = deque(maxlen=limit)
    unreadable = 0
    for record in records(folder):
        if record is None:
            unreadable += 1
        else:
            newest.append(record)
    if not newest and not args.json:
        print(f"No reads recorded in this memory ({READS_FILE}): start `memtools serve` with --audit-reads.")
    for record in reversed(newest):
        print(json.dumps(record, ensure_ascii=True) if args.json else reads_line(record))
    if unreadable:
        print(f"{unreadable} line(s) of {READS_FILE} are not records and were skipped", file=sys.stderr)
    return 0


__all__ = ["READS_HELP", "print_reads", "reads_line"]
