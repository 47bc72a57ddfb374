"""add_video as an MCP task (the 2025-11-25 specification's experimental task-augmented calls), through the official
1.x client over stdio: the task is the build job, followed with tasks/get, read with tasks/result, listed with
tasks/list, and seen by get_job too. mcp 2.x has no tasks in its core protocol (memtools.mcp.tasks)."""

from __future__ import annotations

import shutil

import anyio
import pytest
from mcp import StdioServerParameters, types

from jobs_support import SCRIPTED, make_sample_video, server_command, server_env
from mcp_support import Client
from memtools.embed.testing import TestEmbedder
from memtools.mcp.sdk import SDK_MAJOR
from memtools.store import Memory

pytestmark = [pytest.mark.slow, pytest.mark.skipif(SDK_MAJOR != 1, reason="tasks are served on mcp 1.x")]
McpError = pytest.importorskip("mcp.shared.exceptions").__dict__.get("McpError", Exception)


async def test_add_video_runs_as_a_task_followed_to_its_result(tmp_path):
    videos = tmp_path / "videos"
    videos.mkdir()
    make_sample_video(videos / "sample.mp4")
    shutil.copy(videos / "sample.mp4", videos / "second.mp4")
    Memory.create(tmp_path / "mem", TestEmbedder(64)).close()
    command, args = server_command(tmp_path / "mem", "--allow-writes", "--allow-root", str(videos), "--vlm", SCRIPTED,
                                   "--preset", "short")
    async with Client(StdioServerParameters(command=command, args=args, env=server_env())) as client:
        session = client.session
        listed = {t.name: t for t in (await session.list_tools()).tools}
        assert listed["add_video"].execution.taskSupport == "optional"
        assert listed["search_nodes"].execution is None
        created = await session.experimental.call_tool_as_task("add_video", {"source": "sample.mp4"})
        task_id = created.task.taskId
        assert task_id.startswith("job_") and created.task.status == "working"
        statuses = []
        with anyio.fail_after(300):
            while True:
                task = await session.experimental.get_task(task_id)
                statuses.append(task.status)
                if task.status in ("completed", "failed"):
                    break
                await anyio.sleep(task.pollInterval / 1000)
        assert task.status == "completed", task.statusMessage
        result = await session.experimental.get_task_result(task_id, types.CallToolResult)
        assert not result.isError and result.structuredContent["video_id"] == "sample"
        assert result.structuredContent["state"] == "done" and result.structuredContent["calls"] > 0
        job = await session.call_tool("get_job", {"job_id": task_id})
        assert job.structuredContent["state"] == "done"  # one job behind both ways of calling
        second = await session.experimental.call_tool_as_task("add_video", {"source": "second.mp4"})
        waited = await session.experimental.get_task_result(second.task.taskId, types.CallToolResult)
        assert waited.structuredContent["state"] == "done"  # tasks/result waits for the job to finish
        listed_tasks = [t.taskId for t in (await session.experimental.list_tasks()).tasks]
        assert listed_tasks == [task_id, second.task.taskId]
        with pytest.raises(McpError, match="does not run as a task"):
            await session.experimental.call_tool_as_task("search_nodes", {"query": "ball"})
        with pytest.raises(McpError, match="Task not found"):
            await session.experimental.get_task("job_0000000000")
        with pytest.raises(McpError, match="outside"):
            await session.experimental.call_tool_as_task("add_video", {"source": "../etc/passwd"})
        found = await session.call_tool("search_nodes", {"query": "a red ball knocks over boxes", "top_k": 3})
        assert "sample/macro_" in found.content[0].text
