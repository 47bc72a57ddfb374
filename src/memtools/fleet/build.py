"""Build many videos at once, in this process or as Ray tasks, with one writer.

    from memtools.fleet import FleetOptions, build_fleet
    summary = build_fleet(memory, make_vlm, paths, options=FleetOptions(ray=True))

``make_vlm`` is a picklable callable that returns the perception backend (each Ray task
makes its own: HTTP clients do not travel between processes), e.g.
``functools.partial(vlm_from_settings, settings)``.

The driver (this function) decides what to build (a video already in the memory, built from
the same file with the same settings, is skipped), keeps ``videos_in_flight`` videos
running, and writes the finished videos' bundles itself: workers never open the memory, so
kuzu's one-writer rule and lance's one-writer advice both hold. Without Ray the same loop
runs the videos as asyncio tasks of this process, sharing one backend.

Writes are grouped (``memtools.fleet.writer``): the writer, in a thread beside the loop,
takes every finished video that is waiting when it is free, up to ``write_group_videos``, in
one atomic write. A finished video waits at most ``write_linger_sec`` for others to join it
while more are still running (none once nothing else runs), so a reader sees it that much
later at most, and the writer pays its fixed per-write cost once per group, not per video.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from memtools.builder.bundle import (
    BuildFolder,
    VideoBundle,
    aperceive_video,
    build_state,
    is_built,
    start_fresh,
)
from memtools.builder.bundle_vectors import BundleVectors, WorkerEmbedder, video_vectors
from memtools.builder.config import BuildConfig
from memtools.builder.pipeline import resolve_video_id
from memtools.builder.report import BuildSummary, VideoReport
from memtools.errors import BuildError, ConfigError
from memtools.fleet.limits import LimitedVLM, LocalSlots, SlotStats, endpoint_key
from memtools.fleet.progress import FleetProgress, FleetSink
from memtools.fleet.writer import GROUP_VIDEOS, GroupLimits, group_full, group_size, one_line, write_group
from memtools.perception.base import run_sync
from memtools.store import Memory
from memtools.video.probe import content_hash

POLL_SEC = 2.0  # progress refresh while nothing finishes


@dataclass(frozen=True)
class FleetOptions:
    """How a fleet build runs. ``endpoint_limit``: requests in flight to the model endpoint
    across all workers. ``videos_in_flight``: videos running at once (default: Ray: the
    cluster's CPUs / ``task_cpus``; in process: 4). ``build_folder``: where ``work/`` and
    ``frames/`` are made (default the memory folder; on a cluster it must be shared storage)."""

    ray: bool = False
    address: str | None = None
    endpoint: str | None = None  # default: the backend's base URL
    endpoint_limit: int = 16
    videos_in_flight: int | None = None
    task_cpus: float = 1.0
    max_retries: int = 3
    build_folder: Path | None = None
    embed_in_workers: bool = True  # workers embed their videos' texts; the writer only checks and stores
    write_group_videos: int = GROUP_VIDEOS  # finished videos written together at most (1: one write per video)
    write_linger_sec: float = 5.0  # how long a finished video waits for others to share its write

    def __post_init__(self) -> None:
        if self.endpoint_limit < 1:
            raise ConfigError(f"the endpoint limit must be >= 1, not {self.endpoint_limit}")
        if self.videos_in_flight is not None and self.videos_in_flight < 1:
            raise ConfigError(f"videos in flight must be >= 1, not {self.videos_in_flight}")
        if self.task_cpus < 0 or self.max_retries < 0:
            raise ConfigError("task CPUs and retries cannot be negative")
        if self.write_group_videos < 1:
            raise ConfigError(f"videos per write must be >= 1, not {self.write_group_videos}")
        if self.write_linger_sec < 0:
            raise ConfigError(f"the write linger cannot be negative, not {self.write_linger_sec}")


class FleetSummary(BuildSummary):
    """A ``BuildSummary`` plus the videos that failed (id -> why) and what the endpoint saw."""

    failed: dict[str, str] = Field(default_factory=dict)
    peak_requests: int = 0
    tokens: int = 0

    def render(self, memory_path: str, report_paths: list[str] | None = None) -> str:
        text = super().render(memory_path, report_paths)
        if not self.failed:
            return text
        lines = [f"FAILED: {len(self.failed)} video(s); run the same command again to retry them "
                 "(their finished steps are checkpointed):"]
        lines += [f"  {vid}: {why}" for vid, why in sorted(self.failed.items())]
        return text + "\n" + "\n".join(lines)


@dataclass(frozen=True)
class _Job:
    source: str
    video_id: str


class LocalExecutor:
    """The videos as asyncio tasks of this process, sharing one backend and one slot pool."""

    def __init__(self, make_vlm: Callable[[], Any], folder: BuildFolder, config: BuildConfig, limit: int,
                 embedder: WorkerEmbedder | None = None) -> None:
        self.slots = LocalSlots(limit)
        self.vlm = LimitedVLM(make_vlm(), self.slots)
        self.folder, self.config, self.embedder = folder, config, embedder
        self._embedding = threading.Lock()  # one video embeds at a time: the CPUs are shared with the writer

    def slots_free(self) -> int:
        return 4

    async def perceive(self, source: str, video_id: str) -> VideoBundle:
        bundle = await aperceive_video(self.folder, self.vlm, source, video_id, config=self.config)
        if self.embedder is not None and bundle.graph is not None:
            bundle.vectors = await asyncio.to_thread(self._embed, bundle.graph)
        return bundle

    def _embed(self, graph) -> BundleVectors:
        assert self.embedder is not None
        with self._embedding:
            return video_vectors(graph, self.embedder.load())

    async def stats(self) -> SlotStats:
        return self.slots.stats()

    def close(self) -> None:
        pass


def _plan(memory: Memory, sources: Sequence[str | os.PathLike], video_ids: Sequence[str | None] | None,
          config: BuildConfig, fresh: bool, folder: BuildFolder) -> tuple[list[_Job], list[VideoReport]]:
    """The videos to build, and the reports of those already built and unchanged."""
    ids = list(video_ids) if video_ids is not None else [None] * len(sources)
    if len(ids) != len(sources):
        raise ConfigError(f"{len(sources)} videos but {len(ids)} video ids")
    paths = [Path(s).resolve() for s in sources]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise ConfigError(f"{len(missing)} video file(s) not found, e.g. {missing[0]}; fix the list and run again")
    resolved = [resolve_video_id(p, i) for p, i in zip(paths, ids, strict=True)]
    seen: set[str] = set()
    for vid in resolved:
        if vid in seen:
            raise BuildError(f"two inputs would get the same video id {vid!r}; rename one or give ids explicitly")
        seen.add(vid)
    memory.refresh()
    jobs, skipped = [], []
    for path, vid in zip(paths, resolved, strict=True):
        entry = memory.manifest.videos.get(vid)
        if not fresh and entry is not None and entry.status == "ready":
            if is_built(memory, vid, build_state(content_hash(path), config)):
                skipped.append(VideoReport(video_id=vid, source=str(path), duration=entry.duration, skipped=True,
                                           counts=dict(entry.counts)))
                continue
        if fresh:
            start_fresh(folder, vid)
        jobs.append(_Job(str(path), vid))
    return jobs, skipped


async def abuild_fleet(memory: Memory, make_vlm: Callable[[], Any], sources: Sequence[str | os.PathLike], *,
                       video_ids: Sequence[str | None] | None = None, config: BuildConfig | None = None,
                       options: FleetOptions | None = None, fresh: bool = False,
                       sink: FleetSink | None = None) -> FleetSummary:
    """Build ``sources`` into ``memory``; see the module docstring. A video that fails is
    marked ``failed`` in the manifest (one that was ready keeps its old version, frames included)
    and listed in the summary; the others go on."""
    config = config or BuildConfig.default()
    options = options or FleetOptions()
    folder = BuildFolder(Path(options.build_folder or memory.path).resolve())
    loop = asyncio.get_running_loop()
    started = loop.time()
    jobs, skipped = _plan(memory, sources, video_ids, config, fresh, folder)
    summary = FleetSummary(videos=list(skipped))
    progress = FleetProgress(len(sources), sink)
    progress.skipped = len(skipped)
    if not jobs:
        progress.push()
        return summary
    endpoint = options.endpoint or endpoint_key(make_vlm())
    if options.ray:
        from memtools.fleet.ray_runner import RayExecutor

        executor: Any = RayExecutor(make_vlm, folder, config, endpoint=endpoint, limit=options.endpoint_limit,
                                    address=options.address, task_cpus=options.task_cpus,
                                    max_retries=options.max_retries,
                                    embedder=WorkerEmbedder(memory.embedder.name) if options.embed_in_workers else None)
    else:
        own = memory.embedder
        executor = LocalExecutor(make_vlm, folder, config, options.endpoint_limit,
                                 WorkerEmbedder(own.name, lambda: own) if options.embed_in_workers else None)
    window = options.videos_in_flight or executor.slots_free()
    limits = GroupLimits(videos=options.write_group_videos)
    backlog = max(window, limits.videos)  # finished videos held for the writer at most before no new one starts
    queue = list(reversed(jobs))
    running: dict[asyncio.Task, _Job] = {}
    ready: list[VideoBundle] = []  # perceived, waiting for the writer
    ready_at: list[float] = []  # when each became ready
    writing: asyncio.Future | None = None  # the writer's current group (a thread)
    group: list[VideoBundle] = []
    fresh_ids: set[str] = set()  # videos not ready before this run (a failure marks them failed)

    async def start(job: _Job) -> VideoBundle:
        entry = memory.manifest.videos.get(job.video_id)
        if entry is None or entry.status != "ready":  # a ready video stays ready until its new version lands
            await asyncio.to_thread(memory.set_status, job.video_id, "building")
            fresh_ids.add(job.video_id)
        return await executor.perceive(job.source, job.video_id)

    try:
        while queue or running or ready or writing is not None:
            while queue and len(running) < window and len(ready) < backlog:
                job = queue.pop()
                running[asyncio.ensure_future(start(job))] = job
            now = loop.time()
            if writing is None and ready and (not running or group_full(ready, limits)
                                              or now - ready_at[0] >= options.write_linger_sec):
                size = group_size(ready, limits)
                group = ready[:size]
                del ready[:size], ready_at[:size]
                writing = asyncio.ensure_future(asyncio.to_thread(_write_step, memory, group))
            progress.in_flight = len(running) + len(ready) + len(group)
            timeout = POLL_SEC
            if writing is None and ready:  # wake up when the oldest ready video has waited long enough
                timeout = min(timeout, max(0.0, ready_at[0] + options.write_linger_sec - now))
            waits = set(running) | ({writing} if writing is not None else set())
            done, _ = await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if writing is not None and writing in done:
                _record(summary, progress, group, writing.result())
                writing, group = None, []
            for task in done:
                if task not in running:
                    continue
                job = running.pop(task)
                error = task.exception()
                if error is not None:
                    if not isinstance(error, Exception):
                        raise error
                    progress.failed += 1
                    summary.failed[job.video_id] = one_line(error)
                    if job.video_id in fresh_ids:  # a failed rebuild leaves the old version whole
                        await asyncio.to_thread(memory.set_status, job.video_id, "failed")
                    continue
                ready.append(task.result())
                ready_at.append(loop.time())
            progress.in_flight = len(running) + len(ready) + len(group)
            progress.push(await executor.stats())
    finally:
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        if writing is not None:  # a write in its thread cannot be stopped: let it finish
            await asyncio.gather(writing, return_exceptions=True)
        stats = await executor.stats()
        executor.close()
    summary.peak_requests, summary.tokens = stats.peak, stats.tokens
    summary.seconds = round(loop.time() - started, 3)
    return summary


def build_fleet(memory: Memory, make_vlm: Callable[[], Any], sources: Sequence[str | os.PathLike],
                **options) -> FleetSummary:
    """Blocking ``abuild_fleet``."""
    return run_sync(lambda: abuild_fleet(memory, make_vlm, sources, **options))



def _record(summary: FleetSummary, progress: FleetProgress, group: list[VideoBundle], failed: dict[str, str]) -> None:
    """A written group in the summary and the counters: each video written or failed."""
    for bundle in group:
        vid = bundle.report.video_id
        if vid in failed:
            summary.failed[vid] = failed[vid]
            progress.failed += 1
        else:
            summary.videos.append(bundle.report)
            progress.done += 1


def _write_step(memory: Memory, group: list[VideoBundle]) -> dict[str, str]:
    """The writer's thread: one group written (``memtools.fleet.writer``), its failures marked."""
    failed = write_group(memory, group)
    for vid in failed:
        with contextlib.suppress(Exception):  # the memory may be what failed; the summary still lists it
            memory.set_status(vid, "failed")
    return failed
