"""The jobs of a memory folder: ``jobs.json`` beside the manifest, so they outlive the server.

One JSON object, ``{"version": 1, "jobs": [...]}``, rewritten whole (temp file + rename) after
every change, so a kill leaves either the old or the new file. A memory without the file has no
jobs; the file is created by the first ``add_video``. Finished jobs are kept (newest
``KEEP_FINISHED``) so ``list_jobs`` and the day's spending can be read after a restart.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
import uuid
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

JOBS_FILE = "jobs.json"
KEEP_FINISHED = 200
JobState = Literal["queued", "running", "done", "failed"]
UNFINISHED = ("queued", "running")


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

    @property
    def finished(self) -> bool:
        return self.state not in UNFINISHED

    def render(self) -> str:
        tokens = f"{self.input_tokens:,} in + {self.output_tokens:,} out tokens"
        cost = f", ${self.cost_usd:.4f}" if self.cost_usd is not None else ""
        head = f"job {self.job_id}: {self.state}"
        if self.state == "running":
            head += f" ({self.stage or 'starting'}, {self.progress:.0%})"
        lines = [head, f"  source: {self.source}", f"  video: {self.video_id or '(not read yet)'}",
                 f"  model calls: {self.calls} ({tokens}{cost})"]
        if self.runs > 1:
            lines.append(f"  resumed: started {self.runs} times (finished steps were kept)")
        if self.error:
            lines.append(f"  error: {self.error}")
        if self.state == "done" and self.video_id:
            lines.append(f"  the video is in the memory: get_summary(video_id={self.video_id!r})")
        elif not self.finished:
            lines.append(f"  follow it with get_job(job_id={self.job_id!r}, wait_seconds=30)")
        return "\n".join(lines)


class JobList(BaseModel):
    jobs: list[Job]

    def render(self) -> str:
        return "\n".join(j.render() for j in self.jobs) if self.jobs else "No jobs: add a video with add_video."


class JobBook:
    """The jobs file of one memory, safe to use from several threads of one process."""

    def __init__(self, memory_path: str | os.PathLike) -> None:
        self.path = Path(memory_path) / JOBS_FILE
        self._lock = threading.RLock()
        self._jobs: dict[str, Job] = self._read()

    def _read(self) -> dict[str, Job]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return {j["job_id"]: Job.model_validate(j) for j in data.get("jobs", [])}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, KeyError, TypeError, ValidationError) as exc:
            # a damaged file must not stop the server: keep it aside, start an empty book
            aside = self.path.with_name(f"{JOBS_FILE}.unreadable")
            os.replace(self.path, aside)
            import logging

            logging.getLogger(__name__).warning("%s could not be read (%s); kept as %s", self.path, exc, aside)
            return {}

    def _write(self) -> None:
        finished = sorted((j for j in self._jobs.values() if j.finished), key=lambda j: j.updated_at)
        for old in finished[:-KEEP_FINISHED]:
            del self._jobs[old.job_id]
        data = {"version": 1, "jobs": [j.model_dump(mode="json") for j in self._jobs.values()]}
        tmp = self.path.with_name(f".{JOBS_FILE}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
        os.replace(tmp, self.path)

    def new(self, source: str, video_id: str | None = None) -> Job:
        with self._lock:
            job = Job(job_id=f"job_{uuid.uuid4().hex[:10]}", source=source, video_id=video_id)
            self._jobs[job.job_id] = job
            self._write()
            return job.model_copy()

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            job = self._jobs.get(job_id)
            return job.model_copy() if job is not None else None

    def all(self) -> list[Job]:
        with self._lock:
            return sorted((j.model_copy() for j in self._jobs.values()), key=lambda j: j.created_at)

    def update(self, job_id: str, *, save: bool = True, **fields) -> Job:
        with self._lock:
            job = self._jobs[job_id]
            for name, value in fields.items():
                setattr(job, name, value)
            job.updated_at = utc_now()
            if save:
                self._write()
            return job.model_copy()

    def save(self) -> None:
        with self._lock:
            self._write()

    def unfinished(self) -> list[Job]:
        return [j for j in self.all() if not j.finished]

    def spent_today(self) -> float:
        day = today()
        return sum(j.cost_usd or 0.0 for j in self.all() if j.day == day)
