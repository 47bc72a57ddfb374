"""Bounded work for every argument (issue 50, item 7): every number a tool takes has a published maximum and is
refused past it; ``estimate_build``'s work does not grow with the duration; a lone surrogate in any argument is
a clean tool error over streamable HTTP, never a 500 (the refusal used to echo the text, which UTF-8 cannot
carry)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

import memtools.builder.estimate as estimate
from mcp_support import VALID_CALLS, Client, make_memory
from memtools.builder.config import BuildConfig
from memtools.builder.settings import BuildSettings
from memtools.builder.testing import scripted_vlm
from memtools.changes.tool_specs import WRITE_TOOL_SPECS
from memtools.jobs import JobRunner
from memtools.jobs.sources import SourcePolicy
from memtools.mcp.http import HttpOptions, http_app
from memtools.mcp.server import build_server
from memtools.store import Memory
from memtools.tools import TOOL_SPECS

WRITE_CALLS: dict[str, dict[str, Any]] = {"add_note": {"about": "kitchen@125", "text": "the cook is called Tom"},
                                          "list_changes": {}}
JOB_CALLS: dict[str, dict[str, Any]] = {"estimate_build": {"duration_sec": 600.0}, "list_jobs": {},
                                        "get_job": {"job_id": "job_0"}, "cancel_job": {"job_id": "job_0"}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
THIRTY_DAYS = 30 * 24 * 3600


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Any:
    """A writable memory served with every tool: the read catalogue, the write tools and the build tools."""
    folder = tmp_path_factory.mktemp("bounds")
    memory = Memory.open(make_memory(folder))
    runner = JobRunner(memory, BuildSettings(config=BuildConfig.short()), SourcePolicy(roots=[folder]),
                       vlm=scripted_vlm())
    yield build_server(memory, allow_writes=True, jobs=runner)
    runner.close()
    memory.close()


def numbers(schema: dict, node: Any = None, path: str = "") -> list[tuple[str, dict]]:
    """Every number or integer in a JSON schema (through properties, items, anyOf and $ref), with its path."""
    node = schema if node is None else node
    if not isinstance(node, dict):
        return []
    if "$ref" in node:
        return numbers(schema, schema["$defs"][node["$ref"].rsplit("/", 1)[1]], path)
    found = [(path, node)] if node.get("type") in ("number", "integer") else []
    for key in ("anyOf", "oneOf", "allOf"):
        for option in node.get(key, []):
            found += numbers(schema, option, path)
    for name, prop in node.get("properties", {}).items():
        found += numbers(schema, prop, f"{path}.{name}" if path else name)
    if "items" in node:
        found += numbers(schema, node["items"], f"{path}[]")
    return found


async def test_every_number_of_every_tool_has_a_maximum_and_is_refused_past_it(served):
    async with Client(served) as client:
        tools = (await client.list_tools()).tools
        assert {t.name for t in tools} == set(TOOL_SPECS) | set(WRITE_TOOL_SPECS) | set(JOB_CALLS) | {"add_video"}
        checked = 0
        for tool in tools:
            for path, prop in numbers(tool.input_schema):
                top = max(prop.get("maximum", float("-inf")), prop.get("exclusiveMaximum", float("-inf")))
                assert top != float("-inf"), f"{tool.name}.{path} has no maximum: {prop}"
                assert prop.get("description") or tool.input_schema["properties"][path].get("description"), \
                    f"{tool.name}.{path}: say what it is, and its bounds"
                if tool.name == "add_video":  # its call checks the source first; its one number is wait_seconds
                    continue
                base: dict[str, Any] = {**VALID_CALLS, **WRITE_CALLS, **JOB_CALLS}[tool.name]
                too_big = top * 10 + 1 if prop["type"] == "number" else int(top) + 1
                refused = await client.call_tool(tool.name, {**base, path: too_big})
                assert refused.is_error, (tool.name, path, too_big)
                text = refused.content[0].text
                assert path in text and ("less than" in text or "maximum" in text.lower()), text
                checked += 1
        assert checked >= 15


async def test_estimate_build_is_bounded_and_its_work_does_not_grow_with_the_duration(served, monkeypatch):
    windows: list[int] = []
    real = estimate.plan_window

    def counted(*args: Any, **kwargs: Any) -> Any:
        windows.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(estimate, "plan_window", counted)
    day = estimate.estimate_build([("day", 86_400)], BuildConfig.short())
    per_day = len(windows)
    month = estimate.estimate_build([("month", THIRTY_DAYS)], BuildConfig.short())
    assert len(windows) - per_day <= per_day  # 30 days walk no more windows than one day
    assert month.total.calls == pytest.approx(30 * day.total.calls, rel=0.01)  # and estimate 30 times as much
    with pytest.raises(ValueError, match="cannot be estimated"):
        estimate.estimate_build([("endless", float("inf"))], BuildConfig.short())
    async with Client(served) as client:
        schema = next(t for t in (await client.list_tools()).tools if t.name == "estimate_build").input_schema
        assert [p["maximum"] for _, p in numbers(schema) if "maximum" in p] == [THIRTY_DAYS]
        refused = await client.call_tool("estimate_build", {"duration_sec": 1e308})
        assert refused.is_error and "2592000" in refused.content[0].text.replace(",", "")
        month_out = await client.call_tool("estimate_build", {"duration_sec": THIRTY_DAYS})
        assert not month_out.is_error and month_out.structured_content["calls"] > 1000


def post(client: TestClient, name: str, arguments: dict) -> Any:
    """A tools/call as a client sends it: JSON text, where a lone surrogate is spelled ``\\ud800``."""
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments}})
    assert "\\ud800" in body
    return client.post("/mcp", content=body, headers={**MCP_HEADERS, "Content-Type": "application/json"})


def test_a_lone_surrogate_in_any_argument_is_a_clean_tool_error_over_http(tmp_path: Path):
    server = build_server(make_memory(tmp_path), allow_writes=True)
    calls: dict[str, tuple[dict[str, Any], str, str]] = {
        "add_note": ({"about": "kitchen@125", "text": "ok \ud800 then"}, "text holds", '"ok \\ud800 then"'),
        "search_nodes": ({"query": "pan \ud800" * 300}, "query holds", '"pan \\ud800pan'),
        "get_summary": ({"video_id": "kitchen\ud800"}, "video_id holds", '"kitchen\\ud800"'),
        "split_entity": ({"entity_id": "kitchen/entity_001", "mention_ids": ["kitchen/macro_0002/\ud800"]},
                         "mention_ids[0] holds", '"kitchen/macro_0002/\\ud800"'),
        "list_changes": ({"video_id": "\ud800"}, "video_id holds", '"\\ud800"'),
        "get_transcript\ud800": ({"video_id": "kitchen"}, "the tool name holds", '"get_transcript\\ud800"')}
    with TestClient(http_app(server, "127.0.0.1", HttpOptions()), base_url="http://127.0.0.1:8765") as client:
        for name, (arguments, which, echoed) in calls.items():
            answer = post(client, name, arguments)
            assert answer.status_code == 200, (name, answer.status_code, answer.text[:300])
            result = answer.json()["result"]
            text = result["content"][0]["text"]
            assert result["isError"] is True and which in text and echoed in text, (name, text)
            assert "lone surrogate" in text
            text.encode("utf-8")  # what came back is real text
        fine = client.post("/mcp", json={"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {
            "name": "search_nodes", "arguments": {"query": "the pan catches fire"}}}, headers=MCP_HEADERS)
        assert fine.status_code == 200 and fine.json()["result"]["isError"] is False
