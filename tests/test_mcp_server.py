"""The MCP server in-process, through the SDK's own client, in both connection modes.

``mode="auto"`` dispatches directly and negotiates protocol 2026-07-28; ``mode="legacy"``
runs JSON-RPC over memory streams with the 2025-11-25 handshake most clients use today.
"""

from __future__ import annotations

import base64
import json
import logging
import re

import anyio
import pytest
from mcp.types import INVALID_PARAMS, ImageContent, ResourceLink, TextContent

from mcp_support import MODES, VALID_CALLS, Client, MCPError, jpeg, shared_memory
from memtools.mcp import MAX_RESULT_CHARS, build_server
from memtools.mcp.adapter import FramesOut, output_model
from memtools.mcp.app import tool_meta
from memtools.tools import TOOL_SPECS


@pytest.fixture(scope="module")
def memory_path(tmp_path_factory):
    return shared_memory(tmp_path_factory)


@pytest.fixture(scope="module")
def server(memory_path):
    return build_server(memory_path)


@pytest.fixture(params=MODES)
def connect(request, server):
    """``async with connect() as client`` (an async fixture would enter and leave the client in different tasks)."""
    return lambda: Client(server, mode=request.param)


def text_of(result) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, TextContent))


async def test_lists_every_tool_generated_from_the_specs(connect):
    async with connect() as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == set(TOOL_SPECS)
        for name, tool in tools.items():
            spec = TOOL_SPECS[name]
            assert tool.description == spec.description
            assert tool.annotations.read_only_hint and tool.annotations.idempotent_hint
            assert tool.annotations.open_world_hint is False and tool.annotations.destructive_hint is False
            assert tool.meta == {"anthropic/maxResultSizeChars": MAX_RESULT_CHARS, **tool_meta(name)}  # + the app
            required = {n for n, f in spec.args.model_fields.items() if f.is_required()}
            assert set(tool.input_schema.get("required", [])) == required
            assert set(tool.input_schema["properties"]) == set(spec.args.model_fields)
            assert tool.output_schema["title"] == output_model(spec).__name__
        search = tools["search_nodes"].input_schema["properties"]
        assert (search["top_k"]["minimum"], search["top_k"]["maximum"]) == (1, 50)
        assert search["query"]["maxLength"] == 1000 and "descriptive statement" in search["query"]["description"]
        frames = tools["inspect_frames"]
        assert frames.input_schema["properties"]["max_frames"]["maximum"] == 16
        assert "images" not in frames.output_schema["properties"]
        assert "uri" in frames.output_schema["$defs"]["FrameOut"]["properties"]


async def test_instructions_explain_how_to_drill_down(connect):
    async with connect() as client:
        text = client.instructions
        for word in ("get_summary", "get_macro_events", "get_subgraph", "search_nodes", "get_relations"):
            assert word in text


@pytest.mark.parametrize("name", list(VALID_CALLS))
async def test_every_tool_answers_with_text_and_structured_content(connect, name):
    async with connect() as client:
        result = await client.call_tool(name, VALID_CALLS[name])
        assert not result.is_error, text_of(result)
        assert isinstance(result.content[0], TextContent) and result.content[0].text
        output_model(TOOL_SPECS[name]).model_validate(result.structured_content)


async def test_tool_results_carry_the_memory(connect):
    async with connect() as client:
        summary = await client.call_tool("get_summary", {"video_id": "kitchen"})
        assert "Cooking stir-fry" in text_of(summary) and "kitchen/super_01" in text_of(summary)
        assert summary.structured_content["supers"][1]["id"] == "kitchen/super_01"
        search = await client.call_tool("search_nodes", {"query": "the pan catches fire", "top_k": 3})
        assert "kitchen/macro_0002/evt_001" in [h["id"] for h in search.structured_content["hits"]]
        relations = await client.call_tool("get_relations", {"node_id": "kitchen/macro_0001", "direction": "out"})
        assert "CAUSES" in text_of(relations)


async def test_inspect_frames_returns_images_captions_and_links(connect):
    async with connect() as client:
        result = await client.call_tool("inspect_frames", VALID_CALLS["inspect_frames"])
        assert not result.is_error
        head = result.content[0].text
        assert "0:02:00" in head and "kitchen/macro_0001" in head and "Heating oil" in head  # stands alone
        assert "memtools://videos/kitchen/keyframes/kf_0005" in head
        images = [b for b in result.content if isinstance(b, ImageContent)]
        links = [b.text.rsplit("; resource ", 1)[1] for b in result.content[1:] if isinstance(b, TextContent)]
        assert len(images) == len(links) == 3 and not [b for b in result.content if isinstance(b, ResourceLink)]
        assert [base64.b64decode(i.data) for i in images] == [jpeg(5), jpeg(6), jpeg(7)]
        assert all(i.mime_type == "image/jpeg" for i in images)
        frames = FramesOut.model_validate(result.structured_content)
        assert [f.t for f in frames.frames] == [120.0, 150.0, 180.0]
        assert [f.uri for f in frames.frames] == links
        blob = (await client.read_resource(links[0])).contents[0]
        assert blob.mime_type == "image/jpeg" and base64.b64decode(blob.blob) == jpeg(5)


async def test_resources(connect):
    async with connect() as client:
        listed = {str(r.uri) for r in (await client.list_resources()).resources}
        assert {"memtools://videos", "memtools://videos/kitchen/summary"} <= listed
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        assert {"memtools://videos/{video_id}/summary", "memtools://videos/{video_id}/keyframes/{name}",
                "memtools://videos/{video_id}/frames/{t}"} <= templates
        videos = json.loads((await client.read_resource("memtools://videos")).contents[0].text)
        assert videos["videos"][0]["video_id"] == "kitchen"
        summary = (await client.read_resource("memtools://videos/kitchen/summary")).contents[0]
        assert summary.mime_type == "text/plain" and "Frying and the pan fire" in summary.text
        frame = (await client.read_resource("memtools://videos/kitchen/frames/150.000")).contents[0]
        assert base64.b64decode(frame.blob) == jpeg(6)  # no source video: the stored keyframe at 150 s
        encoded = (await client.read_resource("memtools://videos/kitchen/frames/150%2E000")).contents[0]
        assert base64.b64decode(encoded.blob) == jpeg(6)  # template values are percent-decoded


@pytest.mark.parametrize("uri, message", [
    ("memtools://videos/kitchen/keyframes/kf_9999", "no keyframe 'kitchen/kf_9999'"),
    ("memtools://videos/kitchen/keyframes/macro_0001", "not a keyframe id"),
    ("memtools://videos/nope/summary", "no video 'nope'"),
    ("memtools://videos/kitchen/frames/soon", "not a number of seconds"),
    ("memtools://videos/kitchen/frames/5000", "only 0:06:00 long"),
    ("memtools://videos/kitchen/keyframes/%2E%2E", "Unknown resource"),  # traversal: refused by the SDK
    ("memtools://videos/kitchen/keyframes/%2Fetc%2Fpasswd", "Unknown resource"),  # an absolute path, too
    ("memtools://videos/kitchen/keyframes/a%00b", "Unknown resource"),
])
async def test_bad_resource_uris_are_clear_errors(connect, uri, message):
    async with connect() as client:
        with pytest.raises(MCPError, match=message) as raised:
            await client.read_resource(uri)
        assert raised.value.error.code == INVALID_PARAMS  # the client's mistake, on either SDK
        assert (await client.read_resource("memtools://videos")).contents


async def test_answer_prompt_carries_the_ora_strategy(connect):
    async with connect() as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        args = {a.name: a.required for a in prompts["answer_video_question"].arguments}
        assert args == {"question": True, "video_id": False}
        got = await client.get_prompt("answer_video_question", {"question": "Why did the pan catch fire?",
                                                                "video_id": "kitchen"})
        text = got.messages[0].content.text
        assert got.messages[0].role == "user"
        assert "Why did the pan catch fire?" in text and "get_summary(video_id='kitchen')" in text
        assert "DESCRIPTIVE STATEMENT" in text and "get_relations" in text


@pytest.mark.parametrize("name, arguments, message", [
    ("answer_video_question", {}, "prompt answer_video_question: missing required argument 'question' for "
                                  "answer_video_question"),
    ("answer_video_question", {"qestion": "Why?"}, "unknown argument 'qestion' for answer_video_question (did you mean "
                                                  "'question'?); its arguments are: question, video_id"),
    ("answer_video_qestion", {"question": "Why?"}, "unknown prompt 'answer_video_qestion' (did you mean "
                                                  "'answer_video_question'?); the prompts are: answer_video_question"),
])
async def test_bad_prompt_requests_are_invalid_params_errors_that_say_why(connect, caplog, name, arguments, message):
    with caplog.at_level(logging.INFO):
        async with connect() as client:
            with pytest.raises(MCPError, match=re.escape(message)) as raised:
                await client.get_prompt(name, arguments)
            assert raised.value.error.code == INVALID_PARAMS
            assert (await client.get_prompt("answer_video_question", {"question": "Why?"})).messages
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]  # a client's mistake


HUGE = "x" * 100_000
INJECTION = "x') RETURN 1 //"


@pytest.mark.parametrize("name, arguments, message", [
    ("search_nodes", {"query": "pan", "top_k": "many"}, "top_k"),
    ("search_nodes", {}, "missing required argument 'query' for search_nodes"),
    ("search_nodes", {"query": HUGE}, "at most 1000 characters"),
    ("search_nodes", {"query": "pan", "top_k": -3}, "greater than or equal to 1"),
    ("search_nodes", {"query": "pan", "top_k": 10**12}, "less than or equal to 50"),
    ("search_nodes", {"query": "pan", "node_types": ["planet"]}, "node_types"),
    ("search_nodes", {"query": INJECTION, "video_id": "kitchen' OR 1=1 --"}, "no video"),
    ("get_summary", {"video_id": INJECTION}, "no video"),
    ("get_summary", {"video_id": ["kitchen"]}, "video_id"),
    ("get_super_events", {"super_ids": ["kitchen/super_01"] * 51}, "super_ids"),
    ("get_macro_events", {}, "pass either super_id"),
    ("get_macro_events", {"super_id": "kitchen/super_99"}, "does not exist"),
    ("get_subgraph", {"macro_id": INJECTION}, "does not exist"),
    ("get_subgraph", {"macro_id": "kitchen/macro_9999"}, "call get_macro_events"),
    ("search_by_time", {"start_sec": -5, "end_sec": 10}, "greater than or equal to 0"),
    ("search_by_time", {"start_sec": 1e12, "end_sec": 2e12}, "less than or equal to"),
    ("search_by_time", {"start_sec": 50, "end_sec": 10}, "end_sec greater than start_sec"),
    ("get_relations", {"node_id": INJECTION}, "does not exist"),
    ("get_relations", {"node_id": "kitchen/macro_0001", "direction": "sideways"}, "direction"),
    ("get_relations", {"node_id": "kitchen/macro_0001", "relation_types": ["EXPLODES"]}, "unknown relation"),
    ("inspect_frames", {"video_id": "kitchen", "start_sec": 0, "end_sec": 10, "max_frames": 10**9}, "max_frames"),
    ("inspect_frames", {"video_id": "kitchen", "start_sec": 5000, "end_sec": 6000}, "only 0:06:00 long"),
    ("inspect_frames", {"video_id": HUGE, "start_sec": 0, "end_sec": 10}, "at most 128 characters"),
    ("drop_everything", {}, "Unknown tool"),
])
async def test_bad_input_is_an_error_result_and_the_server_keeps_serving(connect, name, arguments, message):
    async with connect() as client:
        result = await client.call_tool(name, arguments)
        assert result.is_error
        text = text_of(result)
        assert message in text
        assert len(text) < 2000 and result.structured_content is None
        assert "\n" not in text and "pydantic" not in text  # one clear line, never a validation dump
        assert not (await client.call_tool("list_videos", {})).is_error


async def test_concurrent_calls_share_one_memory_safely(connect):
    async with connect() as client:
        results = []

        async def call(name: str) -> None:
            results.append(await client.call_tool(name, VALID_CALLS[name]))

        async with anyio.create_task_group() as tg:
            for _ in range(4):
                for name in VALID_CALLS:
                    tg.start_soon(call, name)
        assert len(results) == 4 * len(VALID_CALLS)
        assert not [text_of(r) for r in results if r.is_error]


async def test_a_missing_memory_is_reported_not_crashed(tmp_path):
    async with Client(build_server(tmp_path / "nowhere"), mode="legacy") as c:
        assert {t.name for t in (await c.list_tools()).tools} == set(TOOL_SPECS)
        result = await c.call_tool("list_videos", {})
        assert result.is_error and "cannot open its memory" in text_of(result)
        assert [str(r.uri) for r in (await c.list_resources()).resources] == ["memtools://videos"]


def test_serve_options_are_shared_by_the_cli_and_the_console_script(capsys, monkeypatch):
    from memtools.cli import parser
    from memtools.mcp import main

    for name in ("MEMTOOLS_TRANSPORT", "MEMTOOLS_HOST", "MEMTOOLS_PORT"):
        monkeypatch.delenv(name, raising=False)
    args = parser().parse_args(["serve", "--memory", "m", "--http", "--host", "0.0.0.0", "--port", "9000"])
    assert (str(args.memory), args.transport, args.host, args.port) == ("m", "http", "0.0.0.0", 9000)
    args = parser().parse_args(["serve", "-m", "m"])
    assert (args.transport, args.host, args.port, args.allowed_host) == ("stdio", "127.0.0.1", 8765, [])
    args = parser().parse_args(["serve", "-m", "m", "--transport", "http", "--allowed-host", "a.lan",
                                "--allowed-host", "b.lan", "--auth-token-env", "TOKEN"])
    assert (args.transport, args.allowed_host, args.auth_token_env) == ("http", ["a.lan", "b.lan"], "TOKEN")
    with pytest.raises(SystemExit):
        parser().parse_args(["serve", "--memory", "m", "--port", "70000"])
    assert "port must be 1-65535" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser().parse_args(["serve", "--memory", "m", "--transport", "sse"])
    assert "invalid choice: 'sse'" in capsys.readouterr().err
    monkeypatch.setenv("MEMTOOLS_TRANSPORT", "http")
    monkeypatch.setenv("MEMTOOLS_HOST", "::1")
    monkeypatch.setenv("MEMTOOLS_PORT", "9100")
    args = parser().parse_args(["serve", "-m", "m"])
    assert (args.transport, args.host, args.port) == ("http", "::1", 9100)
    assert parser().parse_args(["serve", "-m", "m", "--transport", "stdio", "--port", "9200"]).port == 9200
    monkeypatch.setenv("MEMTOOLS_PORT", "eighty")
    with pytest.raises(SystemExit):
        parser().parse_args(["serve", "-m", "m"])
    assert "port must be a number" in capsys.readouterr().err
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0 and "--transport" in capsys.readouterr().out
    for run in (main, parser().parse_args):
        with pytest.raises(SystemExit) as done:
            run(["--version"])
        assert done.value.code == 0 and capsys.readouterr().out.split()[1][0].isdigit()


async def test_frames_decoded_from_the_source_video_link_to_the_frame_at_their_time(tmp_path):
    import cv2
    import numpy as np

    from memtools.embed.testing import TestEmbedder
    from memtools.store import Memory
    from memtools.testing import kitchen_graph
    from synthetic_video import read_stamp, stamped_frames, write_video

    graph = kitchen_graph("clip")
    graph.video.source_path = str(write_video(tmp_path / "clip.avi", stamped_frames(60)))  # 6 s at 10 fps
    with Memory.create(tmp_path / "mem", TestEmbedder(64)) as memory:
        memory.write_video(graph)
    async with Client(build_server(tmp_path / "mem"), mode="legacy") as client:
        result = await client.call_tool("inspect_frames", {"video_id": "clip", "start_sec": 1, "end_sec": 3,
                                                           "max_frames": 2})
        frames = FramesOut.model_validate(result.structured_content)
        assert [(f.source, f.uri) for f in frames.frames] == [
            ("video", "memtools://videos/clip/frames/1.500"), ("video", "memtools://videos/clip/frames/2.500")]
        images = [base64.b64decode(b.data) for b in result.content if isinstance(b, ImageContent)]
        blob = (await client.read_resource(frames.frames[0].uri)).contents[0]

    def stamp_of(data: bytes) -> int:
        return read_stamp(cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR))

    assert [stamp_of(i) for i in images] == [15, 25]
    assert stamp_of(base64.b64decode(blob.blob)) == 15
