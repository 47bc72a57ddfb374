"""``JobRunner``: builds the videos ``add_video`` asked for, one at a time, on a thread of the server.

    runner = JobRunner(memory, settings, SourcePolicy(roots=[videos]), limits=JobLimits(max_cost_job=2.0))
    runner.start()                       # resumes the jobs a stopped server left unfinished
    job = runner.submit("talk.mp4")      # checked, queued, returned at once
    job = runner.wait(job.job_id, 30)    # returns early when it changes state or finishes

One job builds at a time (the memory has one writer; the server's readers go on meanwhile).
A job is the ordinary resumable build (``memtools.builder.abuild_video``) with the server's model
and settings: every answered model call is checkpointed under ``work/<video>/``, so a job that a
stopped server left ``queued`` or ``running`` is started again on the next start and pays only
for what is missing; a video already written is not written twice. ``--max-cost`` per job and
per UTC day is a ``Budget`` around each run, sized to what is left of both.

Several servers may share one memory's jobs (``memtools.jobs.book``): each builds the jobs it
owns (``memtools.jobs.owners``); an unfinished job whose server is gone is claimed by the next
runner to start, or to take an ``add_video``, never by two.

``cancel(job_id)`` (any process, through the shared book) marks the job; its build stops at the
next safe point (``memtools.builder.cancel``), what it left is undone (the memory as before that
video) and the job ends ``cancelled``. A cancel that comes once the video is being written is too
late: the job ends ``done`` and says so.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memtools.builder.cancel import BuildCancelled, state_before, undo_build, watching
from memtools.builder.progress import STAGES, Progress, Snapshot
from memtools.builder.settings import BuildSettings, vlm_from_settings
from memtools.costs import PriceTable, Tally
from memtools.errors import ConfigError, MemtoolsError
from memtools.jobs.book import Job, JobBook
from memtools.jobs.sources import SourcePolicy, SourceRefused, download, download_name
from memtools.schema import slugify_video_id
from memtools.store import Memory

log = logging.getLogger(__name__)

STAGE_WEIGHTS = {"keyframes": 0.05, "segment": 0.2, "extract": 0.5, "aggregate": 0.15, "index": 0.1}
SAVE_EVERY_SEC = 1.0


class JobsFull(MemtoolsError):
    """Too many jobs wait already; ``retry_after`` says when to ask again (seconds)."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class JobLimits:
    max_queued: int = 4
    """Unfinished jobs at most; more are refused (over HTTP: 503 with Retry-After)."""
    max_cost_job: float | None = None
    max_cost_day: float | None = None
    prices: PriceTable | None = None


class _Sink:
    """Build progress into the job record (saved at most every second, and at each stage change)."""

    def __init__(self, runner: JobRunner, job: Job, model: str) -> None:
        self.runner, self.job_id, self.model = runner, job.job_id, model
        self.base = (job.calls, job.input_tokens, job.output_tokens)
        self.saved = 0.0
        self.shown = job.progress

    def show(self, s: Snapshot) -> None:
        done = 0.0
        for name, weight in STAGE_WEIGHTS.items():
            count, total, finished = s.stages.get(name, (0, None, False))
            done += weight * (1.0 if finished else (min(1.0, count / total) if total else 0.0))
        self.shown = done = max(self.shown, min(done, 0.99))  # a stage's total grows as it goes: never back
        running = [n for n in STAGES if n in s.stages and not s.stages[n][2]]  # speech and speakers too
        calls, tin, tout = self.base[0] + s.calls, self.base[1] + s.run_input_tokens, self.base[2] + s.run_output_tokens
        now = time.monotonic()
        save = s.changed_stage or now - self.saved >= SAVE_EVERY_SEC
        if save:
            self.saved = now
        self.runner._update(self.job_id, save=save, stage=", ".join(running), progress=round(done, 3),
                            calls=calls, input_tokens=tin, output_tokens=tout,
                            cost_usd=self.runner._cost(self.model, tin, tout))

    def close(self) -> None:
        pass


class JobRunner:
    def __init__(self, memory: Memory, settings: BuildSettings, policy: SourcePolicy, *,
                 limits: JobLimits | None = None, vlm=None,
                 on_landed: Callable[[Job], None] | None = None,
                 speech: Callable[[Path], tuple[Any, Any]] | None = None) -> None:
        self.memory, self.settings, self.policy = memory, settings, policy
        self.speech = speech  # video path -> (recogniser, voice encoder): memtools.speech.options.speech_factory
        self.limits = limits or JobLimits()
        self.prices = self.limits.prices or PriceTable.load(memory.path)
        self.vlm = vlm if vlm is not None else vlm_from_settings(settings)  # a missing model fails at start
        self.model = getattr(self.vlm, "model_name", "") or ""
        if (self.limits.max_cost_job is not None or self.limits.max_cost_day is not None) \
                and self.prices.prices.get(self.model) is None:
            raise ConfigError(f"--max-cost needs a price for the model {self.model!r}: add [models.\"{self.model}\"] "
                              "input = ..., output = ... (dollars per million tokens) to prices.toml in the memory, "
                              "$MEMTOOLS_PRICES or --prices FILE")
        self.book = JobBook(memory.path)
        self.on_landed = on_landed or (lambda job: None)
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._changed = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closing = False

    # --- lifecycle ------------------------------------------------------------------------

    def start(self) -> list[Job]:
        """Start the worker; jobs a stopped server left unfinished are queued again first. Returns those."""
        resumed = self._adopt()
        self._thread = threading.Thread(target=self._work, name="memtools-jobs", daemon=True)
        self._thread.start()
        return resumed

    def close(self, timeout: float = 5.0) -> None:
        """Stop taking jobs; a running build is left to its checkpoints (the next start resumes it)."""
        self._closing = True
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join(timeout)
        if self._thread is None or not self._thread.is_alive():  # a build still running keeps its jobs owned
            self.book.close()

    def _adopt(self) -> list[Job]:
        """Queue the unfinished jobs no live process builds (a stopped server's, whichever server stopped): claimed
        in the jobs file under its lock, so of two servers starting at once only one resumes each job."""
        adopted = self.book.claim_unfinished()
        for job in adopted:
            self._queue.put(job.job_id)
        if adopted:
            log.info("resuming %d unfinished job(s): %s", len(adopted), ", ".join(j.job_id for j in adopted))
        return adopted

    # --- the API --------------------------------------------------------------------------

    def submit(self, source: str, video_id: str | None = None) -> Job:
        """Check the source and queue its build; the same unfinished source returns its job (no second build)."""
        checked = self.policy.check(source)
        if video_id is not None and (not video_id or slugify_video_id(video_id) != video_id):
            raise SourceRefused(f"video_id {video_id!r} is not usable: use lowercase letters, digits, '-' and '_' "
                                f"(e.g. {slugify_video_id(video_id or 'my-video')!r}), or leave it out")
        text = str(checked)
        self._adopt()  # a server stopped since this one started: its jobs are built here (and counted below)
        for job in self.book.unfinished():
            if job.source == text and (video_id is None or job.video_id == video_id) and not job.cancel_requested:
                return job
        waiting = len(self.book.unfinished())
        if waiting >= self.limits.max_queued:
            raise JobsFull(f"{waiting} jobs are queued or running already (at most {self.limits.max_queued}); "
                           "wait for one to finish (list_jobs) and add the video again", retry_after=30)
        if self.limits.max_cost_day is not None and self.book.spent_today() >= self.limits.max_cost_day:
            raise SourceRefused(f"today's budget (--max-cost-per-day ${self.limits.max_cost_day:g}) is spent; "
                                "add the video tomorrow (UTC) or ask the operator to raise the limit")
        if isinstance(checked, Path):
            video_id = video_id or slugify_video_id(checked.name)
        job = self.book.new(text, video_id)
        self._queue.put(job.job_id)
        self._notify()
        return job

    def get(self, job_id: str) -> Job | None:
        return self.book.get(job_id)

    def cancel(self, job_id: str) -> Job:
        """Ask for the job to stop (``KeyError`` for an unknown id); returns it as it stands now (see the module's
        text: a running build ends at its next safe point)."""
        job = self.book.request_cancel(job_id)
        self._notify()
        return job

    def jobs(self) -> list[Job]:
        return self.book.all()

    def wait(self, job_id: str, timeout: float, on_change: Callable[[Job], None] | None = None) -> Job | None:
        """The job once finished or ``timeout`` seconds on; ``on_change`` sees every update meanwhile."""
        deadline = time.monotonic() + max(0.0, timeout)
        last = self.book.get(job_id)
        while last is not None and not last.finished:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            with self._changed:
                self._changed.wait(min(left, 1.0))
            current = self.book.get(job_id)
            if current is not None and on_change is not None and current != last:
                on_change(current)
            last = current
        return last

    # --- the worker -----------------------------------------------------------------------

    def _notify(self) -> None:
        with self._changed:
            self._changed.notify_all()

    def _update(self, job_id: str, *, save: bool = True, **fields) -> Job:
        job = self.book.update(job_id, save=save, **fields)
        self._notify()
        return job

    def _cost(self, model: str, tokens_in: int, tokens_out: int) -> float | None:
        cost = self.prices.cost(model, Tally(0, tokens_in, tokens_out))
        return None if cost is None else round(cost, 6)

    def _work(self) -> None:
        while not self._closing:
            job_id = self._queue.get()
            if job_id is None or self._closing:
                return
            job = self.book.get(job_id)
            if job is None or job.finished:
                continue
            try:
                self._run(job)
            except BuildCancelled:
                self._cancelled(job.job_id)
            except Exception as exc:  # the job fails in plain words; the server goes on
                self._fail(job, exc)

    def _fail(self, job: Job, exc: BaseException) -> None:
        from memtools.builder.budget import BudgetExceeded

        if isinstance(exc, MemtoolsError):
            reason = str(exc).splitlines()[0]
            if isinstance(exc, BudgetExceeded):
                reason += ("; the finished steps are kept: add the same video again after the limit is raised (or "
                           "tomorrow, for the daily limit) and it resumes")
        else:
            log.error("job %s failed", job.job_id, exc_info=exc)
            reason = f"the build failed unexpectedly ({type(exc).__name__}: {exc}); the server's log has details"
        self._update(job.job_id, state="failed", error=reason, stage="")

    def _cancelled(self, job_id: str) -> None:
        """The build stopped (or never started again): undo what it left, then the job is cancelled."""
        job = self.book.get(job_id)
        if job is None:
            return
        try:
            if job.video_id is not None and job.before is not None:
                undo_build(self.memory, job.video_id, job.before)
            download = self.memory.path / "work" / "_jobs" / job_id
            if download.is_dir():
                import shutil

                shutil.rmtree(download, ignore_errors=True)
        except MemtoolsError as exc:
            self._update(job_id, state="failed", stage="", error=f"cancelled, but what the build left could not be "
                                                                 f"undone: {str(exc).splitlines()[0]}")
            return
        self._update(job_id, state="cancelled", stage="", error=None)

    def _requested(self, job_id: str) -> bool:
        job = self.book.get(job_id)
        return job is None or job.cancel_requested

    def _run(self, job: Job) -> None:
        from memtools.builder import abuild_video
        from memtools.builder.budget import spending_limit

        started = self.book.begin_run(job.job_id)
        self._notify()
        if started is None:  # cancelled while queued
            return
        if started.cancel_requested:  # asked while a stopped server's run was unfinished: undo that run
            raise BuildCancelled("cancelled before the build started again")
        job = started
        path = self._local_file(job)
        job = self.book.get(job.job_id) or job  # the video id of a download is known now
        if job.before is None and job.video_id is not None:  # once, before the build first changes anything
            job = self._update(job.job_id, before=state_before(self.memory, job.video_id))
        budget = self._budget(job)
        sink = _Sink(self, job, self.model)
        recognizer, speakers = self.speech(path) if self.speech is not None else (None, None)
        with spending_limit(budget), watching(lambda: self._requested(job.job_id)):
            report = asyncio.run(abuild_video(self.memory, self.vlm, path, video_id=job.video_id,
                                              config=self.settings.config, progress=Progress(sink),
                                              speech=recognizer, speakers=speakers))
        usage = report.usage
        if report.skipped:  # written before a restart cut the job short: nothing more to pay
            tin, tout, calls = job.input_tokens, job.output_tokens, job.calls
        else:
            tin, tout = sink.base[1] + usage.input_tokens, sink.base[2] + usage.output_tokens
            calls = sink.base[0] + usage.calls
        done = self._update(job.job_id, state="done", stage="", progress=1.0, video_id=report.video_id, calls=calls,
                            input_tokens=tin, output_tokens=tout, cost_usd=self._cost(self.model, tin, tout))
        self.on_landed(done)

    def _local_file(self, job: Job) -> Path:
        checked = self.policy.check(job.source)
        if isinstance(checked, Path):
            return checked
        dest = self.memory.path / "work" / "_jobs" / job.job_id / download_name(checked)
        if not dest.is_file():
            self._update(job.job_id, stage="download")
            download(self.policy, checked, dest)
        if job.video_id is None:
            self._update(job.job_id, video_id=slugify_video_id(dest.name))
        return dest

    def _budget(self, job: Job):
        from memtools.builder.budget import Budget

        limits = [self.limits.max_cost_job - (job.cost_usd or 0.0)] if self.limits.max_cost_job is not None else []
        if self.limits.max_cost_day is not None:
            limits.append(self.limits.max_cost_day - self.book.spent_today())
        if not limits:
            return None
        left = min(limits)
        if left <= 0:
            raise SourceRefused("the cost limit (--max-cost / --max-cost-per-day) is spent before this job could "
                                "start; raise the limit and add the video again")
        return Budget(max_cost=left, model=self.model, prices=self.prices)
