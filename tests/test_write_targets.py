"""Every write checks its target before it writes (docs/writing.md): each write tool, as the MCP server runs it
(``ToolSpec.invoke``), refuses an absent target, one of a video the memory does not hold or of another video, one of
the wrong kind, and one the change has already been made to, with a clear error, and logs no change. And no result
offers an undo that cannot be done."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from memtools.changes import change_log
from memtools.changes.tool_specs import WRITE_TOOL_SPECS
from memtools.embed.testing import TestEmbedder
from memtools.store import Memory
from memtools.tools import MemoryTools
from people_support import save, talk, voice

Call = tuple[str, dict]
NOTE = {"about": "kitchen@10", "text": "the cook is Tom"}
MERGE = {"entity_id": "kitchen/entity_004", "other_id": "kitchen/entity_005"}
SPLIT = {"entity_id": "kitchen/entity_001", "mention_ids": ["kitchen/macro_0002/ent_001"]}

# tool -> case -> (the calls made first, which succeed; the call refused; what the refusal says)
CASES: dict[str, dict[str, tuple[list[Call], dict, str]]] = {
    "add_note": {
        "absent": ([], {"about": "kitchen/entity_099", "text": "x"}, r"no entity 'kitchen/entity_099'"),
        "foreign-video": ([], {"about": "garage@10", "text": "x"}, r"no video 'garage'"),
        "wrong-kind": ([], {"about": "kitchen/macro_0002/evt_002", "text": "x"}, r"no entity 'kitchen/macro_0002/evt"),
        "already-changed": ([("add_note", NOTE)], NOTE, r"this note is already there \(kitchen/macro_0000/evt_9001\)"),
    },
    "rename_entity": {
        "absent": ([], {"entity_id": "kitchen/entity_099", "name": "Tom"}, r"no entity 'kitchen/entity_099'"),
        "foreign-video": ([], {"entity_id": "garage/entity_001", "name": "Tom"}, r"no video 'garage'"),
        "wrong-kind": ([], {"entity_id": "kitchen/macro_0001", "name": "Tom"}, r"no entity 'kitchen/macro_0001'"),
        "already-changed": ([("rename_entity", {"entity_id": "kitchen/entity_001", "name": "Tom"})],
                            {"entity_id": "kitchen/entity_001", "name": " Tom "}, r"already named 'Tom'; nothing"),
    },
    "merge_entities": {
        "absent": ([], {"entity_id": "kitchen/entity_001", "other_id": "kitchen/entity_099"}, r"no entity 'kitchen/"),
        "foreign-video": ([], {"entity_id": "kitchen/entity_001", "other_id": "k2/entity_001"}, r"different videos"),
        "wrong-kind": ([], {"entity_id": "kitchen/entity_001", "other_id": "kitchen/macro_0002/evt_002"},
                       r"no entity 'kitchen/macro_0002/evt_002'"),
        "already-changed": ([("merge_entities", MERGE)], MERGE,
                            r"kitchen/entity_005 was joined into kitchen/entity_004 by change c0001.*use kitchen/"),
    },
    "split_entity": {
        "absent": ([], {**SPLIT, "entity_id": "kitchen/entity_099"}, r"no entity 'kitchen/entity_099'"),
        "foreign-video": ([], {**SPLIT, "mention_ids": ["k2/macro_0002/ent_001"]}, r"is not a mention of this entity"),
        "wrong-kind": ([], {**SPLIT, "mention_ids": ["kitchen/macro_0002/evt_002"]}, r"is not a mention of this"),
        "already-changed": ([("split_entity", SPLIT)], SPLIT, r"is not a mention of this entity"),
    },
    "forget_video": {
        "absent": ([], {"video_id": "garage"}, r"no video 'garage'"),
        "foreign-video": ([], {"video_id": "nosuchvideo"}, r"no video 'nosuchvideo'"),
        "wrong-kind": ([], {"video_id": "kitchen/entity_001"}, r"contains a path separator"),
        "already-changed": ([("forget_video", {"video_id": "k2"})], {"video_id": "k2"}, r"no video 'k2'"),
    },
    "label_person": {
        "absent": ([], {"target": "kitchen/S9", "name": "Ada"}, r"has no voice 'S9'"),
        "foreign-video": ([], {"target": "nosuchvideo/S1", "name": "Ada"}, r"no video 'nosuchvideo'"),
        "wrong-kind": ([], {"target": "kitchen/entity_001", "name": "Ada"}, r"is not a person or a cluster"),
        "already-changed": ([("label_person", {"target": "kitchen/S1", "name": "Ada"})],
                            {"target": "kitchen/S1", "name": "Ada"}, r"voice S1 of kitchen is already named 'Ada'"),
    },
    "forget_person": {
        "absent": ([], {"target": "kitchen/S9"}, r"video 'kitchen' has no voice vectors for kitchen/S9 \(its voice "
                                                 r"clusters: S1, S2\)"),
        "foreign-video": ([], {"target": "nosuchvideo/S1"}, r"no video 'nosuchvideo'"),
        "wrong-kind": ([], {"target": "kitchen/entity_001"}, r"is not a person or a cluster"),
        "already-changed": ([("forget_person", {"target": "kitchen/S1"})], {"target": "kitchen/S1"},
                            r"forgotten already, by change c0001"),
    },
    "undo_change": {
        "absent": ([], {"change_id": "c0042"}, r"no change 'c0042'"),
        "foreign-video": ([("add_note", {**NOTE, "about": "k2@10"}), ("forget_video", {"video_id": "k2"})],
                          {"change_id": "c0001"}, r"video 'k2' changed after c0001 \(by c0002\)"),
        "wrong-kind": ([], {"change_id": "kitchen"}, r"no change 'kitchen'"),
        "already-changed": ([("add_note", NOTE), ("undo_change", {"change_id": "c0001"})], {"change_id": "c0001"},
                            r"already undone by c0002"),
    },
}


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """kitchen (voices S1 and S2 kept) and k2 (its speakers heard, no voice vectors)."""
    path = tmp_path_factory.mktemp("targets") / "m"
    with Memory.create(path, TestEmbedder(32)) as memory:
        save(path, "kitchen", {"S1": voice(1), "S2": voice(2)})
        memory.write_videos([talk("kitchen"), talk("k2")])
    return path


def test_every_write_tool_is_in_the_table():
    assert set(CASES) == set(WRITE_TOOL_SPECS) - {"list_changes"}


@pytest.mark.parametrize("tool, case", [(tool, case) for tool, cases in CASES.items() for case in cases])
def test_a_write_to_a_target_that_is_not_there_or_would_not_change_is_refused(template, tmp_path, tool, case):
    shutil.copytree(template, tmp_path / "m")
    first, refused, says = CASES[tool][case]
    with Memory.open(tmp_path / "m", TestEmbedder(32)) as memory:
        tools = MemoryTools(memory)
        for name, arguments in first:
            done = WRITE_TOOL_SPECS[name].invoke(tools, arguments)
            assert done.ok, done.text
        rows = len(change_log(memory))
        outcome = WRITE_TOOL_SPECS[tool].invoke(tools, refused)
        assert not outcome.ok and outcome.error is not None, outcome.text
        assert re.search(says, outcome.message), outcome.message
        assert "Done" not in outcome.text and len(change_log(memory)) == rows == len(first)


def test_forget_person_says_it_cannot_be_undone_and_offers_no_undo(template, tmp_path):
    shutil.copytree(template, tmp_path / "m")
    with Memory.open(tmp_path / "m", TestEmbedder(32)) as memory:
        done = WRITE_TOOL_SPECS["forget_person"].invoke(MemoryTools(memory), {"target": "kitchen/S2"})
    assert done.ok and "cannot be undone" in done.text and "undo_change" not in done.text
    assert done.data is not None and done.data["undoable"] is False
