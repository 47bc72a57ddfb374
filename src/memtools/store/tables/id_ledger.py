"""The ids the change tools have handed out, so none is ever handed out twice, and where a merged-away entity
went: ``changes/ids.json`` in the memory folder, beside the change log.

The graph keeps each entity's id on its mentions (``Grounding.entity_id``), so an undo brings the ids back
exactly as they were; what an undo cannot keep is the ids the undone change made (the part a split took, a
note's ``evt_9001``). The ledger remembers the highest number issued under each prefix, so the next split or
note takes a new number, never one an assistant may still hold for something else::

    {"issued": {"kitchen/entity_": 7, "kitchen/macro_0001/evt_": 9002},
     "moved": {"kitchen/entity_005": {"to": "kitchen/entity_004", "change": "c0003"}}}

``moved`` answers a call with an id that a change joined into another: ``where_now`` names the id to use
and the change that did it. It is written only under the memory's writer lock, whole (a reader sees the old
file or the new one); a lost ledger loses only these hints and the memory of undone ids, never data.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from memtools.store.tables.per_video import write_whole

LEDGER = Path("changes") / "ids.json"
USER_FIRST = 9001
"""Mention and event numbers from here are made by the user (notes, named people): their prefixes are kept."""
_NUMBERED = re.compile(r"^(.*?)(\d+)$")


def split_number(node_id: str) -> tuple[str, int] | None:
    """``kitchen/entity_012`` -> (``kitchen/entity_``, 12); ``None`` for an id that does not end in a number."""
    m = _NUMBERED.match(node_id)
    return (m.group(1), int(m.group(2))) if m else None


class IdLedger:
    """The ledger of one memory (module docstring); ``save`` writes what ``issue`` and ``move`` added."""

    def __init__(self, memory_path: Path) -> None:
        self.path = Path(memory_path) / LEDGER
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        self.issued: dict[str, int] = dict(data.get("issued", {})) if isinstance(data, dict) else {}
        self.moved: dict[str, dict[str, str]] = dict(data.get("moved", {})) if isinstance(data, dict) else {}
        self._dirty = False

    def highest(self, prefix: str) -> int:
        return int(self.issued.get(prefix, 0))

    def issue(self, ids: Iterable[str]) -> None:
        """Remember these ids as handed out: canonical entity ids, and user-made mentions and events."""
        for node_id in ids:
            parsed = split_number(node_id)
            if parsed is None or (not parsed[0].endswith("/entity_") and parsed[1] < USER_FIRST):
                continue
            prefix, n = parsed
            if n > self.highest(prefix):
                self.issued[prefix] = n
                self._dirty = True

    def move(self, moves: Mapping[str, str], change_id: str) -> None:
        """Remember that change ``change_id`` joined each old id into its new one."""
        for old, new in moves.items():
            self.moved[old] = {"to": new, "change": change_id}
            self._dirty = True

    def save(self) -> None:
        if self._dirty:
            write_whole(self.path, {"issued": self.issued, "moved": self.moved})
            self._dirty = False

    def where_now(self, entity_id: str, exists: Callable[[str], bool]) -> tuple[str, str] | None:
        """(the id to use now, the change that moved it) for an id a change joined into another that still
        exists, following a chain of joins; ``None`` when the ledger knows no such move."""
        seen = {entity_id}
        step = self.moved.get(entity_id)
        first = step
        while step is not None:
            target = step["to"]
            if exists(target):
                return target, (first or step)["change"]
            if target in seen:
                return None
            seen.add(target)
            step = self.moved.get(target)
        return None


def moved_message(memory_path: Path, entity_id: str, exists: Callable[[str], bool]) -> str | None:
    """"entity X was joined into Y by change c0003: use Y" for an id a change moved; ``None`` otherwise."""
    found = IdLedger(memory_path).where_now(entity_id, exists)
    if found is None:
        return None
    target, change = found
    return (f"entity {entity_id} was joined into {target} by change {change} (a merge, or an undo of a split); "
            f"use {target}")


__all__ = ["LEDGER", "USER_FIRST", "IdLedger", "moved_message", "split_number"]
