"""Strict tool arguments over MCP, through the SDK's own client in both connection modes.

Every test iterates ``TOOL_SPECS``, so a new tool (or a new argument) is covered without
touching this file; ``VALID_CALLS`` must hold one valid call per tool.
"""

from __future__ import annotations

import pytest
from mcp.types import TextContent

from mcp_support import MODES, VALID_CALLS, Client, shared_memory
from memtools.mcp import build_server
from memtools.mcp.adapter import ERROR_KIND_META
from memtools.tools import TOOL_SPECS


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    return build_server(shared_memory(tmp_path_factory))


@pytest.fixture(params=MODES)
def connect(request, server):
    return lambda: Client(server, mode=request.param)


def text_of(result) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, TextContent))


def one_line_error(result, kind: str = "bad-arguments") -> str:
    text = text_of(result)
    assert result.is_error and result.structured_content is None, text
    assert "\n" not in text and "pydantic" not in text and "Field required" not in text, text
    assert result.meta[ERROR_KIND_META] == kind
    return text


def numeric_fields(schema: dict) -> dict[str, str]:
    """Argument name -> 'integer' / 'number' for every numeric property of a tool's input schema."""
    out = {}
    for name, prop in schema["properties"].items():
        types = {prop.get("type")} | {p.get("type") for p in prop.get("anyOf", [])}
        kind = "integer" if "integer" in types else "number" if "number" in types else None
        if kind:
            out[name] = kind
    return out


def test_every_tool_has_a_valid_call_here():
    assert set(VALID_CALLS) == set(TOOL_SPECS), "add one valid call per tool to mcp_support.VALID_CALLS"


async def test_input_schemas_are_closed(connect):
    async with connect() as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    for name in TOOL_SPECS:
        assert tools[name].input_schema["additionalProperties"] is False, name
        assert tools[name].input_schema["type"] == "object"


@pytest.mark.parametrize("name", list(TOOL_SPECS))
async def test_unknown_argument_names_are_errors_that_list_the_real_ones(connect, name):
    async with connect() as client:
        result = await client.call_tool(name, {**VALID_CALLS[name], "bogus_flag": 1})
    text = one_line_error(result)
    assert text.startswith(f"Tool error from {name}: unknown argument 'bogus_flag' for {name}")
    fields = list(TOOL_SPECS[name].args.model_fields)
    assert (f"its arguments are: {', '.join(fields)}" if fields else "it takes no arguments") in text


async def test_a_typo_gets_a_suggestion(connect):
    async with connect() as client:
        result = await client.call_tool("search_nodes", {"query": "the pan", "topk": 3})
    assert "unknown argument 'topk' for search_nodes (did you mean 'top_k'?)" in one_line_error(result)


@pytest.mark.parametrize("name", [n for n, s in TOOL_SPECS.items() if numeric_fields(s.args.model_json_schema())])
async def test_wrong_json_types_for_numbers_are_errors_not_conversions(connect, name):
    fields = numeric_fields(TOOL_SPECS[name].args.model_json_schema())
    async with connect() as client:
        for field, kind in fields.items():
            expected = "an integer" if kind == "integer" else "a number"
            for value, shown in ((True, "true (a boolean)"), ("5", '"5" (a string)')):
                result = await client.call_tool(name, {**VALID_CALLS[name], field: value})
                assert f"{field} must be {expected}, not {shown}" in one_line_error(result), (field, value)


async def test_non_finite_and_out_of_range_numbers_say_what_is_wrong(connect):
    async with connect() as client:
        result = await client.call_tool("search_by_time", {"start_sec": 10, "end_sec": 1e300, "video_id": "kitchen"})
        assert "end_sec should be less than or equal to 10000000; you passed 1e+300" in one_line_error(result)
        result = await client.call_tool("search_nodes", {"query": "pan", "top_k": 3.5})
        assert "top_k must be an integer, not 3.5 (a number)" in one_line_error(result)
        result = await client.call_tool("search_nodes", {"query": "pan", "top_k": 3.0})  # one JSON number type
        assert not result.is_error and len(result.structured_content["hits"]) == 3


async def test_null_for_an_optional_argument_means_its_default_and_json_string_lists_are_read(connect):
    async with connect() as client:
        result = await client.call_tool("search_nodes", {"query": "the pan catches fire", "top_k": None,
                                                         "node_types": '["event"]'})
        assert not result.is_error, text_of(result)
        assert {h["kind"] for h in result.structured_content["hits"]} == {"event"}
        assert len(result.structured_content["hits"]) > 3  # top_k fell back to its default (10), not 0 or 1


async def test_error_kinds_travel_in_meta(connect):
    async with connect() as client:
        missing = await client.call_tool("get_subgraph", {"macro_id": "kitchen/macro_0099"})
        assert "does not exist" in one_line_error(missing, "not-found")  # a ToolNotFound from the core
        ok = await client.call_tool("get_summary", {"video_id": "kitchen"})
        assert not ok.is_error and not (ok.meta or {}).get(ERROR_KIND_META)
