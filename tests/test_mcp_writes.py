"""Writing through MCP, with permission (docs/writing.md): the real server as a stdio subprocess and over streamable
HTTP (uvicorn), driven by the SDK's own client. Writes are served only with --allow-writes; over HTTP a read-only
token (--auth-token-env, or an OAuth token without memtools:write) neither sees the write tools nor may call them:
403 with WWW-Authenticate error="insufficient_scope"."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters

from mcp_support import Client, _snake, http_server, http_streams, make_memory, mcp_command
from memtools.changes.tool_specs import WRITE_TOOL_SPECS
from memtools.errors import ConfigError
from memtools.mcp import serve
from memtools.mcp.sdk import SDK_MAJOR
from memtools.tools import TOOL_SPECS
from test_mcp_http_guard import Issuer

pytestmark = pytest.mark.slow
READ_TOKEN = "r" * 40
WRITE_TOKEN = "w" * 40
TOKENS = {"MEMTOOLS_READ_TOKEN": READ_TOKEN, "MEMTOOLS_WRITE_TOKEN": WRITE_TOKEN}
WRITE_CALLS = {
    "add_note": {"about": "kitchen@125", "text": "the cook is called Tom"},
    "rename_entity": {"entity_id": "kitchen/entity_001", "name": "Tom"},
    "merge_entities": {"entity_id": "kitchen/entity_004", "other_id": "kitchen/entity_005"},
    "split_entity": {"entity_id": "kitchen/entity_001", "mention_ids": ["kitchen/macro_0002/ent_001"]},
    "forget_video": {"video_id": "kitchen"},
    "label_person": {"target": "kitchen/S1", "name": "Tom"},
    "forget_person": {"target": "kitchen/S1"},
    "undo_change": {"change_id": "c0001"},
    "list_changes": {},
}


@contextlib.asynccontextmanager
async def token_client(url: str, token: str) -> AsyncIterator[object]:
    """A client session over streamable HTTP that sends a bearer token (results read with 2.x's names)."""
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http, \
            http_streams(url, http_client=http) as (read, write), ClientSession(read, write) as session:
        await session.initialize()

        class Session:
            async def list_tools(self):
                return _snake(await session.list_tools()) if SDK_MAJOR == 1 else await session.list_tools()

            async def call_tool(self, name, arguments):
                result = await session.call_tool(name, arguments)
                return _snake(result) if SDK_MAJOR == 1 else result

        yield Session()


def call_raw(url: str, token: str, name: str, arguments: dict) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    return httpx.post(url, json=body, timeout=30, headers={
        "Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"})


def assert_insufficient_scope(url: str, token: str) -> None:
    for name, arguments in WRITE_CALLS.items():
        refused = call_raw(url, token, name, arguments)
        assert refused.status_code == 403, (name, refused.text)
        challenge = refused.headers["www-authenticate"]
        assert challenge.startswith("Bearer ") and 'error="insufficient_scope"' in challenge
        assert 'scope="memtools:write"' in challenge and name in refused.json()["error"]


async def note_merge_undo_forget(client) -> None:
    """The writes of the acceptance: a note found by search, a merge undone, the video forgotten."""
    note = await client.call_tool("add_note", WRITE_CALLS["add_note"])
    assert not note.is_error and note.structured_content["change_id"] == "c0001", note.content
    found = await client.call_tool("search_nodes", {"query": "the cook is called Tom", "node_types": ["event"]})
    assert "User note: the cook is called Tom" in found.content[0].text
    merged = await client.call_tool("merge_entities", {**WRITE_CALLS["merge_entities"], "confirm": True})  # user agreed
    assert not merged.is_error and "merged kitchen/entity_005" in merged.content[0].text
    entities = await client.call_tool("search_entities", {"query": "Lodge", "top_k": 10})
    assert "kitchen/entity_005" not in entities.content[0].text  # one entity fewer
    undo = {"change_id": merged.structured_content["change_id"], "confirm": True}
    undone = await client.call_tool("undo_change", undo)
    assert not undone.is_error, undone.content
    entities = await client.call_tool("search_entities", {"query": "Lodge", "top_k": 10})
    assert "kitchen/entity_005" in entities.content[0].text
    again = await client.call_tool("undo_change", undo)
    assert again.is_error and "already undone by c0003" in again.content[0].text
    long = await client.call_tool("add_note", {"about": "kitchen@10", "text": "x" * 50_000})
    assert long.is_error and "10000" in long.content[0].text.replace(",", "")
    unknown = await client.call_tool("merge_entities", {"entity_id": "kitchen/entity_001",
                                                        "other_id": "kitchen/entity_404"})
    assert unknown.is_error and "no entity 'kitchen/entity_404'" in unknown.content[0].text
    forgot = await client.call_tool("forget_video", {"video_id": "kitchen", "confirm": True})
    assert not forgot.is_error
    listed = await client.call_tool("list_videos", {})
    assert "kitchen" not in listed.content[0].text
    log = await client.call_tool("list_changes", {})
    assert [c["action"] for c in log.structured_content["changes"]] == ["forget", "undo", "merge", "note"]
    assert {c["front_end"] for c in log.structured_content["changes"]} == {"mcp"}


async def test_stdio_writes_only_with_allow_writes(tmp_path):
    memory = make_memory(tmp_path)
    command, args = mcp_command(memory)
    async with Client(StdioServerParameters(command=command, args=args)) as client:
        assert {t.name for t in (await client.list_tools()).tools} == set(TOOL_SPECS)
        assert "User note:" in client.instructions and "add_note" not in client.instructions
        refused = await client.call_tool("add_note", WRITE_CALLS["add_note"])
        assert refused.is_error  # not served at all
    command, args = mcp_command(memory, "--allow-writes")
    async with Client(StdioServerParameters(command=command, args=args)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == set(TOOL_SPECS) | set(WRITE_TOOL_SPECS)
        assert "add_note(about, text)" in client.instructions and "ask the user first" in client.instructions
        assert tools["forget_video"].annotations.destructive_hint is True
        huge = await client.call_tool("add_note", {"about": "kitchen@10", "text": "x" * (10 * 1024 * 1024)})
        assert huge.is_error and "10000" in huge.content[0].text.replace(",", "")
        await note_merge_undo_forget(client)


async def test_http_tokens_read_or_write(tmp_path):
    memory = make_memory(tmp_path)
    extra = ("--allow-writes", "--auth-token-env", "MEMTOOLS_READ_TOKEN", "--write-token-env", "MEMTOOLS_WRITE_TOKEN")
    with http_server(memory, extra=extra, env=TOKENS, headers={"Authorization": f"Bearer {READ_TOKEN}"}) as url:
        async with token_client(url, READ_TOKEN) as reader:
            assert {t.name for t in (await reader.list_tools()).tools} == set(TOOL_SPECS)
            assert not (await reader.call_tool("search_nodes", {"query": "pan"})).is_error
        assert_insufficient_scope(url, READ_TOKEN)
        assert call_raw(url, "not-a-token" * 4, "add_note", WRITE_CALLS["add_note"]).status_code == 401
        huge = {"about": "kitchen@10", "text": "x" * (10 * 1024 * 1024)}
        assert call_raw(url, WRITE_TOKEN, "add_note", huge).status_code == 413  # the transport's own limit
        assert call_raw(url, READ_TOKEN, "add_note", huge).status_code == 413
        async with token_client(url, WRITE_TOKEN) as writer:
            assert {t.name for t in (await writer.list_tools()).tools} == set(TOOL_SPECS) | set(WRITE_TOOL_SPECS)
            await note_merge_undo_forget(writer)


async def test_http_oauth_scopes(tmp_path):
    memory = make_memory(tmp_path)
    issuer = Issuer()
    future = 4_000_000_000
    issuer.tokens = {
        "reader": {"active": True, "iss": issuer.url, "exp": future, "sub": "ann", "scope": "memtools:read"},
        "writer": {"active": True, "iss": issuer.url, "exp": future, "sub": "bob",
                   "scope": "memtools:read memtools:write"},
    }
    try:
        with http_server(memory, extra=("--allow-writes", "--auth-issuer", issuer.url),
                         headers={"Authorization": "Bearer reader"}) as url:
            async with token_client(url, "reader") as reader:
                assert {t.name for t in (await reader.list_tools()).tools} == set(TOOL_SPECS)
            assert_insufficient_scope(url, "reader")
            async with token_client(url, "writer") as writer:
                assert {t.name for t in (await writer.list_tools()).tools} >= set(WRITE_TOOL_SPECS)
                note = await writer.call_tool("add_note", WRITE_CALLS["add_note"])
                assert not note.is_error, note.content
                log = await writer.call_tool("list_changes", {})
                assert log.structured_content["changes"][0]["who"] == "bob"
    finally:
        issuer.close()


async def test_http_without_allow_writes_serves_no_write_tools(tmp_path):
    memory = make_memory(tmp_path)
    with http_server(memory, extra=("--auth-token-env", "MEMTOOLS_READ_TOKEN", "--write-token-env",
                                    "MEMTOOLS_WRITE_TOKEN"), env=TOKENS,
                     headers={"Authorization": f"Bearer {WRITE_TOKEN}"}) as url:
        async with token_client(url, WRITE_TOKEN) as writer:
            assert {t.name for t in (await writer.list_tools()).tools} == set(TOOL_SPECS)
            assert (await writer.call_tool("add_note", WRITE_CALLS["add_note"])).is_error


def test_a_read_replica_never_writes():
    with pytest.raises(ConfigError, match="a read replica never writes"):
        serve("s3://bucket/prefix", allow_writes=True)
