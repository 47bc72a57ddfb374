"""Correct and forget through Python and the CLI: notes, entity renames, merges and splits, forgetting a video,
the change log and undo (docs/writing.md). The MCP front end and its permission: test_mcp_writes.py."""

from __future__ import annotations

import pytest

from mcp_support import make_memory
from memtools.changes import (
    add_note,
    change_log,
    forget_video,
    merge_entities,
    rename_entity,
    split_entity,
    undo_change,
)
from memtools.cli import main
from memtools.errors import ToolError, ToolNotFound
from memtools.store import Memory
from memtools.tools import MemoryTools


@pytest.fixture
def memory(tmp_path):
    with Memory.open(make_memory(tmp_path)) as opened:
        yield opened


def entities(memory: Memory) -> dict[str, tuple[str, list[str]]]:
    memory.refresh()
    return {e.id: (e.name, sorted(e.mentions)) for e in memory.entities.of_video("kitchen")}


def test_a_note_is_found_by_search_and_marked_as_the_users(memory):
    note = add_note(memory, "kitchen@2:05", "the man in the red apron is called Tom Zebrafish")
    tools = MemoryTools(memory)
    hits = tools.search_nodes("the man in the red apron is called Tom Zebrafish", top_k=5).hits
    hit = next(h for h in hits if h.id == "kitchen/macro_0001/evt_9001")
    assert hit.kind == "event" and "User note: the man in the red apron is called Tom Zebrafish" in hit.text
    about = add_note(memory, "kitchen/entity_004", "that pan was a wedding present")
    timeline = tools.get_entity_timeline(entity_id="kitchen/entity_004").render()
    assert "CONTEXT_FOR" in timeline and "wedding present" in timeline
    whole = add_note(memory, "kitchen", "filmed in our old flat in Leeds")
    found = tools.search_nodes("filmed in our old flat in Leeds", top_k=10, node_types=["event"]).hits
    assert "User note: filmed in our old flat in Leeds" in [h.text for h in found]
    log = change_log(memory)
    assert [c.id for c in log] == [whole.change_id, about.change_id, note.change_id] == ["c0003", "c0002", "c0001"]
    assert all(c.front_end == "python" and c.state == "done" and c.action == "note" for c in log)
    assert "kitchen@125s" in log[-1].summary


def test_bad_notes_and_unknown_ids_are_refused_and_change_nothing(memory):
    before = entities(memory)
    with pytest.raises(ToolError, match=r"10,485,760 characters long; a note holds at most 10,000"):
        add_note(memory, "kitchen@10", "x" * (10 * 1024 * 1024))
    with pytest.raises(ToolError, match="the note is empty"):
        add_note(memory, "kitchen@10", "   ")
    with pytest.raises(ToolNotFound, match="no video 'garage'"):
        add_note(memory, "garage@10", "a note")
    with pytest.raises(ToolError, match="'soon' is not a time"):
        add_note(memory, "kitchen@soon", "a note")
    with pytest.raises(ToolError, match="past its end"):
        add_note(memory, "kitchen@99999", "a note")
    with pytest.raises(ToolNotFound, match="no entity 'kitchen/entity_099'"):
        merge_entities(memory, "kitchen/entity_001", "kitchen/entity_099")
    with pytest.raises(ToolError, match="different videos"):
        merge_entities(memory, "kitchen/entity_001", "garage/entity_001")
    with pytest.raises(ToolNotFound, match="no video 'garage'"):
        forget_video(memory, "garage")
    with pytest.raises(ToolError, match="contains a path separator"):
        forget_video(memory, "../kitchen")
    with pytest.raises(ToolNotFound, match="no change 'c0042'"):
        undo_change(memory, "c0042")
    with pytest.raises(ToolNotFound, match="no change 'drop table'"):
        undo_change(memory, "drop table")
    assert change_log(memory) == [] and entities(memory) == before


def test_a_merge_is_undone_and_an_undo_of_the_undo_redoes_it(memory):
    before = entities(memory)
    merged = merge_entities(memory, "kitchen/entity_004", "kitchen/entity_005")
    after = entities(memory)
    assert len(after) == len(before) - 1
    pan = next(v for v in after.values() if "kitchen/macro_0002/ent_002" in v[1])
    assert pan == ("a black frying pan on the stove", ["kitchen/macro_0001/ent_002", "kitchen/macro_0002/ent_002"])
    undone = undo_change(memory, merged.change_id)
    assert entities(memory) == before
    with pytest.raises(ToolError, match=f"already undone by {undone.change_id}; undo {undone.change_id} to redo"):
        undo_change(memory, merged.change_id)
    redone = undo_change(memory, undone.change_id)
    assert redone.action == "redo" and entities(memory) == after
    note = add_note(memory, "kitchen@10", "a later change")
    with pytest.raises(ToolError, match=rf"changed after {redone.change_id} \(by {note.change_id}\); undo the later"):
        undo_change(memory, redone.change_id)
    undo_change(memory, note.change_id)
    undo_change(memory, redone.change_id)
    assert entities(memory) == before
    states = {c.id: c.undone_by for c in change_log(memory)}
    assert states[merged.change_id] == undone.change_id and states[undone.change_id] == redone.change_id


def test_rename_and_split_hold_across_later_writes(memory):
    rename_entity(memory, "kitchen/entity_001", "Tom")
    assert entities(memory)["kitchen/entity_001"][0] == "Tom"
    split_entity(memory, "kitchen/entity_001", ["kitchen/macro_0002/ent_001"], new_name="Sam")
    add_note(memory, "kitchen@250", "Sam came in to help")  # rewrites the video: the split must stay
    people = sorted(v for v in entities(memory).values() if v[0] in ("Tom", "Sam"))
    assert people == [("Sam", ["kitchen/macro_0002/ent_001"]),
                      ("Tom", ["kitchen/macro_0000/ent_001", "kitchen/macro_0001/ent_001"])]
    with pytest.raises(ToolError, match="every mention of the entity"):
        split_entity(memory, "kitchen/entity_003", ["kitchen/macro_0000/ent_003"])
    with pytest.raises(ToolError, match="is not a mention of this entity"):
        split_entity(memory, "kitchen/entity_001", ["kitchen/macro_0002/ent_002"])


def test_forget_and_undo_bring_the_video_back_whole(memory):
    frames = sorted(p.name for p in memory.frames_dir("kitchen").iterdir())
    vectors = memory.manifest.videos["kitchen"].keyframe_vectors
    forgot = forget_video(memory, "kitchen")
    assert memory.video_ids() == [] and not memory.frames_dir("kitchen").exists()
    undo_change(memory, forgot.change_id)
    assert memory.video_ids() == ["kitchen"]
    assert sorted(p.name for p in memory.frames_dir("kitchen").iterdir()) == frames
    assert memory.manifest.videos["kitchen"].keyframe_vectors == vectors == 12
    assert MemoryTools(memory).search_frames(query="a blue frame", video_id="kitchen", top_k=2).frames


def test_the_cli_records_its_changes_and_undoes_them(tmp_path, capsys):
    path = str(make_memory(tmp_path))
    assert main(["note", "kitchen@30", "the onions came from the market", "--memory", path]) == 0
    assert "c0001: note kitchen/macro_0000/evt_9001" in capsys.readouterr().out
    assert main(["merge-entities", "kitchen/entity_002", "kitchen/entity_003", "--memory", path]) == 0
    assert main(["undo", "c0002", "--memory", path]) == 0
    assert main(["undo", "c0002", "--memory", path]) == 1
    assert "memtools undo: error: change c0002 was already undone by c0003" in capsys.readouterr().err
    assert main(["log", "--memory", path]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["c0003", "c0002", "c0001"]
    assert all(" via cli " in line for line in lines) and "[undone by c0003]" in lines[1]
    assert main(["note", "kitchen@30", "x" * 20_000, "--memory", path]) == 1
    assert "at most 10,000" in capsys.readouterr().err
