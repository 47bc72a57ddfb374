"""The tools that change the memory (``ToolSpec(..., write=True)``), apart from the read catalogue
``TOOL_SPECS``: notes, entity corrections, forgetting a video, naming and forgetting a person, undo and the
change log.

The MCP server serves them only when started with ``--allow-writes``, and lists and runs them only
for a caller that may write (``memtools.mcp.permission``). Front ends that only read (the LangChain
tools, the ORA loop, ``memtools tool``) never see them. Each wraps ``memtools.changes`` for
``ToolSpec.invoke``: it refuses a caller that may only read (``require_write``), runs the change as
that caller (the change log records the front end and who) and returns a ``ChangeResult`` naming
the change id to undo it. They live beside the changes, not in ``memtools.tools``, so the read
tools never import the write path.
"""

from __future__ import annotations

import json
from typing import Annotated

from pydantic import BaseModel, Field

from memtools.changes import actions as changes
from memtools.changes import people, questions
from memtools.changes.edits import MAX_NOTE_CHARS
from memtools.changes.forgetting import FORGET
from memtools.changes.ids import IdChanges
from memtools.tools.caller import require_write
from memtools.tools.core import MemoryTools
from memtools.tools.results import ToolResult
from memtools.tools.specs import Hints, ToolSpec, _Args

WRITE_TOOL_SPECS: dict[str, ToolSpec] = {}
"""Filled below, by ``register``."""


def register(*specs: ToolSpec) -> None:
    """Add write tools to the catalogue (each must say ``write=True``)."""
    for spec in specs:
        if not spec.write:
            raise ValueError(f"{spec.name} is not marked write=True")
        WRITE_TOOL_SPECS[spec.name] = spec


ADDS = Hints(read_only=False, destructive=False, idempotent=True)
"""Only adds (a note); the same note again is refused ("already there"), so it changes nothing more."""
OVERWRITES = Hints(read_only=False, destructive=True, idempotent=True)
"""Overwrites or deletes what is there (``undo_change`` brings most of it back, but it is no mere addition); the
same call again is refused (nothing left to change: already named, merged, split, forgotten or undone), so it
changes nothing more."""
READS_LOG = Hints(read_only=True, destructive=False, idempotent=True)

EntityId = Annotated[str, Field(max_length=256, description=(
    "Entity id from search_entities or get_entity_timeline, e.g. '<video>/entity_003' (a mention id like "
    "'<video>/macro_0003/ent_002' also works)."))]


class ChangeResult(ToolResult):
    """One change made: its id (to undo it, when it can be), what it did, the video it touched, and the entity ids
    to use now: ``moved_ids`` (an id the change joined into another -> that one), ``new_ids`` (made by it) and
    ``gone_ids`` (no longer in the video). Every other entity id stays as it was."""

    change_id: str
    action: str
    summary: str
    video_id: str
    undoable: bool = True
    moved_ids: dict[str, str] = Field(default_factory=dict)
    new_ids: list[str] = Field(default_factory=list)
    gone_ids: list[str] = Field(default_factory=list)
    receipt: dict | None = Field(None, description="A purge's receipt: the files, rows per table and table versions "
                                                   "removed (stored as purges/<change_id>.json)")

    def render(self) -> str:
        undo = (f"undo it with undo_change(change_id='{self.change_id}')" if self.undoable
                else "it cannot be undone")
        ids = IdChanges(self.moved_ids, self.new_ids, self.gone_ids).line()
        text = f"Done: {self.summary}. Change {self.change_id} ({undo})." + (f" {ids}" if ids else "")
        if self.receipt is not None:
            text += "\nReceipt: " + json.dumps(self.receipt, ensure_ascii=True, sort_keys=True)
        return text


class ChangeItem(BaseModel):
    change_id: str
    when: str
    who: str
    front_end: str
    action: str
    summary: str
    state: str
    undone_by: str | None = None


class ChangeList(ToolResult):
    changes: list[ChangeItem]

    def render(self) -> str:
        if not self.changes:
            return "No changes recorded in this memory yet."
        lines = [f"{len(self.changes)} change(s), newest first:"]
        for c in self.changes:
            state = "" if c.state == "done" else f" ({c.state})"
            undone = f" [undone by {c.undone_by}]" if c.undone_by else ""
            lines.append(f"{c.change_id} {c.when} {c.who} via {c.front_end}: {c.action}: {c.summary}{state}{undone}")
        return "\n".join(lines)


def _result(applied: changes.Applied) -> ChangeResult:
    return ChangeResult(change_id=applied.change_id, action=applied.action, summary=applied.summary,
                        video_id=applied.video_id, undoable=applied.action != FORGET and applied.receipt is None,
                        moved_ids=applied.ids.moved, new_ids=applied.ids.new, gone_ids=applied.ids.gone,
                        receipt=applied.receipt)


def add_note(tools: MemoryTools, about: str, text: str) -> ChangeResult:
    require_write()
    return _result(changes.add_note(tools.memory, about, text))


def forget_video(tools: MemoryTools, video_id: str, purge: bool = False) -> ChangeResult:
    require_write()
    return _result(changes.forget_video(tools.memory, video_id, purge=purge))


def rename_entity(tools: MemoryTools, entity_id: str, name: str) -> ChangeResult:
    require_write()
    return _result(changes.rename_entity(tools.memory, entity_id, name))


def merge_entities(tools: MemoryTools, entity_id: str, other_id: str) -> ChangeResult:
    require_write()
    return _result(changes.merge_entities(tools.memory, entity_id, other_id))


def split_entity(tools: MemoryTools, entity_id: str, mention_ids: list[str], new_name: str | None = None
                 ) -> ChangeResult:
    require_write()
    return _result(changes.split_entity(tools.memory, entity_id, mention_ids, new_name))


def label_person(tools: MemoryTools, target: str, name: str) -> ChangeResult:
    require_write()
    return _result(people.label_person(tools.memory, target, name))


def forget_person(tools: MemoryTools, target: str, purge: bool = False) -> ChangeResult:
    require_write()
    return _result(people.forget_person(tools.memory, target, purge=purge))


def undo_change(tools: MemoryTools, change_id: str) -> ChangeResult:
    require_write()
    return _result(changes.undo_change(tools.memory, change_id))


def list_changes(tools: MemoryTools, limit: int = 20, video_id: str | None = None) -> ChangeList:
    return ChangeList(changes=[ChangeItem(change_id=c.id, when=c.when, who=c.who, front_end=c.front_end,
                                          action=c.action, summary=c.summary, state=c.state, undone_by=c.undone_by)
                               for c in changes.change_log(tools.memory, limit, video_id)])


class NoteArgs(_Args):
    about: str = Field(min_length=1, max_length=300, description=(
        "What the note is about: a moment 'video@seconds' (e.g. 'kitchen@125' or 'kitchen@2:05'), an entity id "
        "('<video>/entity_003'), or a video id for the whole video."))
    text: str = Field(min_length=1, max_length=MAX_NOTE_CHARS, description=(
        f"The user's statement to remember, in their words (at most {MAX_NOTE_CHARS:,} characters), e.g. 'the man "
        "in the red apron is Tom'."))


class ForgetArgs(_Args):
    video_id: str = Field(max_length=128, description="Video id from list_videos: the video to remove.")
    purge: bool = Field(default=False, description=(
        "true: remove it for good from every file of the memory, the change log's copies included (also a video "
        "forgotten before); it cannot be undone, and the result holds a receipt of what was removed."))


class RenameArgs(_Args):
    entity_id: EntityId
    name: str = Field(min_length=1, max_length=200, description="The entity's right name, e.g. 'Tom'.")


class MergeArgs(_Args):
    entity_id: EntityId
    other_id: str = Field(max_length=256, description=(
        "The entity of the same video that is really the same one; it joins entity_id and takes its name."))


class SplitArgs(_Args):
    entity_id: EntityId
    mention_ids: list[Annotated[str, Field(max_length=256)]] = Field(min_length=1, max_length=200, description=(
        "The mentions ('<video>/macro_0003/ent_002', from get_entity_timeline) that are a different entity."))
    new_name: str | None = Field(default=None, max_length=200, description="The split-off entity's name, if known.")


PersonTarget = Annotated[str, Field(min_length=1, max_length=300, description=(
    "A person 'lib/person_0001' (get_entity_timeline or get_relations on an utterance gives it), or one cluster "
    "of a video: '<video>/S1' (a voice) or '<video>/F1' (a face)."))]


class LabelPersonArgs(_Args):
    target: PersonTarget
    name: str = Field(min_length=1, max_length=200, description="The person's name as the user gives it, e.g. 'Ada'.")


class ForgetPersonArgs(_Args):
    target: PersonTarget
    purge: bool = Field(default=False, description=(
        "true: also write the memory's files again so that no byte of the vectors is left; the result holds a "
        "receipt."))


class UndoArgs(_Args):
    change_id: str = Field(max_length=32, description="A change id from list_changes or a write's result, e.g. "
                                                      "'c0007'. Undoing an undo redoes the change.")


class ChangesArgs(_Args):
    limit: int = Field(default=20, ge=1, le=200, description="At most this many changes, newest first.")
    video_id: str | None = Field(default=None, max_length=128, description="Only changes to this video.")


register(
    ToolSpec("add_note", "write",
             "Remember something the user states about a moment, an entity or a video (e.g. who a person is). "
             "The note is found by search_nodes, marked as the user's, and can be undone.", NoteArgs, add_note,
             write=True, hints=ADDS),
    ToolSpec("rename_entity", "write", "Correct the name of an entity (every mention of it in its video).",
             RenameArgs, rename_entity, write=True, hints=OVERWRITES),
    ToolSpec("merge_entities", "write",
             "Make two entities of one video one (a duplicate the memory kept apart): other_id joins entity_id, and "
             "other_id then answers with entity_id (the result's moved_ids). No other entity's id changes.",
             MergeArgs, merge_entities, write=True, hints=OVERWRITES, confirm=questions.merge_entities),
    ToolSpec("split_entity", "write",
             "Split mentions off an entity that the memory wrongly made one (two people taken for one): they get a "
             "new entity id (the result's new_ids); entity_id keeps the rest.",
             SplitArgs, split_entity, write=True, hints=OVERWRITES, confirm=questions.split_entity),
    ToolSpec("forget_video", "write",
             "Remove a video from the memory (its graph, vectors and keyframes). Ask the user first; undo_change "
             "brings it back, unless purge is true (gone for good).", ForgetArgs, forget_video, write=True,
             hints=OVERWRITES, confirm=questions.forget_video),
    ToolSpec("label_person", "write",
             "Name a person the memory told apart by voice or face (S1, F1, or a library person): the user's name "
             "is the strongest evidence of who is who, across videos too. Undoable.", LabelPersonArgs, label_person,
             write=True, hints=OVERWRITES),
    ToolSpec("forget_person", "write",
             "Delete the voice and face vectors (biometric data) of a person in every video; the transcript keeps "
             "its text. Ask the user first: this cannot be undone.", ForgetPersonArgs, forget_person, write=True,
             hints=OVERWRITES, confirm=questions.forget_person),
    ToolSpec("undo_change", "write",
             "Undo one change (a note, rename, merge, split, forget or undo) by its id; undoing an undo redoes it.",
             UndoArgs, undo_change, write=True, hints=OVERWRITES, confirm=questions.undo_change),
    ToolSpec("list_changes", "write",
             "The memory's change log, newest first: change id, when, who, through which front end, what.",
             ChangesArgs, list_changes, write=True, hints=READS_LOG),
)

__all__ = ["ChangeItem", "ChangeList", "ChangeResult"]
