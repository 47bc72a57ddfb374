"""The tools as LangChain StructuredTools: schemas from TOOL_SPECS, text + artifact results,
image blocks from inspect_frames, ToolError as an error ToolMessage, and a user's own graph
with ToolNode (the offline example)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from agent_helpers import kitchen_memory
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from memtools.agent.testing import ScriptedChatModel, tool_call
from memtools.langchain import as_langchain_tools
from memtools.tools import TOOL_SPECS, MemoryTools

EXAMPLE = Path(__file__).parent.parent / "examples" / "custom_graph.py"


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    mem = kitchen_memory(tmp_path_factory.mktemp("lc") / "mem")
    yield mem
    mem.close()


@pytest.fixture(scope="module")
def tools(memory):
    return {t.name: t for t in as_langchain_tools(memory)}


def _call(name: str, **args) -> dict:
    return {"name": name, "args": args, "id": f"id-{name}", "type": "tool_call"}


def test_names_descriptions_and_schemas_come_from_the_catalogue(tools):
    assert list(tools) == list(TOOL_SPECS)
    for name, spec in TOOL_SPECS.items():
        assert tools[name].description == spec.description
        assert tools[name].tool_call_schema.model_json_schema()["properties"].keys() == \
            spec.args.model_json_schema()["properties"].keys()
    assert tools["get_subgraph"].metadata == {"memtools_group": "navigation"}


def test_subset_and_unknown_names(memory):
    assert [t.name for t in as_langchain_tools(MemoryTools(memory), names=["search_nodes", "get_subgraph"])] == [
        "get_subgraph", "search_nodes"]
    with pytest.raises(ValueError, match="unknown tool names"):
        as_langchain_tools(memory, names=["get_everything"])


def test_result_is_rendered_text_with_the_typed_result_as_artifact(tools):
    msg = tools["get_subgraph"].invoke(_call("get_subgraph", macro_id="kitchen/macro_0002"))
    assert isinstance(msg, ToolMessage) and msg.status == "success"
    assert msg.content.startswith("Macro event kitchen/macro_0002")
    assert msg.artifact["macro"]["id"] == "kitchen/macro_0002" and len(msg.artifact["events"]) == 2


def test_inspect_frames_returns_image_blocks(tools):
    msg = tools["inspect_frames"].invoke(_call("inspect_frames", video_id="kitchen", start_sec=240, end_sec=300))
    kinds = [b["type"] for b in msg.content]
    assert kinds == ["text", "image", "image"]
    assert msg.content[1]["mime_type"] == "image/jpeg" and msg.content[1]["base64"].startswith("/9j/")
    assert [b["type"] for b in msg.content_blocks] == ["text", "image", "image"]
    assert [f["t"] for f in msg.artifact["frames"]] == [250.0, 265.0] and "images" not in msg.artifact


def test_tool_error_becomes_an_error_message_the_model_reads(tools):
    msg = tools["get_subgraph"].invoke(_call("get_subgraph", macro_id="kitchen/macro_0099"))
    assert msg.status == "error"
    assert msg.content.startswith("Tool error: macro event 'kitchen/macro_0099' does not exist")


def test_bad_arguments_come_back_as_messages_too(tools):
    msg = tools["search_by_time"].invoke(_call("search_by_time", start_sec=500, end_sec=400))
    assert msg.status == "error" and "end_sec greater than start_sec" in msg.content
    msg = tools["search_nodes"].invoke(_call("search_nodes", query="lid", top_k=999))
    assert msg.status == "error" and "top_k" in msg.content


def test_user_graph_with_tool_node(memory):
    spec = importlib.util.spec_from_file_location("custom_graph_example", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    model = ScriptedChatModel(responses=[
        tool_call("search_nodes", query="the pan catches fire", top_k=3),
        tool_call("get_subgraph", macro_id="kitchen/macro_0099"),  # a wrong id: the model sees the error
        tool_call("get_subgraph", macro_id="kitchen/macro_0002"),
        AIMessage(content="A metal lid."),
    ])
    graph = example.build_graph(model, as_langchain_tools(memory))
    out = graph.invoke({"messages": [HumanMessage("How is the fire put out?")]})
    tool_msgs = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert [m.status for m in tool_msgs] == ["success", "error", "success"]
    assert out["messages"][-1].content == "A metal lid."
    assert "does not exist" in model.prompts[2][-1].content  # the error reached the model


def test_example_runs_offline(capsys):
    spec = importlib.util.spec_from_file_location("custom_graph_example_main", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    example.main([])
    out = capsys.readouterr().out
    assert "search_nodes" in out and "Macro event kitchen/macro_0002" in out and "metal lid" in out
