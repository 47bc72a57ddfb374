"""``add_video`` as an MCP task: the experimental task-augmented calls of the 2025-11-25 specification.

A client that speaks tasks calls ``tools/call`` for ``add_video`` with ``params.task``; the
answer is a ``CreateTaskResult`` at once, whose task id is the build job's id. The client then
polls ``tasks/get`` (the job's state: ``working`` while queued or running, then ``completed``
or ``failed``, with the job's one-line summary as the status message), lists them with
``tasks/list`` and reads the outcome with ``tasks/result`` (which waits until the job is
finished, then gives the ``CallToolResult`` that ``get_job`` gives). There is one job behind
both ways of calling, so a task survives a server restart as its job does (``jobs.json``),
and ``get_job`` / ``list_jobs`` see it too.

``tasks/cancel`` stops the build at its next safe point and undoes what it left (the memory as
before that video: ``memtools.jobs.runner``); it waits up to ``CANCEL_WAIT_SECONDS`` for the job
to end and answers the task as it then stands: ``cancelled``, or ``completed`` when the video
was written before a safe point came (the status message says the cancel came too late), or
still ``working`` when the build has not reached a safe point yet. A task that had already ended
is refused with invalid-params, as the specification asks ("already completed: ...").

This module serves the mcp 1.x SDK, whose low-level server dispatches the ``tasks/*`` requests
(``mcp.types.GetTaskRequest`` ...). mcp 2.x moved tasks out of the core protocol into the
``io.modelcontextprotocol/tasks`` extension: ``memtools.mcp.task_extension`` serves that one.

Tasks are memory-wide like jobs (not per session), and only a caller that may write sees them:
the same rule as the build tools (``memtools.mcp.permission``).
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from datetime import datetime
from typing import Any

import anyio
from mcp import types

from memtools.jobs import Job
from memtools.mcp.permission import request_caller
from memtools.mcp.sdk import SDK_MAJOR, protocol_error

log = logging.getLogger(__name__)

POLL_MS = 1000
TTL_MS = 365 * 24 * 3600 * 1000
"""The retention a task reports: jobs stay in ``jobs.json`` with no expiry, but the SDK drops a ``null`` ttl (which
would say "unlimited") from the wire, so a year stands for it."""
RELATED_TASK = "io.modelcontextprotocol/related-task"
STATUS = {"queued": "working", "running": "working", "done": "completed", "failed": "failed",
          "cancelled": "cancelled"}
AS_TASK: ContextVar[bool] = ContextVar("memtools_add_video_as_task", default=False)
"""Set while ``add_video`` answers a task-augmented call (mcp 2.x): it returns at once (the task is followed)."""
CANCEL_WAIT_SECONDS = 30
"""How long ``tasks/cancel`` waits for the build to reach a safe point before it answers."""


def status_message(job: Job) -> str:
    """The job's one-line summary, and for one that ended another way than asked, why."""
    head = job.render().splitlines()[0]
    if job.state == "done" and job.cancel_requested:
        return head + " (the cancel came too late: the video was written before a safe point)"
    if job.state == "failed" and job.error:
        return f"{head}: {job.error}"
    return head


def _when(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def as_task(job: Job) -> types.Task:
    """The MCP task a build job is."""
    return types.Task(taskId=job.job_id, status=STATUS.get(job.state, "working"),
                      statusMessage=status_message(job), createdAt=_when(job.created_at),
                      lastUpdatedAt=_when(job.updated_at), ttl=TTL_MS, pollInterval=POLL_MS)


def _refuse(message: str, code: int = types.INVALID_PARAMS) -> Exception:
    """The JSON-RPC error the SDK answers with."""
    return protocol_error(code, message)


def ended_already(job: Job) -> Exception:
    """The refusal of a cancel for a task that had ended before it."""
    state = STATUS.get(job.state, job.state)
    what = ("the video is in the memory (forget_video removes it)" if job.state == "done" else
            "nothing of the build was kept" if job.state == "cancelled" else "nothing of the build was written")
    return _refuse(f"Cannot cancel task {job.job_id}: it already ended ({state}); {what}")


class JobTasks:
    """The ``tasks/*`` handlers over the server's build tools (``memtools.mcp.jobs.JobTools``)."""

    def __init__(self, server: Any, tools: Any) -> None:
        self.server, self.tools = server, tools
        self.add_video = tools.prefix + "add_video"

    def _job(self, task_id: str) -> Job:
        if not request_caller(self.server.allow_writes).may_write:
            raise _refuse("tasks are build jobs, and this client may only read")
        job = self.tools.runner.get(task_id)
        if job is None:
            raise _refuse(f"Task not found: {task_id}")
        return job

    async def call_tool(self, original: Any, request: types.CallToolRequest) -> types.ServerResult:
        """``tools/call``: with ``params.task`` for ``add_video``, start the job and answer with its task."""
        if request.params.task is None:
            return await original(request)
        if request.params.name != self.add_video:
            raise _refuse(f"the tool {request.params.name} does not run as a task; call it without 'task' "
                          f"(only {self.add_video} does)", types.METHOD_NOT_FOUND)
        arguments = {k: v for k, v in (request.params.arguments or {}).items() if k != "wait_seconds"}
        result = await self.server.call_tool(self.add_video, arguments)
        if result.isError:
            text = result.content[0].text if result.content else "add_video failed"
            raise _refuse(text)
        job = self.tools.runner.get(result.structuredContent["job_id"])
        return types.ServerResult(types.CreateTaskResult(task=as_task(job)))

    async def get(self, request: types.GetTaskRequest) -> types.ServerResult:
        task = as_task(self._job(request.params.taskId))
        return types.ServerResult(types.GetTaskResult(**task.model_dump()))

    async def result(self, request: types.GetTaskPayloadRequest) -> types.ServerResult:
        """``tasks/result``: wait for the job to finish, then what ``get_job`` says of it."""
        job = self._job(request.params.taskId)
        while not job.finished:
            await anyio.sleep(POLL_MS / 4000)
            job = self.tools.runner.get(job.job_id) or job
        outcome = await self.tools.get_job(job.job_id)
        data = outcome.model_dump(by_alias=True, exclude_none=True)
        data["_meta"] = {**data.get("_meta", {}), RELATED_TASK: {"taskId": job.job_id}}
        return types.ServerResult(types.GetTaskPayloadResult.model_validate(data))

    async def cancel(self, request: types.CancelTaskRequest) -> types.ServerResult:
        """``tasks/cancel``: stop the build (at its next safe point), wait a little for it, answer the task then."""
        if (job := self._job(request.params.taskId)).finished:
            raise ended_already(job)
        outcome = await self.tools.cancel(job.job_id, CANCEL_WAIT_SECONDS)
        if outcome is None:
            raise _refuse(f"Task not found: {job.job_id}")
        job, ended = outcome
        if ended:  # it ended in the meantime
            raise ended_already(job)
        return types.ServerResult(types.CancelTaskResult(**as_task(job).model_dump()))

    async def list(self, request: types.ListTasksRequest) -> types.ServerResult:  # noqa: ARG002 - one page
        if not request_caller(self.server.allow_writes).may_write:
            raise _refuse("tasks are build jobs, and this client may only read")
        return types.ServerResult(types.ListTasksResult(tasks=[as_task(j) for j in self.tools.runner.jobs()]))


def enable_job_tasks(server: Any, tools: Any) -> JobTasks | None:
    """Serve ``add_video`` as a task on mcp 1.x (``None`` on 2.x: ``memtools.mcp.task_extension`` serves it there)."""
    if SDK_MAJOR != 1:
        return None
    tasks = JobTasks(server, tools)
    lowlevel = server._mcp_server
    handlers = lowlevel.request_handlers
    original = handlers[types.CallToolRequest]

    async def call_tool(request: types.CallToolRequest) -> types.ServerResult:
        return await tasks.call_tool(original, request)

    handlers[types.CallToolRequest] = call_tool
    handlers[types.GetTaskRequest] = tasks.get
    handlers[types.GetTaskPayloadRequest] = tasks.result
    handlers[types.ListTasksRequest] = tasks.list
    handlers[types.CancelTaskRequest] = tasks.cancel
    _ = lowlevel.experimental  # its capabilities now list tasks (tools/call, tasks/list, tasks/cancel)
    return tasks
