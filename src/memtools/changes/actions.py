"""The changes a person (or an assistant they allowed) makes to a memory, each recorded and undoable.

Every function takes an open ``Memory``, checks its input (``ToolError`` / ``ToolNotFound`` in plain
words, nothing written), makes one change through ``memtools.changes.apply.change`` and returns an
``Applied``: the change id to give to ``undo_change``, and (``ids``) the canonical entity ids it moved or made.
Entity changes run on the *pinned* video (``pinned_change``, ``memtools.changes.ids``), so no other entity's id
changes; an edit that would change nothing is refused like an unknown id. The caller (front end, who) comes from
``memtools.tools.caller``: Python by default; the CLI and the MCP server set their own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from memtools.changes import edits
from memtools.changes.apply import Applied, Edit, change, digest, settle_if_left, undo
from memtools.changes.ids import entity_groups, fresh_id, pinned, settled
from memtools.changes.log import Change, ChangeLog
from memtools.errors import ToolError, ToolNotFound
from memtools.schema import VideoGraph, video_id_problem
from memtools.store.tables.id_ledger import IdLedger, moved_message

if TYPE_CHECKING:
    from memtools.store import Memory

ENTITY_HINT = "search_entities or get_entity_timeline gives entity ids like '<video>/entity_003'"


def _video_of(node_id: str) -> str:
    video_id = node_id.strip().split("/", 1)[0]
    if video_id_problem(video_id) is not None:
        raise ToolError(f"{node_id!r} is not an id of this memory; {ENTITY_HINT}")
    return video_id


def need_video(graph: VideoGraph | None, video_id: str) -> VideoGraph:
    if graph is None:
        raise ToolNotFound(f"no video {video_id!r} in this memory; list_videos gives the ids")
    return graph


def _mentions(memory: Memory, graph: VideoGraph, entity_id: str) -> tuple[list[str], str]:
    """The mention ids of an entity (canonical ``<video>/entity_003`` or a mention ``<macro>/ent_002``) and its
    name, from the entity index the last write made; an id a change joined into another is refused with the id
    to use now."""
    memory.refresh()
    rows = memory.entities.of_video(graph.video_id)
    for row in rows:
        if row.id == entity_id or entity_id in row.mentions:
            return list(row.mentions), row.name
    if any(e.id == entity_id for e in graph.entities):
        mention = next(e for e in graph.entities if e.id == entity_id)
        return [entity_id], mention.display_name
    ids = {row.id for row in rows}
    moved = moved_message(memory.path, entity_id, ids.__contains__)
    raise ToolNotFound(moved or f"no entity {entity_id!r} in video {graph.video_id!r}; {ENTITY_HINT}")


def pinned_change(memory: Memory, video_id: str, make: Callable[[VideoGraph, IdLedger], Edit]) -> Applied:
    """A change to a video's entities, made on the pinned video (``memtools.changes.ids``): ``make`` gets the video
    with every mention's canonical id and the ledger for new ids. An edit that changes nothing is refused."""

    def pinned_make(graph: VideoGraph | None) -> Edit:
        ledger = IdLedger(memory.path)
        now = pinned(need_video(graph, video_id), entity_groups(memory, video_id))
        edit = make(now, ledger)
        if edit.after is None:
            return edit
        after = settled(edit.after, ledger)
        if digest(after) == digest(now):
            raise ToolError(f"nothing to change: {edit.summary} leaves video {video_id!r} as it is")
        return replace(edit, after=after)

    return change(memory, video_id, pinned_make)


def forget_video(memory: Memory, video_id: str, *, purge: bool = False) -> Applied:
    """Remove a video (graph, vectors, keyframes) from the memory; ``undo_change`` brings it back whole.
    ``purge``: remove it from every file of the memory folder instead, for good, the change log's copies of it
    included (``memtools.changes.purge``; it works on a video forgotten before too); ``Applied.receipt`` then
    says what was removed."""
    problem = video_id_problem(video_id)
    if problem is not None:
        raise ToolError(f"video id {video_id!r} {problem}; list_videos gives the ids")
    if purge:
        from memtools.changes.purge import purge_videos

        receipt = purge_videos(memory, [video_id])
        return Applied(receipt["change_id"], "purge", f"purged video {video_id} for good", video_id, None,
                       receipt=receipt)

    def make(graph: VideoGraph | None) -> Edit:
        title = need_video(graph, video_id).video.title
        return Edit("forget", video_id, f"forgot video {video_id}" + (f" ({title})" if title else ""), None)

    return change(memory, video_id, make)


def add_note(memory: Memory, about: str, text: str) -> Applied:
    """Attach a user's statement to a moment (``video@t``: seconds, ``m:ss`` or ``h:mm:ss``), an entity id or a
    video id. The note is searchable (``search_nodes``) and marked as the user's."""
    text = edits.check_note(text)
    about = about.strip()
    where, _, at = about.partition("@")
    t = None
    if at:
        t = edits.parse_seconds(at)
        if t is None:
            raise ToolError(f"{at!r} is not a time; write the moment as video@seconds, e.g. 'kitchen@125' or "
                            "'kitchen@2:05'")
    video_id = _video_of(where)

    def make(graph: VideoGraph, ledger: IdLedger) -> Edit:
        entity = None
        if "/" in where:
            ids, _ = _mentions(memory, graph, where)
            entity = edits.mentions_of(graph, ids[:1])[0]
        elif where != video_id:
            raise ToolError(f"{about!r} names no video, moment or entity")
        after, note_id = edits.with_note(graph, text, t=t, entity=entity, floor=ledger.highest)
        target = f"{video_id}@{t:g}s" if t is not None and entity is None else where
        return Edit("note", video_id, f"note {note_id} on {target}: {text[:120]}", after)

    return pinned_change(memory, video_id, make)


def rename_entity(memory: Memory, entity_id: str, name: str) -> Applied:
    """Give an entity (every mention of it) a new name."""
    video_id = _video_of(entity_id)

    def make(graph: VideoGraph, ledger: IdLedger) -> Edit:
        ids, old = _mentions(memory, graph, entity_id)
        after = edits.renamed(graph, ids, name)
        return Edit("rename", video_id, f"renamed {entity_id} from {old!r} to {' '.join(name.split())!r}", after)

    return pinned_change(memory, video_id, make)


def merge_entities(memory: Memory, entity_id: str, other_id: str) -> Applied:
    """Make two entities of one video one (``other_id`` joins ``entity_id`` and takes its name)."""
    video_id = _video_of(entity_id)
    if _video_of(other_id) != video_id:
        raise ToolError(f"{entity_id!r} and {other_id!r} are in different videos; only entities of one video can "
                        "be merged")

    def make(graph: VideoGraph, ledger: IdLedger) -> Edit:
        keep, keep_name = _mentions(memory, graph, entity_id)
        other, other_name = _mentions(memory, graph, other_id)
        after = edits.merged(graph, keep, other, keep_name)
        return Edit("merge", video_id, f"merged {other_id} ({other_name}) into {entity_id} ({keep_name})", after)

    return pinned_change(memory, video_id, make)


def split_entity(memory: Memory, entity_id: str, mention_ids: list[str], new_name: str | None = None) -> Applied:
    """Make some mentions of an entity (``mention_ids``, from its timeline) an entity of their own."""
    video_id = _video_of(entity_id)

    def make(graph: VideoGraph, ledger: IdLedger) -> Edit:
        group, name = _mentions(memory, graph, entity_id)
        new_id = fresh_id(graph, ledger)
        after = edits.split(graph, group, [m.strip() for m in mention_ids], new_name, new_id)
        what = f" as {new_name!r}" if new_name else ""
        return Edit("split", video_id, f"split {len(mention_ids)} mention(s) off {entity_id} ({name}){what} into "
                                       f"{new_id}", after)

    return pinned_change(memory, video_id, make)


def undo_change(memory: Memory, change_id: str) -> Applied:
    """Undo one change (an undo of an undo redoes it); refused when its video changed since."""
    return undo(memory, change_id.strip())


def change_log(memory: Memory, limit: int = 50, video_id: str | None = None) -> list[Change]:
    """The newest changes, newest first (changes a killed process left pending settled first, when possible)."""
    settle_if_left(memory)
    return ChangeLog(memory.path).entries(limit, video_id)


__all__ = ["add_note", "change_log", "forget_video", "merge_entities", "need_video", "pinned_change", "rename_entity",
           "split_entity", "undo_change"]
