"""``ToolSpec.invoke``: the one adapter every front end uses (outcomes, error kinds, strict
arguments), and ``MemoryTools.keyframe``, the lookup behind the MCP keyframe resources."""

from __future__ import annotations

import pytest

from mcp_support import VALID_CALLS, jpeg, shared_memory
from memtools.errors import ToolError, ToolNotFound
from memtools.store import Memory
from memtools.tools import TOOL_SPECS, Frames, MemoryTools


@pytest.fixture(scope="module")
def tools(tmp_path_factory):
    with Memory.open(shared_memory(tmp_path_factory)) as memory:
        yield MemoryTools(memory)


@pytest.mark.parametrize("name", list(TOOL_SPECS))
def test_a_valid_call_gives_the_rendered_text_the_data_and_the_typed_result(tools, name):
    outcome = TOOL_SPECS[name].invoke(tools, VALID_CALLS[name])
    assert outcome.ok and outcome.error is None and outcome.message == ""
    assert outcome.text == outcome.result.render()
    assert outcome.data == outcome.result.model_dump(mode="json") and "images" not in outcome.data
    assert bool(outcome.images) == (name in ("inspect_frames", "search_frames"))


def test_frames_come_as_jpeg_bytes(tools):
    outcome = TOOL_SPECS["inspect_frames"].invoke(tools, VALID_CALLS["inspect_frames"])
    assert isinstance(outcome.result, Frames) and list(outcome.images) == [jpeg(5), jpeg(6), jpeg(7)]


@pytest.mark.parametrize(("name", "arguments", "kind", "message"), [
    ("get_subgraph", {"macro_id": "kitchen/macro_0099"}, "not-found", "macro event 'kitchen/macro_0099' does"),
    ("get_summary", {"video_id": "nope"}, "not-found", "no video 'nope' in this memory"),
    ("get_entity_timeline", {"name": "unicorn"}, "not-found", "unicorn"),
    ("get_subgraph", ["kitchen/macro_0002"], "bad-arguments",
     'the arguments of get_subgraph must be an object of named arguments, not ["kitchen/macro_0002"]'),
    ("get_summary", {"video": "kitchen"}, "bad-arguments",
     "unknown argument 'video' for get_summary (did you mean 'video_id'?); its arguments are: video_id"),
    ("get_relations", {"node_id": "kitchen/macro_0001", "direction": "up"}, "bad-arguments",
     "direction should be 'out', 'in' or 'both'; you passed \"up\""),
    ("search_nodes", {"query": "x", "top_k": 0, "node_types": ["planet"], "start_sec": -1, "end_sec": "9"},
     "bad-arguments", "and 1 more problem(s)"),
])
def test_failures_are_outcomes_with_a_kind_and_one_line(tools, name, arguments, kind, message):
    outcome = TOOL_SPECS[name].invoke(tools, arguments)
    assert not outcome.ok and outcome.error == kind and outcome.result is None and outcome.data is None
    assert message in outcome.message and "\n" not in outcome.message
    assert outcome.text == f"Tool error from {name}: {outcome.message}"


def test_the_cli_parses_strings_leniently_and_names_flags():
    spec = TOOL_SPECS["search_nodes"]
    args = spec.parse({"query": "pan", "top_k": "3"}, strict=False)
    assert args.top_k == 3
    with pytest.raises(ToolError, match="^unknown argument '--topk' for search_nodes \\(did you mean '--top-k'"):
        spec.parse({"query": "pan", "topk": "3"}, strict=False, name_of=lambda n: "--" + n.replace("_", "-"))
    with pytest.raises(ToolError, match='top_k must be an integer, not "3" \\(a string\\)'):
        spec.parse({"query": "pan", "top_k": "3"})


def test_keyframe_images_by_id(tools):
    assert tools.keyframe("kitchen/kf_0005") == jpeg(5)
    for bad, words in (("kitchen/kf_9999", "no keyframe 'kitchen/kf_9999'"),
                       ("kitchen/macro_0001", "is not a keyframe id"), ("../etc/kf_0001", "is not a keyframe id"),
                       ("nope/kf_0001", "no keyframe 'nope/kf_0001'")):
        with pytest.raises(ToolNotFound, match=words) as caught:
            tools.keyframe(bad)
        assert caught.value.kind == "not-found"


def test_a_keyframe_whose_file_is_gone_is_named(tmp_path):
    from mcp_support import make_memory

    path = make_memory(tmp_path)
    (path / "frames" / "kitchen" / "kf_0002.jpg").unlink()
    with Memory.open(path) as memory:
        with pytest.raises(ToolNotFound, match="keyframe 'kitchen/kf_0002' has no image file"):
            MemoryTools(memory).keyframe("kitchen/kf_0002")


def test_a_damaged_memory_is_unavailable_not_a_bad_call(tmp_path):
    import shutil

    from mcp_support import make_memory

    path = make_memory(tmp_path)
    shutil.rmtree(path / "vectors")  # the searchable nodes lost their table
    with Memory.open(path) as memory:
        outcome = TOOL_SPECS["get_summary"].invoke(MemoryTools(memory), {"video_id": "kitchen"})
    assert outcome.error == "unavailable" and "memtools repair" in outcome.message
