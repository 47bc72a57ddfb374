"""``add_video`` as a task on mcp 2.x: the ``io.modelcontextprotocol/tasks`` extension (SEP-2663).

The server declares the extension (``capabilities.extensions``, no settings). A ``tools/call``
of ``add_video`` from a client that declares it too, in that request's capabilities, on the
2026-07-28 protocol, is answered at once with the task (``resultType: "task"``: the job's id,
status, times, ``ttlMs``, ``pollIntervalMs``) instead of the job; any other call is answered as
before. The task is the build job (``jobs.json``), so it outlives a restart, and ``get_job`` /
``list_jobs`` see it too. The extension's three methods:

- ``tasks/get``: the task now. ``working`` while queued or running (the status message gives the
  stage and progress), ``completed`` with ``result`` (what ``get_job`` answers: the job), or
  ``cancelled``. There is no ``tasks/result``: the result comes inline, as the extension says.
  A build that failed is ``completed`` with a result marked ``isError`` saying why: the
  extension keeps ``failed`` for JSON-RPC errors, which a build never is;
- ``tasks/update``: the extension's way to answer a task's ``inputRequests``. A build asks the
  client nothing (it is never ``input_required``), so an update is acknowledged and its
  responses ignored, as the extension says of responses to keys that are not outstanding;
- ``tasks/cancel``: acknowledged at once (cancelling is eventually consistent); the build stops at
  its next safe point, what it left is undone and the task ends ``cancelled``, or ``completed``
  when the video was written first (the status message says the cancel came too late). A cancel
  of a task that had already ended gets the same empty acknowledgement and changes nothing (the extension
  reserves invalid-params for unknown task ids; ``tasks/get`` says how it ended).

A client that did not declare the extension gets -32021 (missing required client capability)
from these methods; an unknown task id gets invalid-params; a caller that may only read sees no
tasks (``memtools.mcp.permission``). mcp 1.x serves the 2025-11-25 experimental tasks instead
(``memtools.mcp.tasks``).
"""

from __future__ import annotations

import importlib
from typing import Any

from mcp.types import INVALID_PARAMS, CallToolResult

from memtools.jobs import Job
from memtools.mcp.permission import request_caller
from memtools.mcp.sdk import protocol_error
from memtools.mcp.tasks import AS_TASK, POLL_MS, STATUS, status_message

EXTENSION = "io.modelcontextprotocol/tasks"
MISSING_CAPABILITY = -32021
"""MISSING_REQUIRED_CLIENT_CAPABILITY of the 2026-07-28 specification."""
MODERN = ("2026-07-28",)
"""Protocol versions that carry a ``resultType: "task"`` result (an earlier wire has no extension results)."""


def declared(ctx: Any) -> bool:
    """Whether the request's client declared the tasks extension."""
    capabilities = ctx.session.client_capabilities
    return bool(capabilities is not None and capabilities.extensions and EXTENSION in capabilities.extensions)


def task_fields(job: Job) -> dict[str, Any]:
    """The extension's ``Task`` of a build job (its wire names)."""
    return {"taskId": job.job_id, "status": STATUS.get(job.state, "working"), "statusMessage": status_message(job),
            "createdAt": job.created_at, "lastUpdatedAt": job.updated_at, "ttlMs": None, "pollIntervalMs": POLL_MS}


class JobTaskMethods:
    """The extension's behaviour over the server's build tools (``memtools.mcp.jobs.JobTools``)."""

    def __init__(self, server: Any, tools: Any) -> None:
        self.server, self.tools = server, tools
        self.add_video = tools.prefix + "add_video"

    def _job(self, ctx: Any, task_id: str) -> Job:
        if not declared(ctx):
            raise protocol_error(MISSING_CAPABILITY, f"Client did not declare required extension {EXTENSION!r}",
                                 {"requiredCapabilities": {"extensions": {EXTENSION: {}}}})
        if not request_caller(self.server.allow_writes).may_write:
            raise protocol_error(INVALID_PARAMS, "tasks are build jobs, and this client may only read")
        job = self.tools.runner.get(task_id)
        if job is None:
            raise protocol_error(INVALID_PARAMS, f"Failed to retrieve task: Task not found: {task_id}")
        return job

    async def intercept(self, params: Any, ctx: Any, call_next: Any) -> Any:
        """``tools/call``: ``add_video`` from a client that declared the extension starts the job and answers the
        task; every other call (and a refused ``add_video``: a tool error) goes on as before."""
        if params.name != self.add_video or not declared(ctx) or ctx.protocol_version not in MODERN:
            return await call_next(ctx)
        token = AS_TASK.set(True)  # add_video returns at once, whatever wait_seconds says
        try:
            result = await call_next(ctx)
        finally:
            AS_TASK.reset(token)
        done: Any = result if isinstance(result, CallToolResult) else None
        if done is None or done.is_error or not done.structured_content:
            return result
        job = self.tools.runner.get(done.structured_content["job_id"])
        return {"resultType": "task", **task_fields(job)}

    async def get(self, ctx: Any, params: Any) -> dict[str, Any]:
        job = self._job(ctx, params.task_id)
        out = task_fields(job)
        if job.finished and job.state != "cancelled":
            outcome = await self.tools.get_job(job.job_id)
            result = outcome.model_dump(by_alias=True, mode="json", exclude_none=True)
            if job.state == "failed":
                result["isError"] = True
            out["result"] = result
        return out

    async def update(self, ctx: Any, params: Any) -> dict[str, Any]:
        self._job(ctx, params.task_id)  # a build never waits for input: nothing is outstanding
        return {}

    async def cancel(self, ctx: Any, params: Any) -> dict[str, Any]:
        job = self._job(ctx, params.task_id)
        if not job.finished:  # a task that ended already gets the same empty acknowledgement (idempotent)
            await self.tools.cancel(job.job_id, 0)
        return {}


def enable_tasks_extension(server: Any, tools: Any) -> JobTaskMethods:
    """Declare the extension on ``server`` (an mcp 2.x ``memtools.mcp.sdk.Server``) and serve its methods."""
    extension_module = importlib.import_module("mcp.server.extension")
    params_base: Any = importlib.import_module("mcp.types").RequestParams  # the SDK's bases, found at run time
    extension_base: Any = extension_module.Extension
    binding = extension_module.MethodBinding
    methods = JobTaskMethods(server, tools)

    class TaskParams(params_base):
        task_id: str

    class UpdateParams(TaskParams):
        input_responses: dict[str, Any] = {}

    class TasksExtension(extension_base):
        identifier = EXTENSION

        def methods(self) -> Any:
            return (binding("tasks/get", TaskParams, methods.get),
                    binding("tasks/update", UpdateParams, methods.update),
                    binding("tasks/cancel", TaskParams, methods.cancel))

        async def intercept_tool_call(self, params: Any, ctx: Any, call_next: Any) -> Any:
            return await methods.intercept(params, ctx, call_next)

    server.add_extension(TasksExtension())
    return methods
