"""The build tools of a server started with ``--allow-root`` / ``--allow-urls``: ``add_video``, ``get_job``,
``list_jobs``, ``cancel_job`` and ``estimate_build``.

``add_video`` checks the source and returns a job at once; the build runs on the server's
``JobRunner`` (``memtools.jobs``). ``get_job(job_id, wait_seconds)`` waits up to that long for
the job to finish and, when the client sent a ``progressToken``, reports the job's progress as
MCP progress notifications meanwhile (on stdio, and over HTTP on the event stream such a request is
answered with: ``memtools.mcp.streaming``). When a job's video lands,
the next of these calls sends ``notifications/resources/list_changed`` (a new summary resource)
and, when a tool became usable, ``notifications/tools/list_changed``.

``cancel_job(job_id)`` stops a job for clients without tasks: the build stops at its next safe
point and what it left is undone (``memtools.jobs.runner``); it waits a little for that and
answers the job as it then stands (``cancelled``, or ``done`` when the video was written first).

MCP Tasks: ``add_video`` is also a task-augmented call, with the same job behind it: the
experimental tasks of 2025-11-25 on mcp 1.x (``memtools.mcp.tasks``), the tasks extension on
mcp 2.x (``memtools.mcp.task_extension``); both cancel through the same runner.

Over HTTP, ``FloodGate`` answers an ``add_video`` call with 503 and ``Retry-After`` while the
job queue is full (on stdio the call gets an error result saying when to try again).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Annotated, Any, get_type_hints

import anyio
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from memtools.builder.estimate import estimate_build
from memtools.builder.vocabulary import has_library
from memtools.costs import IMAGE_TOKENS
from memtools.errors import MemtoolsError, VideoError
from memtools.jobs import Job, JobList, JobRunner, JobsFull
from memtools.mcp import permission
from memtools.mcp.adapter import ERROR_KIND_META
from memtools.mcp.sdk import SDK_MAJOR, Context
from memtools.mcp.tasks import AS_TASK

log = logging.getLogger(__name__)

MAX_WAIT_SECONDS = 60.0
MAX_DURATION_SEC = 30 * 24 * 3600.0
"""estimate_build's longest ``duration_sec``: 30 days (2,592,000 s) of video."""
MAX_SOURCE = 4096
"""The longest path or URL a build tool takes."""
ADD_ANNOTATIONS = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=True)
"""add_video: a video id the memory holds already is built again and replaced (its corrections with it: no change
to undo); the same source again while its job is unfinished is that job, and once built an unchanged file is not
built again; a URL is fetched and a model called (open world)."""
READ_ANNOTATIONS = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True,
                                   openWorldHint=False)
CANCEL_ANNOTATIONS = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True,
                                     openWorldHint=False)
"""cancel_job: the build's checkpoints (paid model answers) are discarded and the job ends cancelled; a second
call finds it ended and changes nothing."""
CANCEL_WAIT_SECONDS = 10
JOB_TOOLS = ("add_video", "get_job", "list_jobs", "cancel_job", "estimate_build")
WRITE_TOOLS = JOB_TOOLS
"""The tools that start or follow writes, and estimate_build, which reads the allowed folders: the permission
gate shows them only to callers that may write (``memtools.mcp.permission``)."""


class StageOut(BaseModel):
    calls: int
    tokens_in: int
    tokens_out: int
    images: int


class EstimateOut(BaseModel):
    """What building the videos would take; no model was called."""

    videos: list[dict[str, Any]]
    model: str
    calls: int
    input_tokens: int
    output_tokens: int
    images: int
    cost_usd: float | None = Field(description="None without a price for the model")
    wall_seconds: int
    stages: dict[str, StageOut]
    text: str = Field("", exclude=True)

    def render(self) -> str:
        return self.text


def _result(model: BaseModel, text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structuredContent=model.model_dump(mode="json"))


def _error(kind: str, message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], isError=True,
                          _meta={ERROR_KIND_META: kind})


def _arguments_model(name: str, fn: Any) -> type[BaseModel]:
    """A closed pydantic model of ``fn``'s parameters (its context left out), to check a client's raw arguments."""
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.name == "ctx":
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (get_type_hints(fn, include_extras=True)[param.name], default)
    return create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid", strict=True), **fields)


class JobTools:
    """The tool functions over one runner, and what the server already announced."""

    def __init__(self, server: Any, runner: JobRunner, prefix: str = "") -> None:
        self.server, self.runner, self.prefix = server, runner, prefix
        self.announced: set[str] = {j.job_id for j in runner.jobs() if j.state == "done"}
        self.functions: dict[str, Callable[..., Any]] = {
            "add_video": self.add_video, "get_job": self.get_job, "list_jobs": self.list_jobs,
            "cancel_job": self.cancel_job, "estimate_build": self.estimate}
        self.arguments = {name: _arguments_model(name, fn) for name, fn in self.functions.items()}

    def owns(self, name: str) -> bool:
        return name.startswith(self.prefix) and name[len(self.prefix):] in self.functions

    async def dispatch(self, name: str, arguments: dict[str, Any] | None, ctx: Any) -> CallToolResult:
        """One call with the client's raw arguments, checked strictly (as the memtools tools are)."""
        short = name[len(self.prefix):]
        try:
            checked = self.arguments[short].model_validate(arguments or {})
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors())
            return _error("bad-arguments", f"{short}: {problems}")
        values = dict(checked)
        fn = self.functions[short]
        if "ctx" in inspect.signature(fn).parameters:
            values["ctx"] = ctx
        if inspect.iscoroutinefunction(fn):
            return await fn(**values)
        return await anyio.to_thread.run_sync(lambda: fn(**values))

    def input_schema(self, name: str) -> dict[str, Any]:
        return self.arguments[name[len(self.prefix):]].model_json_schema()

    async def follow(self, job: Job, wait_seconds: float, ctx: Any) -> Job:
        """Wait for ``job`` up to ``wait_seconds``, reporting its progress to a client that asked for it."""
        wait = min(max(0.0, float(wait_seconds)), MAX_WAIT_SECONDS)
        deadline = anyio.current_time() + wait
        last: tuple | None = None
        while True:
            key = (job.state, job.stage, job.progress, job.calls)
            if key != last and ctx is not None:
                last = key
                try:
                    await ctx.report_progress(job.progress, 1.0, job.render().splitlines()[0])
                except Exception:  # a client that went away: the result still answers
                    log.debug("could not send progress", exc_info=True)
            if job.finished or anyio.current_time() >= deadline:
                return job
            await anyio.sleep(0.25)
            job = self.runner.get(job.job_id) or job

    async def announce(self, ctx: Any) -> None:
        """A video landed since the last call: tell the client its lists changed."""
        landed = {j.job_id for j in self.runner.jobs() if j.state == "done"} - self.announced
        if not landed or ctx is None:
            return
        self.announced |= landed
        try:
            await ctx.session.send_resource_list_changed()
        except Exception as exc:  # stateless HTTP has no way back: the next resources/list tells
            log.info("could not send resources/list_changed: %s", exc)
        if self.server._listed_hidden is not None:
            hidden = await anyio.to_thread.run_sync(self.server.unavailable)
            if hidden != self.server._listed_hidden:
                self.server._listed_hidden = hidden
                await self.server.notify_tools_changed(ctx)

    async def add_video(self, source: Annotated[str, Field(max_length=MAX_SOURCE, description=(
            "A video file path (absolute, or relative to one of the server's allowed folders) or an http(s) URL "
            "(only if the server allows URLs)"))],
            video_id: Annotated[str | None, Field(max_length=128, description=(
                "The id the video gets in the memory (lowercase letters, digits, '-', '_'); default: from the "
                "file name"))] = None,
            wait_seconds: Annotated[float, Field(ge=0, le=MAX_WAIT_SECONDS, allow_inf_nan=False, description=(
                "Wait this long for the build (progress notifications meanwhile); 0 returns at once"))] = 0,
            ctx: Context = None) -> Annotated[CallToolResult, Job]:
        try:
            job = await anyio.to_thread.run_sync(lambda: self.runner.submit(source, video_id))
        except JobsFull as exc:
            return _error("busy", f"{exc}; try again in {exc.retry_after} s")
        except MemtoolsError as exc:
            return _error("bad-arguments", str(exc))
        if AS_TASK.get():
            wait_seconds = 0
        job = await self.follow(job, wait_seconds, ctx if wait_seconds else None)
        await self.announce(ctx)
        return _result(job, job.render())

    async def get_job(self, job_id: Annotated[str, Field(max_length=64, description="The id add_video returned")],
                      wait_seconds: Annotated[float, Field(ge=0, le=MAX_WAIT_SECONDS, allow_inf_nan=False, description=(
                          "Wait up to this long for the job to finish, with progress notifications meanwhile"
                      ))] = 0,
                      ctx: Context = None) -> Annotated[CallToolResult, Job]:
        job = self.runner.get(job_id)
        if job is None:
            known = ", ".join(j.job_id for j in self.runner.jobs()[-5:]) or "none yet"
            return _error("not-found", f"no job {job_id!r}; job ids look like job_0123456789 (recent: {known}); "
                                       "call list_jobs")
        job = await self.follow(job, wait_seconds, ctx)
        await self.announce(ctx)
        return _result(job, job.render())

    async def cancel(self, job_id: str, wait_seconds: float, ctx: Any = None) -> tuple[Job, bool] | None:
        """Ask for the job to stop and wait up to ``wait_seconds`` for it to end: (the job then, whether it had
        ended before the cancel came), None for an unknown id."""
        try:
            job = await anyio.to_thread.run_sync(lambda: self.runner.cancel(job_id))
        except KeyError:
            return None
        ended = job.finished and not job.cancel_requested
        return await self.follow(job, 0 if ended else wait_seconds, ctx), ended

    async def cancel_job(self, job_id: Annotated[str, Field(max_length=64, description="The id add_video returned")],
                         wait_seconds: Annotated[float, Field(ge=0, le=MAX_WAIT_SECONDS, allow_inf_nan=False,
                                                              description=(
                             "Wait up to this long for the build to stop (at its next safe point)"))
                         ] = CANCEL_WAIT_SECONDS,
                         ctx: Context = None) -> Annotated[CallToolResult, Job]:
        outcome = await self.cancel(job_id, wait_seconds, ctx)
        if outcome is None:
            known = ", ".join(j.job_id for j in self.runner.jobs()[-5:]) or "none yet"
            return _error("not-found", f"no job {job_id!r}; job ids look like job_0123456789 (recent: {known}); "
                                       "call list_jobs")
        job, ended = outcome
        head = (f"nothing to cancel: the job had already ended ({job.state})\n" if ended else
                "" if job.finished else "the cancel is asked for; follow the job with get_job\n")
        return _result(job, head + job.render())

    async def list_jobs(self, ctx: Context = None) -> Annotated[CallToolResult, JobList]:
        jobs = JobList(jobs=self.runner.jobs()[-50:])
        await self.announce(ctx)
        return _result(jobs, jobs.render())

    def estimate(self, sources: Annotated[list[Annotated[str, Field(max_length=MAX_SOURCE)]], Field(
            max_length=50, description=(
            "Video files to estimate (paths as for add_video)"))] = [],  # noqa: B006 - the SDK reads the default
            duration_sec: Annotated[float | None, Field(gt=0, le=MAX_DURATION_SEC, allow_inf_nan=False, description=(
                "Or: the length of a video not at hand (e.g. a URL), in seconds (at most 2,592,000: 30 days)"))
            ] = None,
            ) -> Annotated[CallToolResult, EstimateOut]:
        from memtools.video import probe

        if not sources and duration_sec is None:
            return _error("bad-arguments", "give sources (video files) or duration_sec")
        videos: list = []
        try:
            for source in sources:
                videos.append(probe(self.runner.policy.check_path(source)))
        except (MemtoolsError, VideoError) as exc:
            return _error("bad-arguments", str(exc))
        if duration_sec is not None:
            videos.append(("(given duration)", duration_sec))
        runner = self.runner
        plan = estimate_build(videos, runner.settings.config, model=runner.model, prices=runner.prices,
                              image_tokens=getattr(runner.vlm, "tokens_per_image", None) or IMAGE_TOKENS,
                              library=has_library(runner.memory.path))
        data = plan.as_dict()
        out = EstimateOut(**data, text=plan.render())
        return _result(out, out.text)


def register_job_tools(server: Any, runner: JobRunner, prefix: str = "") -> JobTools:
    """Add the build tools to ``server``; returns them (the server keeps them as ``server.jobs``)."""
    tools = JobTools(server, runner, prefix)
    described = {
        "add_video": (tools.add_video, ADD_ANNOTATIONS,
                      "Add a video to the memory: starts building it with the server's model and returns a job at "
                      "once. Follow it with get_job(job_id, wait_seconds=30) until its state is done; the video's "
                      "tools (get_summary, search_nodes, ...) work from then on. Call estimate_build first to see "
                      "what it will cost."),
        "get_job": (tools.get_job, READ_ANNOTATIONS,
                    "The state of a build job (queued, running, done, failed, cancelled), its progress, model calls, "
                    "tokens, cost so far and, if it failed, why. wait_seconds waits for it to finish."),
        "list_jobs": (tools.list_jobs, READ_ANNOTATIONS, "The build jobs of this memory, oldest first."),
        "cancel_job": (tools.cancel_job, CANCEL_ANNOTATIONS,
                       "Cancel a build job: it stops at its next safe point and nothing of it is kept (the memory is "
                       "as before that video; its paid model answers are discarded). A video already written stays: "
                       "the job then ends done and says so. Waits up to wait_seconds for the job to end."),
        "estimate_build": (tools.estimate, READ_ANNOTATIONS,
                           "What building videos would take, without calling a model: model calls, input/output "
                           "tokens, images, cost (from the price table) and wall time."),
    }
    for name, (fn, hints, description) in described.items():
        server.add_tool(fn, name=prefix + name, title=name.replace("_", " ").capitalize(), description=description,
                        annotations=hints, structured_output=True)
    server.jobs = tools
    from memtools.mcp.tasks import enable_job_tasks

    server.job_tasks = enable_job_tasks(server, tools)  # add_video as an MCP task: mcp 1.x
    if SDK_MAJOR == 2:  # the tasks extension
        from memtools.mcp.task_extension import enable_tasks_extension

        enable_tasks_extension(server, tools)
    return tools


class FloodGate:
    """ASGI: a POST to ``/mcp`` calling ``add_video`` while the queue is full is answered 503 with Retry-After."""

    def __init__(self, app: Any, runner: JobRunner, tool_name: str) -> None:
        self.app, self.runner, self.tool_name = app, runner, tool_name

    def full(self) -> bool:
        return len(self.runner.book.unfinished()) >= self.runner.limits.max_queued

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST" or not self.full():
            await self.app(scope, receive, send)
            return
        from starlette.responses import JSONResponse

        read = await permission.read_body(receive)
        if read is None:
            await JSONResponse({"error": "the request is too large"}, status_code=413)(scope, receive, send)
            return
        body, messages = read
        if permission.calls_a_write_tool(body, frozenset({self.tool_name})):
            response = JSONResponse({"error": f"{self.runner.limits.max_queued} jobs are queued or running; "
                                              "try again later"}, status_code=503, headers={"Retry-After": "30"})
            await response(scope, receive, send)
            return
        await self.app(scope, permission.replay(messages, receive), send)
