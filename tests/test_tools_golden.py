"""Every tool on a small real memory, its rendered text compared with a golden file.

Regenerate after an intended change with ``MEMTOOLS_UPDATE_GOLDEN=1 pytest tests/test_tools_golden.py``
and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden"

CALLS = {
    "list_videos": lambda t: t.list_videos(),
    "get_summary": lambda t: t.get_summary(),
    "get_super_events": lambda t: t.get_super_events(video_id="kitchen"),
    "get_super_events_by_id": lambda t: t.get_super_events(super_ids=["kitchen/super_01"]),
    "get_macro_events_super": lambda t: t.get_macro_events(super_id="kitchen/super_01"),
    "get_macro_events_ids": lambda t: t.get_macro_events(macro_ids=["kitchen/macro_0000", "kitchen/macro_0009"]),
    "get_subgraph": lambda t: t.get_subgraph("kitchen/macro_0002"),
    "search_nodes": lambda t: t.search_nodes("pan catches fire", top_k=3),
    "search_nodes_filtered": lambda t: t.search_nodes("onions", node_types=["entity"], video_id="kitchen",
                                                       start_sec=0, end_sec=100),
    "search_nodes_as_of": lambda t: t.search_nodes("pan fire lid", top_k=4, as_of_sec=245),
    "search_graph": lambda t: t.search_graph("pan catches fire", top_k=4),
    "search_entities": lambda t: t.search_entities("cook in a blue apron", top_k=3),
    "get_entity_timeline": lambda t: t.get_entity_timeline(name="cook"),
    "get_entity_timeline_as_of": lambda t: t.get_entity_timeline(entity_id="kitchen/entity_001", as_of_sec=240),
    "get_summary_as_of": lambda t: t.get_summary(as_of_sec=250),
    "search_by_time": lambda t: t.search_by_time(100, 200),
    "get_relations": lambda t: t.get_relations("kitchen/macro_0002/evt_001"),
    "get_relations_macro_out": lambda t: t.get_relations("kitchen/macro_0001", direction="out",
                                                         relation_types=["CAUSES"]),
    "inspect_frames_none": lambda t: t.inspect_frames("kitchen", 0, 60),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_rendered_output_matches_golden(kitchen_tools, name):
    assert_golden(name, CALLS[name](kitchen_tools).render())


def assert_golden(name: str, rendered: str) -> None:
    """``rendered`` equals ``golden/<name>.txt`` (written when missing or MEMTOOLS_UPDATE_GOLDEN is set)."""
    text = rendered + "\n"
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("MEMTOOLS_UPDATE_GOLDEN") or not path.exists():
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def test_structured_results_carry_ids_and_absolute_times(kitchen_tools):
    hits = kitchen_tools.search_nodes("pan catches fire", top_k=5).hits
    fire = next(h for h in hits if h.id == "kitchen/macro_0002/evt_001")
    assert (fire.t_start, fire.t_end) == (245.0, 260.0)
    assert fire.macro_id == "kitchen/macro_0002"
    assert any("CAUSES" in line for line in fire.context)


def test_relations_follow_the_cause_chain(kitchen_tools):
    rel = kitchen_tools.get_relations("kitchen/macro_0001", direction="out")
    causes = [e for e in rel.outgoing if e.label == "CAUSES"]
    assert [e.target for e in causes] == ["kitchen/macro_0002"]
    assert "overheated oil" in causes[0].description


def test_subgraph_holds_every_child_and_edge(kitchen_tools):
    sub = kitchen_tools.get_subgraph("kitchen/macro_0001")
    assert [e.id for e in sub.entities] == ["kitchen/macro_0001/ent_001", "kitchen/macro_0001/ent_002"]
    assert [e.id for e in sub.events] == ["kitchen/macro_0001/evt_001", "kitchen/macro_0001/evt_002"]
    assert [o.text for o in sub.ocr] == ['"HIGH HEAT"']
    assert {(e.label, e.source.rsplit("/", 1)[1], e.target.rsplit("/", 1)[1]) for e in sub.edges} == {
        ("PERFORMS", "ent_001", "evt_001"), ("BEFORE", "evt_001", "evt_002"), ("ANNOTATES", "ocr_001", "ent_002")}


def test_search_by_time_returns_overlapping_macros_with_super_labels(kitchen_tools):
    result = kitchen_tools.search_by_time(250, 255)
    assert [(m.macro.id, m.macro.super_label) for m in result.matches] == [
        ("kitchen/macro_0002", "Frying and the pan fire")]
