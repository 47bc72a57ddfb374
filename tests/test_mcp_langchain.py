"""A third-party client in the same environment: langchain-mcp-adapters loads and calls the tools.

This is how LangChain and LangGraph apps load MCP tools. langchain-mcp-adapters (0.3.2, the
latest) requires ``mcp<2``, and memtools serves on mcp 1.x as on 2.x, so ``pip install memtools
langchain-mcp-adapters`` is one working environment; this test runs there (the dev install).
On mcp 2.x (``scripts/test-mcp2.sh``) the adapters cannot be installed and it is skipped.
"""

from __future__ import annotations

import base64

import pytest

from mcp_support import http_server, jpeg, mcp_command, shared_memory
from memtools.tools import TOOL_SPECS

adapters = pytest.importorskip("langchain_mcp_adapters.client", exc_type=ImportError,
                               reason="langchain-mcp-adapters needs mcp<2 (installed with memtools[dev] on mcp 1.x)")
from langchain_mcp_adapters.tools import load_mcp_tools  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def memory_path(tmp_path_factory):
    return shared_memory(tmp_path_factory)


def call(name: str, args: dict) -> dict:
    """A tool call as a chat model emits it (the tool then answers with a ToolMessage: content + artifact)."""
    return {"name": name, "args": args, "id": f"call-{name}", "type": "tool_call"}


def text(message) -> str:
    return "\n".join(b["text"] for b in message.content if b["type"] == "text")


async def test_multi_server_client_loads_and_calls_the_tools_over_stdio(memory_path):
    command, args = mcp_command(memory_path)
    client = adapters.MultiServerMCPClient({"memtools": {"command": command, "args": args, "transport": "stdio"}})
    async with client.session("memtools") as session:  # one server process for every call
        tools = {t.name: t for t in await load_mcp_tools(session)}
        assert sorted(tools) == sorted(TOOL_SPECS)
        search = tools["search_nodes"]
        assert search.args_schema["properties"]["top_k"]["maximum"] == 50 and search.args_schema["required"] == [
            "query"]

        found = await search.ainvoke(call("search_nodes", {"query": "the cook covers the burning pan with a lid",
                                                           "top_k": 3}))
        assert "match(es)" in text(found) and "kitchen/macro_0002" in text(found)
        hits = found.artifact["structured_content"]["hits"]
        assert len(hits) == 3 and "kitchen/macro_0002" in [h["id"] for h in hits]

        bad = await search.ainvoke(call("search_nodes", {"query": "pan", "top_k": 500}))
        assert "top_k should be less than or equal to 50; you passed 500" in text(bad)

        frames = await tools["inspect_frames"].ainvoke(call("inspect_frames", {
            "video_id": "kitchen", "start_sec": 100, "end_sec": 200, "max_frames": 3}))
        images = [base64.b64decode(b["base64"]) for b in frames.content if b["type"] == "image" and "base64" in b]
        assert images == [jpeg(5), jpeg(6), jpeg(7)]  # the frames themselves, as LangChain image blocks
        assert "Frame 1/3" in text(frames) and "kitchen/macro_0001" in text(frames)

    prompt = await client.get_prompt("memtools", "answer_video_question",
                                      arguments={"question": "Why did the pan catch fire?", "video_id": "kitchen"})
    assert "Why did the pan catch fire?" in prompt[0].content and "get_summary(video_id='kitchen')" in prompt[0].content


async def test_multi_server_client_over_streamable_http(memory_path):
    with http_server(memory_path) as url:
        client = adapters.MultiServerMCPClient({"memtools": {"url": url, "transport": "streamable_http"}})
        tools = {t.name: t for t in await client.get_tools()}
        summary = await tools["get_summary"].ainvoke(call("get_summary", {"video_id": "kitchen"}))
    assert "Cooking stir-fry" in text(summary) and summary.artifact["structured_content"]["video_id"] == "kitchen"


async def test_frames_reach_openai_and_anthropic_payloads_as_data_not_urls(memory_path):
    """Every image LangChain gets from inspect_frames is base64 data a provider accepts, never a memtools:// URL."""
    command, args = mcp_command(memory_path)
    client = adapters.MultiServerMCPClient({"memtools": {"command": command, "args": args, "transport": "stdio"}})
    async with client.session("memtools") as session:
        tools = {t.name: t for t in await load_mcp_tools(session)}
        frames = await tools["inspect_frames"].ainvoke(call("inspect_frames", {
            "video_id": "kitchen", "start_sec": 100, "end_sec": 200, "max_frames": 3}))
    images = [b for b in frames.content if b["type"] == "image"]
    # Anthropic's image source is base64 (or an https URL): the adapters' blocks must carry base64 only
    assert len(images) == 3 and all(set(b) >= {"base64", "mime_type"} and "url" not in b for b in images)
    assert all(b["type"] in ("text", "image") for b in frames.content)  # no file blocks with unusable URLs
    assert "resource memtools://videos/kitchen/keyframes/kf_0005" in text(frames)  # the link, readable as text
    base = pytest.importorskip("langchain_openai.chat_models.base")
    chat = base._convert_message_to_dict(frames)  # the Chat Completions payload of the ToolMessage
    urls = [b["image_url"]["url"] for b in chat["content"] if b["type"] == "image_url"]
    assert len(urls) == 3 and all(u.startswith("data:image/jpeg;base64,") for u in urls)
    assert base64.b64decode(urls[0].split(",", 1)[1]) == jpeg(5)
    responses = base._construct_responses_api_input([frames])  # the Responses API payload
    inputs = [b["image_url"] for item in responses for b in item["output"] if b["type"] == "input_image"]
    assert len(inputs) == 3 and all(u.startswith("data:image/jpeg;base64,") for u in inputs)
