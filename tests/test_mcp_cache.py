"""Cache hints (issue 48, item 2; ``memtools.mcp.caching``): at protocol 2026-07-28 (mcp 2.x) the lists and reads carry
``ttlMs``/``cacheScope``, which the SDK's client honours, and a write makes the server tell listening clients what
went stale (``subscriptions/listen``), so their next list or read is fresh; at 2025-11-25 nothing changes. The real
server in-process, through the SDK's own client and its response cache."""

from __future__ import annotations

import anyio
import pytest

from mcp_support import MODES, Client, MCPError, make_memory
from memtools.changes import actions
from memtools.mcp import uris
from memtools.mcp.caching import FIXED_TTL_MS, HINTS, LIST_TTL_MS
from memtools.mcp.sdk import SDK_MAJOR
from memtools.mcp.server import build_server
from memtools.store import Memory

modern = pytest.mark.skipif(SDK_MAJOR != 2, reason="cache hints and subscriptions/listen are protocol 2026-07-28, "
                                                   "which only mcp 2.x speaks")
SUMMARY = uris.summary_uri("kitchen")


@pytest.fixture
def memory_path(tmp_path):
    return make_memory(tmp_path, ("kitchen", "garage"))


def listed(result) -> list[str]:
    return sorted(str(r.uri) for r in result.resources)


async def next_events(subscription, count: int) -> list[str]:
    """The next ``count`` events of a listen stream, by kind (a hung stream fails the test, never waits forever)."""
    seen = []
    with anyio.fail_after(30):
        async for event in subscription:
            seen.append(type(event).__name__ + (f" {event.uri}" if hasattr(event, "uri") else ""))
            if len(seen) == count:
                return seen
    return seen


@modern
async def test_lists_and_reads_carry_the_hints(memory_path):
    async with Client(build_server(memory_path, allow_writes=True)) as client:
        answers = {"tools/list": await client.list_tools(), "resources/list": await client.list_resources(),
                   "resources/templates/list": await client.list_resource_templates(),
                   "prompts/list": await client.list_prompts(), "resources/read": await client.read_resource(SUMMARY)}
        for method, result in answers.items():
            assert {"ttl_ms", "cache_scope"} <= result.model_fields_set, method  # said by the server, not defaulted
            assert (result.ttl_ms, result.cache_scope) == HINTS[method], method
        assert answers["tools/list"].ttl_ms == LIST_TTL_MS and answers["tools/list"].cache_scope == "private"
        assert answers["prompts/list"].ttl_ms == FIXED_TTL_MS and answers["prompts/list"].cache_scope == "public"


@pytest.mark.parametrize("mode", [m for m in MODES if m != "auto"])
async def test_handshake_era_answers_carry_no_hints(memory_path, mode):
    async with Client(build_server(memory_path), mode=mode) as client:
        for result in (await client.list_tools(), await client.list_resources(), await client.read_resource(SUMMARY)):
            wire = result.model_dump(by_alias=True, exclude_unset=True)
            assert "ttlMs" not in wire and "cacheScope" not in wire, wire.keys()


@modern
async def test_a_write_is_told_to_listening_clients_and_their_next_list_and_read_are_fresh(memory_path):
    server = build_server(memory_path, allow_writes=True)
    async with Client(server) as listener, Client(server) as deaf:
        async with listener.listen(resources_list_changed=True, resource_subscriptions=[SUMMARY]) as subscription:
            assert SUMMARY in listed(await listener.list_resources())
            assert SUMMARY in listed(await deaf.list_resources())
            for client in (listener, deaf):
                assert "Cooking stir-fry" in (await client.read_resource(SUMMARY)).contents[0].text

            renamed = await listener.call_tool("rename_entity", {"entity_id": "kitchen/entity_001", "name": "Tom"})
            assert not renamed.is_error, renamed.content[0].text  # a change the user need not confirm
            events = await next_events(subscription, 2)
            assert sorted(events) == ["ResourceUpdated memtools://videos/kitchen/summary", "ResourcesListChanged"]

            forgot = await listener.call_tool("forget_video", {"video_id": "kitchen", "confirm": True})
            assert not forgot.is_error, forgot.content[0].text
            await next_events(subscription, 2)
            assert listed(await listener.list_resources()) == [uris.VIDEOS, uris.summary_uri("garage")]
            with pytest.raises(MCPError, match="no video 'kitchen'"):  # its cached summary was dropped too
                await listener.read_resource(SUMMARY)
        # a client that does not listen keeps its copies for ttlMs; asking the server again shows the change
        assert SUMMARY in listed(await deaf.list_resources())
        assert "Cooking stir-fry" in (await deaf.read_resource(SUMMARY)).contents[0].text
        assert SUMMARY not in listed(await deaf.list_resources(cache_mode="refresh"))


@modern
async def test_a_write_from_another_process_is_told_after_the_next_call(memory_path):
    """The generation moved under the server (a build, an import, the CLI): its next tool call publishes the change."""
    async with Client(build_server(memory_path)) as client:
        assert not (await client.call_tool("list_videos", {})).is_error  # the generation the clients have seen
        async with client.listen(resources_list_changed=True) as subscription:
            assert SUMMARY in listed(await client.list_resources())
            with Memory.open(memory_path) as memory:  # the owner, outside the server
                actions.forget_video(memory, "kitchen")
            found = await client.call_tool("search_nodes", {"query": "a cook"})
            assert not found.is_error
            assert await next_events(subscription, 1) == ["ResourcesListChanged"]
            assert SUMMARY not in listed(await client.list_resources())
