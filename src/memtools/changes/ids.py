"""Ids that stay: a canonical entity id, once a tool returned it, names the same entity until it is gone.

Canonical ids (``<video>/entity_003``) are the entity index's grouping of mentions, numbered when a video is
written (``memtools.store.tables.entities``). Before any change, a write numbers them in order of first
appearance, so a merge would shift every id after it. So every entity change first *pins* the video: each
mention carries the id its entity has now (``Grounding.entity_id``), and a write keeps the ids mentions carry.
Then the edit says what moves:

* a merge gives the other entity's mentions the kept id (the other id now *moved* to it);
* a split gives the part it takes a new id (``fresh_id``), and the part that stays keeps the old one;
* a mention the edit adds (a named person) takes the id of the entity it joins by name, or a new one.

A new id is the next number after the highest the video holds and the highest ever issued for it (the
``IdLedger``), so an id an undone change made is never handed out again for something else. An undo writes
the video back exactly as it was, ids included (``memtools.changes.actions.pinned_change`` runs an entity
change on the pinned video). ``id_changes`` compares the entity index before and after a
change, for the result to say which ids moved, which are new and which are gone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memtools.schema import VideoGraph
from memtools.store.tables.entities import canonical_id, canonicalize, id_number
from memtools.store.tables.id_ledger import IdLedger

if TYPE_CHECKING:
    from memtools.store import Memory

ALL_ENTITIES = 1_000_000


@dataclass(frozen=True)
class IdChanges:
    """What a change did to the canonical ids of its video: ``moved`` (old id -> the id its mentions have now),
    ``new`` (ids it made) and ``gone`` (ids whose mentions are no longer in the video)."""

    moved: dict[str, str]
    new: list[str]
    gone: list[str]

    def line(self) -> str:
        """The ids to use now, in one sentence ("" when no id changed)."""
        parts = [f"{old} is now {new} (use {new})" for old, new in self.moved.items()]
        parts += [f"new entity {i}" for i in self.new] + [f"{i} is gone" for i in self.gone]
        return "Ids: " + "; ".join(parts) + "." if parts else ""


NO_ID_CHANGES = IdChanges({}, [], [])


def entity_groups(memory: Memory, video_id: str) -> dict[str, list[str]]:
    """The video's canonical ids and their mention ids, as the entity index holds them now."""
    memory.refresh()
    return {row.id: list(row.mentions) for row in memory.entities.of_video(video_id, ALL_ENTITIES)}


def pinned(graph: VideoGraph, groups: Mapping[str, Sequence[str]]) -> VideoGraph:
    """The video with each mention carrying the canonical id the entity index gives it now (module docstring)."""
    of_mention = {m: entity_id for entity_id, mentions in groups.items() for m in mentions}
    out = graph.model_copy(deep=True)
    for e in out.entities:
        if e.grounding.entity_id is None and e.id in of_mention:
            e.grounding.entity_id = of_mention[e.id]
    return out


def fresh_id(graph: VideoGraph, ledger: IdLedger, taken: Sequence[str] = ()) -> str:
    """An entity id of this video never held nor issued before."""
    prefix = canonical_id(graph.video_id, 0).removesuffix("000")
    last = max([ledger.highest(prefix), *(id_number(e.grounding.entity_id) for e in graph.entities),
                *(id_number(t) for t in taken)])
    return canonical_id(graph.video_id, last + 1)


def settled(graph: VideoGraph, ledger: IdLedger) -> VideoGraph:
    """Every mention with an id: one the edit added joins the entity it matches by name (its id) or takes a new
    one, per group of such mentions."""
    if all(e.grounding.entity_id for e in graph.entities):
        return graph
    out = graph.model_copy(deep=True)
    made: list[str] = []
    for group in canonicalize(out):
        carried = next((e.grounding.entity_id for e in group if e.grounding.entity_id), None)
        if carried is None:
            carried = fresh_id(out, ledger, made)
            made.append(carried)
        for e in group:
            e.grounding.entity_id = carried
    return out


def id_changes(before: Mapping[str, Sequence[str]], after: Mapping[str, Sequence[str]]) -> IdChanges:
    """Which ids a change moved, made and removed (``IdChanges``), from the entity index before and after it."""
    of_mention = {m: entity_id for entity_id, mentions in after.items() for m in mentions}
    moved, gone = {}, []
    for old, mentions in before.items():
        if old in after:
            continue
        now = [of_mention[m] for m in mentions if m in of_mention]
        if now:
            moved[old] = max(set(now), key=lambda i: (now.count(i), -id_number(i)))
        else:
            gone.append(old)
    return IdChanges(moved, sorted(set(after) - set(before)), gone)


__all__ = ["NO_ID_CHANGES", "IdChanges", "entity_groups", "fresh_id", "id_changes", "pinned", "settled"]
