"""The jobs of a memory folder: ``jobs.json`` beside the manifest, so they outlive the server.

One JSON object, ``{"version": 1, "jobs": [...]}``. A memory without the file has no jobs; the
file is created by the first ``add_video``. Finished jobs are kept (newest ``KEEP_FINISHED``) so
``list_jobs`` and the day's spending can be read after a restart.

Several processes may serve one memory (two ``memtools serve --allow-writes``, a CLI beside a
server), so no process may write the file from what it alone remembers:

- a change is a read-modify-write under ``jobs.json.lock`` (``memtools.jobs.book_file``): read
  the file, put this process's changed jobs over it (by ``job_id``: this process's change wins,
  unless the file holds a copy with a newer ``updated_at``; a cancel asked for in the file is never
  lost that way: ``cancel_requested`` is kept), write temp + rename. Not under the
  memory's writers' lock: a build holds that one for minutes, and a job's progress (saved from
  inside that very build) or another server's ``add_video`` must not wait behind it;
- readers (``get``, ``all``) re-read the file whenever its stamp (inode, size, mtime) changed,
  so every server lists every server's jobs;
- an unfinished job has an owner, the process building it (``memtools.jobs.owners``); a starting
  runner claims, under the same lock, only those whose owner is gone, so two servers starting at
  once never build one job twice;
- a file that is not a book (any other JSON shape, entries of the wrong type, invalid UTF-8, cut
  short) is renamed to ``jobs.json.damaged-<UTC time>`` with a warning; the server starts with
  no jobs (the memory's videos are not touched).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field, ValidationError
from pydantic.json_schema import SkipJsonSchema

from memtools.jobs.book_file import Stamp, book_lock, read_raw, set_aside, stamp_of, write_atomic
from memtools.jobs.owners import Owner

log = logging.getLogger(__name__)
T = TypeVar("T")

JOBS_FILE = "jobs.json"
KEEP_FINISHED = 200
JobState = Literal["queued", "running", "done", "failed", "cancelled"]
UNFINISHED = ("queued", "running")
HIDDEN = ("owner", "before")
"""Fields kept in ``jobs.json`` only, never shown to clients."""


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def today() -> str:
    return dt.datetime.now(dt.timezone.utc).date().isoformat()


class Job(BaseModel):
    """One ``add_video`` build: what it reads, where it stands, what it cost so far."""

    job_id: str
    source: str = Field(description="The file path or URL given")
    video_id: str | None = Field(None, description="The video's id in the memory (known once the source is read)")
    state: JobState = "queued"
    stage: str = Field("", description="The build stage running now")
    progress: float = Field(0.0, description="Share of the build done, 0 to 1")
    calls: int = Field(0, description="Model calls made so far (all runs of this job)")
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = Field(None, description="Money spent so far, where the model has a price")
    error: str | None = Field(None, description="Why the job failed, in plain words")
    runs: int = Field(0, description="Times the build was started (more than 1 after a restart resumed it)")
    created_at: str = Field(default_factory=utc_now)
    updated_at: str = Field(default_factory=utc_now)
    day: str = Field(default_factory=today, description="The UTC day its spending counts for")
    cancel_requested: bool = Field(False, description=(
        "A cancel was asked for: the build stops at its next safe point and the job ends cancelled, or done if "
        "the video was written first"))
    owner: SkipJsonSchema[str | None] = Field(None, exclude=True, repr=False)
    """The process building it (``memtools.jobs.owners``): kept in ``jobs.json`` only, not shown to clients."""
    before: SkipJsonSchema[dict[str, Any] | None] = Field(None, exclude=True, repr=False)
    """What the memory held of the video before the build first ran (``memtools.builder.cancel.state_before``):
    what a cancel restores."""

    @property
    def finished(self) -> bool:
        return self.state not in UNFINISHED

    def render(self) -> str:
        tokens = f"{self.input_tokens:,} in + {self.output_tokens:,} out tokens"
        cost = f", ${self.cost_usd:.4f}" if self.cost_usd is not None else ""
        head = f"job {self.job_id}: {self.state}"
        if self.state == "running":
            head += f" ({self.stage or 'starting'}, {self.progress:.0%})"
        if self.cancel_requested and not self.finished:
            head += ", cancelling (it stops at the next safe point)"
        lines = [head, f"  source: {self.source}", f"  video: {self.video_id or '(not read yet)'}",
                 f"  model calls: {self.calls} ({tokens}{cost})"]
        if self.runs > 1:
            lines.append(f"  resumed: started {self.runs} times (finished steps were kept)")
        if self.error:
            lines.append(f"  error: {self.error}")
        if self.state == "done" and self.cancel_requested:
            lines.append("  the cancel came too late: the video was written before the build reached a safe point "
                         "(forget_video removes it)")
        if self.state == "done" and self.video_id:
            lines.append(f"  the video is in the memory: get_summary(video_id={self.video_id!r})")
        elif self.state == "cancelled":
            lines.append("  cancelled: nothing of this build was kept, the memory is as it was before it")
        elif not self.finished:
            lines.append(f"  follow it with get_job(job_id={self.job_id!r}, wait_seconds=30)")
        return "\n".join(lines)


class JobList(BaseModel):
    jobs: list[Job]

    def render(self) -> str:
        return "\n".join(j.render() for j in self.jobs) if self.jobs else "No jobs: add a video with add_video."


class BookDamaged(ValueError):
    """``jobs.json`` holds something other than a book of jobs."""


class _BookFile(BaseModel):
    """The shape ``jobs.json`` must have; anything else is damage."""

    version: int = 1
    jobs: list[Job]


def parse_book(raw: bytes) -> dict[str, Job]:
    """The jobs in the file's bytes, by id; ``BookDamaged`` (saying what is wrong) for anything else."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise BookDamaged(f"not UTF-8 text: {exc}") from exc
    except (ValueError, RecursionError) as exc:
        raise BookDamaged(f"not JSON (cut short?): {exc}") from exc
    if not isinstance(data, dict):
        raise BookDamaged(f'a JSON {type(data).__name__}, not an object {{"version": 1, "jobs": [...]}}')
    try:
        book = _BookFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"])) or "the file"
        raise BookDamaged(f"{where}: {first['msg']} ({exc.error_count()} problem(s))") from exc
    return {job.job_id: job for job in book.jobs}


def encode_book(jobs: dict[str, Job]) -> bytes:
    rows = [{**j.model_dump(mode="json"), **{k: getattr(j, k) for k in HIDDEN if getattr(j, k) is not None}}
            for j in jobs.values()]
    return json.dumps({"version": 1, "jobs": rows}, indent=1).encode("utf-8")


class JobBook:
    """The jobs file of one memory, shared by this process's threads and by every process on the memory."""

    def __init__(self, memory_path: str | os.PathLike) -> None:
        self.path = Path(memory_path) / JOBS_FILE
        self.owner = Owner(self.path.parent)
        self._lock = threading.RLock()
        self._jobs: dict[str, Job] = {}
        self._dirty: set[str] = set()  # changed here and not yet written (update(save=False))
        self._stamp: Stamp | None = None
        self._loaded = False
        with self._lock:
            self._refresh()

    # --- reading ----------------------------------------------------------------------------

    def _read(self, *, locked: bool) -> dict[str, Job]:
        """The jobs in the file now (and its stamp into ``_stamp``). A damaged file is set aside, but only
        under the lock, after reading it again: a good file another process just wrote is never moved."""
        got = read_raw(self.path)
        if got is None:
            self._stamp = None
            return {}
        raw, stamp = got
        try:
            jobs = parse_book(raw)
        except BookDamaged as exc:
            if locked:
                set_aside(self.path, str(exc))
                self._stamp = None
                return {}
            try:
                with book_lock(self.path):
                    return self._read(locked=True)
            except OSError as why:  # a folder this process may not write: read the book as empty
                log.warning("%s is damaged (%s) and cannot be set aside (%s); its jobs are ignored", self.path,
                            exc, why)
                self._stamp = stamp
                return {}
        self._stamp = stamp
        return jobs

    def _merged(self, disk: dict[str, Job]) -> dict[str, Job]:
        """The file's jobs with this process's on top: its unsaved changes (unless the file's copy is newer, i.e.
        another process changed the job since), and the unfinished jobs it builds (even if the file lost them)."""
        for job_id, mine in self._jobs.items():
            theirs = disk.get(job_id)
            if job_id in self._dirty:
                if theirs is not None and theirs.updated_at > mine.updated_at:
                    self._dirty.discard(job_id)
                else:
                    mine.cancel_requested |= theirs is not None and theirs.cancel_requested  # a cancel is never lost
                    disk[job_id] = mine
            elif theirs is None and not mine.finished and mine.owner == self.owner.token:
                disk[job_id] = mine
                self._dirty.add(job_id)
        self._dirty &= disk.keys()
        return disk

    def _refresh(self) -> None:
        """Read the file again when any process wrote it since this one last looked (a stat, else nothing)."""
        if self._loaded and stamp_of(self.path) == self._stamp:
            return
        self._jobs = self._merged(self._read(locked=False))
        self._loaded = True

    # --- writing ----------------------------------------------------------------------------

    def _commit(self, change: Callable[[], T]) -> T:
        """Read-modify-write under ``jobs.json.lock``: the file's jobs, this process's changes over them,
        ``change()``, then the whole book back (only if anything changed)."""
        with self._lock, book_lock(self.path):
            self._jobs = self._merged(self._read(locked=True))
            self._loaded = True
            result = change()
            if self._dirty | self._trim():
                self._stamp = write_atomic(self.path, encode_book(self._jobs))
                self._dirty.clear()
            return result

    def _trim(self) -> set[str]:
        """Forget the oldest finished jobs beyond ``KEEP_FINISHED``; returns their ids."""
        finished = sorted((j for j in self._jobs.values() if j.finished), key=lambda j: j.updated_at)
        dropped = {old.job_id for old in finished[:-KEEP_FINISHED]}
        for job_id in dropped:
            del self._jobs[job_id]
        self._dirty -= dropped
        return dropped

    def _job(self, job_id: str) -> Job:
        job = self._jobs.get(job_id)
        if job is None:
            raise KeyError(f"no job {job_id!r} in {self.path} (it may have been set aside as damaged); "
                           "list_jobs shows the jobs there are")
        return job

    # --- the API ----------------------------------------------------------------------------

    def new(self, source: str, video_id: str | None = None) -> Job:
        """A queued job, owned by this process (whose runner builds it)."""
        def change() -> Job:
            job = Job(job_id=f"job_{uuid.uuid4().hex[:10]}", source=source, video_id=video_id,
                      owner=self.owner.hold())
            self._jobs[job.job_id] = job
            self._dirty.add(job.job_id)
            return job.model_copy()

        return self._commit(change)

    def claim_unfinished(self) -> list[Job]:
        """Take over the unfinished jobs no live process builds (a stopped server's, or a file from before owners):
        queued again, owned by this process. Under the lock, so two runners never take one job."""
        def change() -> list[Job]:
            self.owner.sweep()
            orphans = [j for j in self._jobs.values() if not j.finished and not self.owner.alive(j.owner)]
            claimed = []
            for job in orphans:
                job.owner, job.state, job.stage, job.updated_at = self.owner.hold(), "queued", "", utc_now()
                self._dirty.add(job.job_id)
                claimed.append(job.model_copy())
            return claimed

        return self._commit(change)

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            self._refresh()
            job = self._jobs.get(job_id)
            return job.model_copy() if job is not None else None

    def all(self) -> list[Job]:
        with self._lock:
            self._refresh()
            return sorted((j.model_copy() for j in self._jobs.values()), key=lambda j: j.created_at)

    def update(self, job_id: str, *, save: bool = True, **fields) -> Job:
        """Change a job; ``save=False`` keeps the change in this process until the next save (frequent progress)."""
        def change() -> Job:
            job = self._job(job_id)
            for name, value in fields.items():
                setattr(job, name, value)
            job.updated_at = utc_now()
            self._dirty.add(job_id)
            return job.model_copy()

        with self._lock:
            if save:
                return self._commit(change)
            self._refresh()
            return change()

    def request_cancel(self, job_id: str) -> Job:
        """Ask for the job to be cancelled (any process may). A queued job that never ran ends cancelled at once;
        one that ran is left to its runner, which stops the build at its next safe point and undoes it. A finished
        job is returned unchanged."""
        def change() -> Job:
            job = self._job(job_id)
            if not job.finished and not job.cancel_requested:
                job.cancel_requested, job.updated_at = True, utc_now()
                if job.state == "queued" and job.runs == 0:
                    job.state, job.stage = "cancelled", ""
                self._dirty.add(job_id)
            return job.model_copy()

        return self._commit(change)

    def begin_run(self, job_id: str) -> Job | None:
        """The job marked running by this process (another run), or None when it ended meanwhile (a cancel)."""
        def change() -> Job | None:
            job = self._jobs.get(job_id)
            if job is None or job.finished:
                return None
            job.state, job.runs, job.error, job.day, job.updated_at = "running", job.runs + 1, None, today(), utc_now()
            self._dirty.add(job_id)
            return job.model_copy()

        return self._commit(change)

    def save(self) -> None:
        self._commit(lambda: None)

    def close(self) -> None:
        """Give up this process's claim on its unfinished jobs (the next runner to start may resume them)."""
        with self._lock:
            self.owner.release()

    def unfinished(self) -> list[Job]:
        return [j for j in self.all() if not j.finished]

    def spent_today(self) -> float:
        day = today()
        return sum(j.cost_usd or 0.0 for j in self.all() if j.day == day)
