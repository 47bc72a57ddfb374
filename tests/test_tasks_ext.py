"""Cancelling add_video's job through MCP (issue 48, item 3), on both SDKs, with the official client on a server in this
process: ``cancel_job`` (every client), ``tasks/cancel`` of the 2025-11-25 experimental tasks (mcp 1.x) and the
``io.modelcontextprotocol/tasks`` extension (mcp 2.x: ``tasks/get``, ``tasks/update``, ``tasks/cancel``, the result
inline). The build stands still in a model call (the scripted model behind a gate) while the cancel comes, so the
cancel lands before the write; the memory then holds only what it held before. The memory comparison of the crash
harness runs on both engines in ``test_jobs_cancel.py``.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Literal

import anyio
import pytest

from jobs_support import make_sample_video
from mcp_support import Client, MCPError, make_memory
from memtools.builder import BuildConfig
from memtools.builder.settings import BuildSettings
from memtools.builder.testing import ScriptedPerception
from memtools.jobs import JobRunner, SourcePolicy
from memtools.mcp.sdk import SDK_MAJOR
from memtools.mcp.server import build_server
from memtools.perception import FunctionVLM
from memtools.store import Memory

pytestmark = pytest.mark.slow
EXTENSION = "io.modelcontextprotocol/tasks"


class Gate:
    """The scripted model, standing still in its second call until ``opened`` is set."""

    def __init__(self) -> None:
        self.scripted, self.asked, self.opened = ScriptedPerception(), 0, threading.Event()

    async def __call__(self, request) -> str:
        self.asked += 1
        while self.asked > 1 and not self.opened.is_set():
            await asyncio.sleep(0.02)
        return self.scripted(request)


@pytest.fixture
def served(tmp_path):
    """(server, runner, gate): a memory holding the kitchen video, allowed to build videos under ``videos/``."""
    videos = tmp_path / "videos"
    videos.mkdir()
    make_sample_video(videos / "sample.mp4")
    memory = Memory.open(make_memory(tmp_path))
    gate = Gate()
    runner = JobRunner(memory, BuildSettings(config=BuildConfig.short()), SourcePolicy(roots=[videos]),
                       vlm=FunctionVLM(gate, model_name="scripted"))
    runner.start()
    try:
        yield build_server(memory, allow_writes=True, jobs=runner), runner, gate
    finally:
        gate.opened.set()
        runner.close(30)
        memory.close()


async def standing(runner: JobRunner, gate: Gate, job_id: str) -> None:
    """Until the build stands in its second model call."""
    with anyio.fail_after(300):
        while gate.asked < 2 or runner.get(job_id).state != "running":
            await anyio.sleep(0.02)


async def asked_for(runner: JobRunner, job_id: str) -> None:
    with anyio.fail_after(60):
        while not runner.get(job_id).cancel_requested:
            await anyio.sleep(0.02)


async def test_cancel_job_stops_the_build_and_keeps_nothing(served):
    server, runner, gate = served
    async with Client(server) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert listed["cancel_job"].annotations.destructive_hint and listed["cancel_job"].annotations.idempotent_hint
        job_id = (await client.call_tool("add_video", {"source": "sample.mp4"})).structured_content["job_id"]
        await standing(runner, gate, job_id)
        asked = await client.call_tool("cancel_job", {"job_id": job_id, "wait_seconds": 0})
        assert not asked.is_error and asked.structured_content["cancel_requested"] is True
        assert "cancelling" in asked.content[0].text and asked.structured_content["state"] == "running"
        gate.opened.set()
        ended = await client.call_tool("get_job", {"job_id": job_id, "wait_seconds": 60})
        assert ended.structured_content["state"] == "cancelled", ended.content[0].text
        assert "nothing of this build was kept" in ended.content[0].text
        assert runner.memory.video_ids() == ["kitchen"] and not (runner.memory.work_dir("sample")).exists()
        listed_jobs = await client.call_tool("list_jobs", {})
        assert [j["state"] for j in listed_jobs.structured_content["jobs"]] == ["cancelled"]
        unknown = await client.call_tool("cancel_job", {"job_id": "job_0000000000"})
        assert unknown.is_error and "no job" in unknown.content[0].text
        built = await client.call_tool("add_video", {"source": "sample.mp4", "wait_seconds": 60})
        built = await client.call_tool("get_job", {"job_id": built.structured_content["job_id"], "wait_seconds": 60})
        assert built.structured_content["state"] == "done"  # the same video again: a new job, built whole
        late = await client.call_tool("cancel_job", {"job_id": built.structured_content["job_id"]})
        assert "nothing to cancel: the job had already ended (done)" in late.content[0].text
        assert runner.memory.video_ids() == ["kitchen", "sample"]


@pytest.mark.skipif(SDK_MAJOR != 1, reason="the 2025-11-25 experimental tasks are served on mcp 1.x")
async def test_tasks_cancel_of_the_experimental_tasks(served):
    server, runner, gate = served
    async with Client(server) as client:
        session = client.session
        assert (await session.initialize()).capabilities.tasks.cancel is not None
        created = await session.experimental.call_tool_as_task("add_video", {"source": "sample.mp4"})
        task_id = created.task.taskId
        await standing(runner, gate, task_id)
        async with anyio.create_task_group() as group:
            answer: dict[str, Any] = {}

            async def cancel() -> None:
                answer["task"] = await session.experimental.cancel_task(task_id)

            group.start_soon(cancel)
            await asked_for(runner, task_id)
            gate.opened.set()  # the build reaches its next safe point; tasks/cancel waits for it
        assert answer["task"].status == "cancelled", answer["task"].statusMessage
        assert (await session.experimental.get_task(task_id)).status == "cancelled"
        with pytest.raises(MCPError, match="already ended \\(cancelled\\)"):
            await session.experimental.cancel_task(task_id)
        assert runner.memory.video_ids() == ["kitchen"]


@pytest.mark.skipif(SDK_MAJOR != 2, reason="the tasks extension is served on mcp 2.x")
async def test_add_video_as_a_task_of_the_extension_get_update_cancel(served):
    from mcp.client.extension import ClientExtension, ResultClaim
    from mcp.types import Request, RequestParams, Result
    from pydantic import TypeAdapter

    server, runner, gate = served

    class CreatedTask(Result):
        result_type: Literal["task"] = "task"
        task_id: str
        status: str
        poll_interval_ms: int | None = None

    class TaskParams(RequestParams):
        task_id: str

    class UpdateParams(TaskParams):
        input_responses: dict[str, Any] = {}

    def request(method: str, params_type: type = TaskParams) -> type:
        class TaskRequest(Request[params_type, Literal[method]]):  # type: ignore[valid-type]
            params: params_type  # type: ignore[valid-type]
            name_param = "taskId"

        return TaskRequest

    async def no_resolve(result: CreatedTask, ctx: Any) -> Any:
        raise AssertionError("the test reads the task itself")

    class Tasks(ClientExtension):
        identifier = EXTENSION

        def claims(self) -> Any:
            return [ResultClaim(result_type="task", model=CreatedTask, resolve=no_resolve)]

    wire = TypeAdapter(dict[str, Any])

    async def send(client: Any, method: str, **params: Any) -> dict[str, Any]:
        kind = UpdateParams if method == "tasks/update" else TaskParams
        return await client.session.send_request(request(method, kind)(method=method, params=kind(**params)), wire)

    async with Client(server, extensions=[Tasks()]) as client:
        assert EXTENSION in client.server_capabilities.extensions
        await client.list_tools()
        created = await client.session.call_tool("add_video", {"source": "sample.mp4", "wait_seconds": 60},
                                                 allow_claimed=True)
        assert isinstance(created, CreatedTask) and created.status == "working"  # at once, whatever wait_seconds
        task_id = created.task_id
        await standing(runner, gate, task_id)
        now = await send(client, "tasks/get", task_id=task_id)
        assert now["status"] == "working" and "running" in now["statusMessage"] and "result" not in now
        updated = await send(client, "tasks/update", task_id=task_id, input_responses={})
        assert set(updated) <= {"resultType", "_meta"}  # acknowledged: a build asks the client nothing
        acked = await send(client, "tasks/cancel", task_id=task_id)
        assert set(acked) <= {"resultType", "_meta"}  # an empty acknowledgement
        gate.opened.set()
        with anyio.fail_after(120):
            while (now := await send(client, "tasks/get", task_id=task_id))["status"] == "working":
                await anyio.sleep(0.05)
        assert now["status"] == "cancelled" and "result" not in now, now
        again = await send(client, "tasks/cancel", task_id=task_id)  # idempotent: the same empty acknowledgement
        assert set(again) <= {"resultType", "_meta"}
        assert (await send(client, "tasks/get", task_id=task_id))["status"] == "cancelled"
        with pytest.raises(MCPError, match="Task not found"):
            await send(client, "tasks/get", task_id="job_0000000000")
        assert runner.memory.video_ids() == ["kitchen"]

        second = await client.session.call_tool("add_video", {"source": "sample.mp4"}, allow_claimed=True)
        with anyio.fail_after(300):
            while (now := await send(client, "tasks/get", task_id=second.task_id))["status"] == "working":
                await anyio.sleep(0.05)
        assert now["status"] == "completed", now
        assert now["result"]["structuredContent"]["state"] == "done" and not now["result"].get("isError")

    async with Client(server) as plain:  # a client without the extension: the job itself, and no tasks methods
        job = await plain.call_tool("add_video", {"source": "sample.mp4"})
        assert job.structured_content["job_id"].startswith("job_") and "resultType" not in job.structured_content
        with pytest.raises(MCPError, match="did not declare"):
            await send(plain, "tasks/get", task_id=second.task_id)
