"""The tools as LangChain StructuredTools: schemas from TOOL_SPECS, text + artifact results,
image blocks from inspect_frames, ToolError as an error ToolMessage, and a user's own graph
with ToolNode (the offline example)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from agent_helpers import kitchen_memory
from mcp_support import VALID_CALLS
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


def _call(name: str, /, **args) -> dict:
    return {"name": name, "args": args, "id": f"id-{name}", "type": "tool_call"}


def test_names_descriptions_and_schemas_come_from_the_catalogue(tools):
    assert list(tools) == list(TOOL_SPECS)
    for name, spec in TOOL_SPECS.items():
        assert tools[name].description == spec.description
        schema = convert_to_openai_tool(tools[name])["function"]["parameters"]  # what bind_tools sends
        assert schema["properties"].keys() == spec.args.model_json_schema()["properties"].keys()
        assert schema["additionalProperties"] is False
    assert tools["get_subgraph"].metadata == {"memtools_group": "navigation"}
    search = convert_to_openai_tool(tools["search_nodes"])["function"]["parameters"]
    assert search["required"] == ["query"] and search["properties"]["top_k"]["maximum"] == 50


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
    assert msg.content.startswith("Tool error from get_subgraph: macro event 'kitchen/macro_0099' does not exist")


def test_bad_arguments_come_back_as_messages_too(tools):
    msg = tools["search_by_time"].invoke(_call("search_by_time", start_sec=500, end_sec=400))
    assert msg.status == "error" and "end_sec greater than start_sec" in msg.content
    msg = tools["search_nodes"].invoke(_call("search_nodes", query="lid", top_k=999))
    assert msg.status == "error" and "top_k" in msg.content


@pytest.mark.parametrize("name", list(TOOL_SPECS))
def test_unknown_argument_names_are_errors_naming_the_real_ones(tools, name):
    msg = tools[name].invoke(_call(name, **VALID_CALLS[name], bogus_flag=1))
    assert msg.status == "error" and "\n" not in msg.content
    assert msg.content.startswith(f"Tool error from {name}: unknown argument 'bogus_flag' for {name}")


@pytest.mark.parametrize(("name", "args", "message"), [
    ("search_nodes", {"query": "lid", "topk": 3}, "unknown argument 'topk' for search_nodes (did you mean 'top_k'?)"),
    ("search_nodes", {"query": "lid", "top_k": True}, "top_k must be an integer, not true (a boolean)"),
    ("search_nodes", {"query": "lid", "top_k": "5"}, 'top_k must be an integer, not "5" (a string)'),
    ("search_by_time", {"start_sec": "10", "end_sec": 20}, 'start_sec must be a number, not "10" (a string)'),
    ("search_nodes", {"top_k": 3}, "missing required argument 'query' for search_nodes"),
])
def test_wrong_types_are_errors_not_conversions(tools, name, args, message):
    msg = tools[name].invoke(_call(name, **args))
    assert msg.status == "error" and message in msg.content and "\n" not in msg.content


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
