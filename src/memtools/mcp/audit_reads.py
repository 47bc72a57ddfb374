"""Who read what (opt-in): ``memtools serve --audit-reads`` appends one JSON line per tool call to
``<memory>/reads.jsonl``; ``memtools log --reads`` prints it.

Each line is one object (the shared contract of issue 47)::

    {"at": "2026-12-05T05:00:00.123456+00:00", "caller": "alice", "tool": "search_nodes",
     "arguments": {"query": "..."}, "node_ids": ["kitchen/macro_0002", ...]}

- ``caller``: the request's caller as the change log names it (the token's subject or client over
  HTTP with an issuer, the token's name with ``--tokens-file``, ``stdio client`` over stdio);
- ``arguments``: what the client sent, as it sent it (untrusted: written as JSON with every
  non-ASCII character escaped, and escaped again when ``memtools log --reads`` prints it);
- ``node_ids``: every id the structured result holds, in order, once each (``node_ids``):
  a string under a key named ``id`` or ending in ``_id``, and the strings of a list under a key
  ending in ``_ids``. An error result (and a result without structured content) has none.

Every call is recorded, a refused one too (its ``node_ids`` are then empty). A line is written by
one ``write`` on a file opened with ``O_APPEND``, so lines of concurrent calls (threads or
server processes sharing the memory) never interleave; lines are not fsynced one by one. The
retention policy prunes this file like the memory's other records (``<memory>/retention.json``).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

READS_FILE = "reads.jsonl"
KEYS = ("at", "caller", "tool", "arguments", "node_ids")


def node_ids(structured: Any) -> list[str]:
    """The ids in a result's structured content (see the module docstring), in order, once each."""
    found: dict[str, None] = {}

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                name = str(key)
                if isinstance(item, str) and (name == "id" or name.endswith("_id")) and item:
                    found.setdefault(item, None)
                elif isinstance(item, list) and (name == "ids" or name.endswith("_ids")):
                    for one in item:
                        if isinstance(one, str) and one:
                            found.setdefault(one, None)
                        else:
                            walk(one)
                else:
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(structured)
    return list(found)


def line(caller: str, tool: str, arguments: Any, structured: Any, at: datetime | None = None) -> bytes:
    """One record as the bytes of one line (ASCII JSON, ending in a newline)."""
    record = {"at": (at or datetime.now(timezone.utc)).isoformat(), "caller": caller, "tool": tool,
              "arguments": arguments if isinstance(arguments, dict) else {}, "node_ids": node_ids(structured)}
    return (json.dumps(record, ensure_ascii=True, default=str) + "\n").encode("ascii")


def _field(result: Any, camel: str, snake: str) -> Any:
    """A field of a ``CallToolResult`` (mcp 1.x names it in camelCase, 2.x in snake_case)."""
    return getattr(result, snake, None) if hasattr(result, snake) else getattr(result, camel, None)


class ReadsAudit:
    """Appends the records of one memory's tool calls to ``<memory>/reads.jsonl``."""

    def __init__(self, memory_path: str | os.PathLike) -> None:
        self.path = Path(memory_path) / READS_FILE
        self._lock = threading.Lock()

    def record(self, caller: str, tool: str, arguments: Any, result: Any) -> None:
        """Append the call's line; a failure to write is logged, never the client's problem."""
        structured = None if _field(result, "isError", "is_error") else _field(result, "structuredContent",
                                                                               "structured_content")
        data = line(caller, tool, arguments, structured)
        try:
            with self._lock:
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    os.write(fd, data)  # one write: a whole line, never interleaved with another's
                finally:
                    os.close(fd)
        except OSError as exc:
            log.error("could not record a read in %s: %s", self.path, exc)


def records(memory_path: str | os.PathLike) -> Iterator[dict[str, Any] | None]:
    """The records of ``<memory>/reads.jsonl`` in the order written (``None`` for a line that is not one: cut short
    by a full disk, or edited by hand); nothing when the file is not there."""
    path = Path(memory_path) / READS_FILE
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return
    with handle:
        for raw in handle:
            try:
                record = json.loads(raw)
            except ValueError:
                yield None
                continue
            yield record if isinstance(record, dict) and all(k in record for k in KEYS) else None


__all__ = ["READS_FILE", "ReadsAudit", "line", "node_ids", "records"]
