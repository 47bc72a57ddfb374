"""Correcting and forgetting: notes, entity renames, merges and splits, forgetting a video, naming and
forgetting a person (``label_person``, ``forget_person``: docs/people.md), and undo.

Every change is journaled like a build (whole or not at all under ``kill -9``), recorded in the
memory's change log (``changes.sqlite``: id, when, who, through which front end, what) and can be
undone (``undo_change``; an undo of an undo redoes). Canonical entity ids stay across changes: a merge's
other id answers with the kept one, a split's part gets a new id, and no id is handed out twice
(``memtools.changes.ids``). A write whose target is not there, or would not change, is refused and not
logged. See docs/writing.md.

    from memtools import Memory
    from memtools.changes import add_note, merge_entities, undo_change, change_log

    with Memory.open("my-memory") as memory:
        note = add_note(memory, "kitchen@125", "the man in the red apron is Tom")
        merged = merge_entities(memory, "kitchen/entity_001", "kitchen/entity_004")
        undo_change(memory, merged.change_id)
        for change in change_log(memory):
            print(change.line())
"""

from memtools.changes.actions import (
    add_note,
    change_log,
    forget_video,
    merge_entities,
    rename_entity,
    split_entity,
    undo_change,
)
from memtools.changes.apply import Applied
from memtools.changes.edits import MAX_NOTE_CHARS
from memtools.changes.log import Change
from memtools.changes.people import forget_person, label_person

__all__ = ["MAX_NOTE_CHARS", "Applied", "Change", "add_note", "change_log", "forget_person", "forget_video",
           "label_person", "merge_entities", "rename_entity", "split_entity", "undo_change"]
