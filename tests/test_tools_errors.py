"""Every ToolError path: the message names the problem and what to call instead."""

from __future__ import annotations

import pytest

from memtools.errors import ToolError
from memtools.tools import TOOL_SPECS

INJECTION = "x') RETURN 1 //"


@pytest.mark.parametrize(("call", "expected"), [
    (lambda t: t.get_summary("nope"), "no video 'nope'"),
    (lambda t: t.get_summary(INJECTION), "Call list_videos"),
    (lambda t: t.get_super_events(super_ids=["kitchen/super_99"]), "get_super_events"),
    (lambda t: t.get_macro_events(), "either super_id"),
    (lambda t: t.get_macro_events(super_id="kitchen/super_00", macro_ids=["kitchen/macro_0000"]), "not both"),
    (lambda t: t.get_macro_events(super_id=INJECTION), "does not exist"),
    (lambda t: t.get_macro_events(macro_ids=["kitchen/macro_0042"]), "get_macro_events"),
    (lambda t: t.get_macro_events(macro_ids=[f"kitchen/macro_{i:04d}" for i in range(60)]), "at most 50"),
    (lambda t: t.get_subgraph("kitchen/macro_0042"), "macro event 'kitchen/macro_0042' does not exist"),
    (lambda t: t.get_subgraph("kitchen/super_00"), "is a super event, not a macro event; call get_macro_events"),
    (lambda t: t.get_subgraph("kitchen/macro_0000/ent_001"), "Ids look like '<video>/macro_0003'"),
    (lambda t: t.get_subgraph(INJECTION), "does not exist"),
    (lambda t: t.search_nodes(""), "query is empty"),
    (lambda t: t.search_nodes("   "), "query is empty"),
    (lambda t: t.search_nodes("x" * 2000), "keep it under"),
    (lambda t: t.search_nodes("fire", top_k=0), "top_k must be between 1 and 50"),
    (lambda t: t.search_nodes("fire", top_k=51), "top_k must be between 1 and 50"),
    (lambda t: t.search_nodes("fire", node_types=["person"]), "unknown node_types"),
    (lambda t: t.search_nodes("fire", video_id="other"), "no video 'other'"),
    (lambda t: t.search_nodes("fire", start_sec=50, end_sec=10), "end_sec greater than start_sec"),
    (lambda t: t.search_by_time(-5, 10), "start_sec must be >= 0"),
    (lambda t: t.search_by_time(30, 30), "end_sec greater than start_sec"),
    (lambda t: t.search_by_time(4000, 5000), "only 0:06:00 long"),
    (lambda t: t.get_relations("kitchen/macro_0002/evt_009"), "node 'kitchen/macro_0002/evt_009' does not exist"),
    (lambda t: t.get_relations(INJECTION), "does not exist"),
    (lambda t: t.get_relations("kitchen/macro_0002", direction="up"), "direction must be"),
    (lambda t: t.get_relations("kitchen/macro_0002", relation_types=["LOVES"]), "unknown relation types"),
    (lambda t: t.inspect_frames("kitchen", 10, 5), "end_sec greater than start_sec"),
    (lambda t: t.inspect_frames("kitchen", 0, 10, max_frames=0), "max_frames must be between 1 and 16"),
    (lambda t: t.inspect_frames("kitchen", 900, 1000), "only 0:06:00 long"),
])
def test_tool_errors_say_what_to_do(kitchen_tools, call, expected):
    with pytest.raises(ToolError) as info:
        call(kitchen_tools)
    assert expected in str(info.value)


def test_injection_strings_are_data_not_queries(kitchen_tools):
    result = kitchen_tools.search_nodes(INJECTION)
    assert all(hit.id.startswith("kitchen/") for hit in result.hits)
    # the store is intact afterwards
    assert kitchen_tools.get_summary().video_id == "kitchen"


def test_video_id_is_required_when_several_videos(fresh_memory):
    from memtools.testing import kitchen_graph
    from memtools.tools import MemoryTools

    fresh_memory.write_videos([kitchen_graph("a"), kitchen_graph("b")])
    tools = MemoryTools(fresh_memory)
    with pytest.raises(ToolError, match="holds 2 videos, so pass video_id; some ids: a, b"):
        tools.get_summary()
    assert {h.video_id for h in tools.search_nodes("lid", top_k=20).hits} == {"a", "b"}


def test_empty_memory_says_how_to_fill_it(fresh_memory):
    from memtools.tools import MemoryTools

    with pytest.raises(ToolError, match="memtools import-captions"):
        MemoryTools(fresh_memory).get_summary()


@pytest.mark.parametrize(("name", "args"), [
    ("search_nodes", {"query": "fire", "top_k": "many"}),
    ("search_nodes", {"query": "fire", "node_types": ["person"]}),
    ("search_by_time", {"start_sec": -1, "end_sec": 2}),
    ("get_subgraph", {}),
    ("get_subgraph", {"macro_id": "x" * 100_000}),
    ("inspect_frames", {"video_id": "kitchen", "start_sec": 0, "end_sec": 5, "max_frames": 1000}),
    ("list_videos", {"surprise": 1}),
])
def test_spec_argument_models_reject_bad_arguments(name, args):
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        TOOL_SPECS[name].args.model_validate(args)
