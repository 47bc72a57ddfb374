"""Protocol completeness: an honest tool list, completions, logging/setLevel, the tool-name prefix, the docs."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from mcp.types import PromptReference, ResourceTemplateReference

from mcp_support import Client, shared_memory, with_keyframes
from memtools.embed.testing import TestEmbedder
from memtools.errors import ConfigError
from memtools.mcp import build_server
from memtools.mcp.completions import MAX_VALUES, complete
from memtools.store import Memory
from memtools.testing import kitchen_graph
from memtools.tools import TOOL_SPECS, MemoryTools

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def memory_path(tmp_path_factory):
    return shared_memory(tmp_path_factory)


@pytest.fixture(scope="module")
def text_only_memory(tmp_path_factory):
    """Keyframes but no image embedder: search_frames cannot work there."""
    path = tmp_path_factory.mktemp("text-only") / "mem"
    with Memory.create(path, TestEmbedder(64)) as memory:
        memory.write_video(with_keyframes(kitchen_graph("kitchen"), path))
    return path


async def test_tools_that_cannot_work_are_not_listed(memory_path, text_only_memory):
    async with Client(build_server(text_only_memory)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == set(TOOL_SPECS) - {"search_frames"}
        refused = await client.call_tool("search_frames", {"query": "red"})  # a client that listed it elsewhere
        assert refused.is_error and "no keyframe vectors" in refused.content[0].text
        assert refused.meta["memtools/errorKind"] == "unavailable"
    async with Client(build_server(memory_path)) as client:
        assert {t.name for t in (await client.list_tools()).tools} == set(TOOL_SPECS)


async def test_every_template_variable_and_prompt_argument_completes(memory_path):
    summary = ResourceTemplateReference(type="ref/resource", uri="memtools://videos/{video_id}/summary")
    keyframe = ResourceTemplateReference(type="ref/resource", uri="memtools://videos/{video_id}/keyframes/{name}")
    frame = ResourceTemplateReference(type="ref/resource", uri="memtools://videos/{video_id}/frames/{t}")
    prompt = PromptReference(type="ref/prompt", name="answer_video_question")
    async with Client(build_server(memory_path)) as client:
        init = client.server_capabilities if hasattr(client, "server_capabilities") else None
        assert init is None or init.completions is not None

        async def values(ref, name, typed, context=None):
            return (await client.complete(ref, {"name": name, "value": typed}, context)).completion.values

        assert await values(summary, "video_id", "ki") == ["kitchen"]
        assert await values(summary, "video_id", "KI") == ["kitchen"]
        assert await values(summary, "video_id", "zz") == []
        assert await values(prompt, "video_id", "") == ["kitchen"]
        names = await values(keyframe, "name", "kf_000", {"video_id": "kitchen"})
        assert names and names == sorted(names) and all(n.startswith("kf_000") for n in names)
        assert await values(keyframe, "name", "kf_", {"video_id": "other"}) == []
        assert await values(keyframe, "name", "kf_") == []  # which video? nothing to offer yet
        times = await values(frame, "t", "", {"video_id": "kitchen"})
        assert times and all(re.fullmatch(r"\d+\.\d{3}", t) for t in times)
        entities = await values(prompt, "question", "", {"video_id": "kitchen"})
        graph = kitchen_graph("kitchen")
        assert set(entities) == {e.name for e in graph.entities if e.name}
        first = entities[0]
        assert await values(prompt, "question", first[:2].upper()) == [
            e for e in entities if e.lower().startswith(first[:2].lower())]
        assert await values(prompt, "nonsense", "") == []


def test_completions_are_capped_at_100(memory_path, monkeypatch):
    from memtools.mcp import completions

    monkeypatch.setitem(completions.SOURCES, "video_id", lambda tools, vid: [f"v{i:03d}" for i in range(250)])
    with Memory.open(memory_path) as memory:
        done = complete(MemoryTools(memory), "video_id", "v", None)
        assert len(done.values) == MAX_VALUES and done.total == 250 and done.model_dump(by_alias=True)["hasMore"]
        assert complete(MemoryTools(memory), "video_id", "v24", None).values == [f"v24{i}" for i in range(10)]


def test_logging_set_level_is_accepted(memory_path):
    """At protocol 2025-06-18 (Claude's; the logging capability is gone from the newest revision)."""
    from starlette.testclient import TestClient

    from memtools.mcp.http import http_app

    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}

    def rpc(client: TestClient, method: str, params: dict) -> dict:
        return client.post("/mcp", headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": method,
                                                          "params": params}).json()

    logger = logging.getLogger("memtools")
    before = logger.level
    try:
        with TestClient(http_app(build_server(memory_path)), base_url="http://127.0.0.1:8765") as client:
            init = rpc(client, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                              "clientInfo": {"name": "t", "version": "0"}})["result"]
            assert "logging" in init["capabilities"] and "completions" in init["capabilities"]
            assert rpc(client, "logging/setLevel", {"level": "debug"})["result"] == {}
            assert logger.level == logging.DEBUG
            assert rpc(client, "logging/setLevel", {"level": "error"})["result"] == {}
            assert logger.level == logging.ERROR
            assert rpc(client, "logging/setLevel", {"level": "loud"})["error"]["code"] == -32602
    finally:
        logger.setLevel(before)


async def test_a_tool_prefix_renames_every_tool(memory_path):
    server = build_server(memory_path, tool_prefix="memtools_")
    async with Client(server) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == {f"memtools_{n}" for n in TOOL_SPECS}
        found = await client.call_tool("memtools_search_nodes", {"query": "pan fire", "top_k": 2})
        assert not found.is_error and found.structured_content["hits"]
        strict = await client.call_tool("memtools_search_nodes", {"query": "pan", "topk": 2})
        assert strict.is_error and "did you mean 'top_k'" in strict.content[0].text
        assert (await client.call_tool("search_nodes", {"query": "pan"})).is_error  # the bare name is not served
    with pytest.raises(ConfigError, match="--tool-prefix"):
        build_server(memory_path, tool_prefix="memtools tools!")


def test_the_server_readme_names_every_tool():
    readme = (REPO / "docs" / "mcp-server.md").read_text(encoding="utf-8")
    missing = [name for name in TOOL_SPECS if f"`{name}`" not in readme]
    assert not missing, f"docs/mcp-server.md does not describe: {missing}"
