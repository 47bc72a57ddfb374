"""Many clients, one memory: two server processes keep answering while a third process writes videos."""

from __future__ import annotations

import subprocess
import sys
import tempfile

import anyio
import pytest
from mcp import StdioServerParameters

from mcp_support import BUSY, VALID_CALLS, Client, console_script, make_memory, mcp_command
from memtools.mcp.adapter import ERROR_KIND_META

pytestmark = pytest.mark.slow

WRITES = 3
WRITER = """
import sys
from memtools.store import Memory
from memtools.testing import kitchen_graph

with Memory.open(sys.argv[1]) as memory:
    for i in range(int(sys.argv[2])):
        memory.write_video(kitchen_graph("kitchen2"))
        print("wrote", i, flush=True)
"""
READS = ("list_videos", "get_summary", "search_nodes", "get_subgraph", "search_by_time")


async def test_servers_answer_during_writes_and_see_the_new_video_after(tmp_path):
    memory = make_memory(tmp_path)
    command, args = mcp_command(memory)
    script = console_script("memtools-mcp")
    second = StdioServerParameters(command=script, args=args[2:]) if script else StdioServerParameters(
        command=command, args=args)
    outcomes = {"ok": 0, "busy": 0}

    async with Client(StdioServerParameters(command=command, args=args)) as a, Client(second) as b:
        for client in (a, b):  # both servers up and reading before the writer starts
            assert not (await client.call_tool("get_summary", {"video_id": "kitchen"})).is_error
        with tempfile.TemporaryFile() as log:
            writer = subprocess.Popen([sys.executable, "-c", WRITER, str(memory), str(WRITES)],
                                      stdout=log, stderr=subprocess.STDOUT)

            async def keep_reading(client: Client) -> None:
                calls = 0
                while writer.poll() is None:
                    name = READS[calls % len(READS)]
                    calls += 1
                    result = await client.call_tool(name, VALID_CALLS[name])
                    if result.is_error:  # the only acceptable error: the clear busy message
                        assert BUSY in result.content[0].text, result.content[0].text
                        assert result.meta[ERROR_KIND_META] == "busy"  # a kind, not a message to compare
                        outcomes["busy"] += 1
                    else:
                        outcomes["ok"] += 1
                    await anyio.sleep(0.05)  # a brisk client, but leave the writer some CPU

            with anyio.fail_after(120):
                async with anyio.create_task_group() as tg:  # two calls in flight per server: worker threads race
                    for client in (a, b, a, b):
                        tg.start_soon(keep_reading, client)
            log.seek(0)
            assert writer.wait() == 0, log.read().decode()[-3000:]
            log.seek(0)
            assert log.read().decode().count("wrote") == WRITES

        print(f"during {WRITES} writes: {outcomes['ok']} answers, {outcomes['busy']} busy errors")
        assert outcomes["ok"] > 0
        for client in (a, b):  # no restart needed to see the new video
            listed = await client.call_tool("list_videos", {})
            assert [v["video_id"] for v in listed.structured_content["videos"]] == ["kitchen", "kitchen2"]
            summary = await client.call_tool("get_summary", {"video_id": "kitchen2"})
            assert not summary.is_error and "kitchen2/super_01" in summary.content[0].text
            found = await client.call_tool("search_nodes", {"query": "pan catches fire", "video_id": "kitchen2"})
            assert {h["video_id"] for h in found.structured_content["hits"]} == {"kitchen2"}
