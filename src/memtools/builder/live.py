"""The live build (``memtools build --follow SOURCE``): grow a memory while the video is recorded.

    report = await afollow(memory, vlm, "rtsp://camera/stream", config=BuildConfig.short())

Frames are read as they arrive (``memtools.builder.follow_source``). A segmentation window
``[start, start + tau]`` closes when the stream passes its end. The build then segments it,
extracts its episodes (the same steps and checkpoints as a file build), picks the window's
keyframes, and *lands* it. Landing re-aggregates the tail (the last, still growing chunk of
``aggregate_chunk`` macro events) and the root, thins older keyframes by age
(``memtools.builder.frame_tiers``), and replaces the video in the memory in one atomic write.
Readers (MCP servers, agents) pick up the new generation without a restart. The next window
starts where the last complete episode ended, as in a file build.

The end of the stream, or ``request_stop()`` (Ctrl-C in the CLI), closes the open window at the
newest frame. That window is perceived and landed like the others, and the build returns.
Everything is checkpointed under ``work/<video_id>/``, and ``live/landed`` records what the
memory holds.

Keyframe files: a fresh follow stages the first landing's files in ``work/<id>/staged/`` and its
write swaps them in whole (``memtools.store.writes.frame_swap``), so following a stream into the id of an
existing video *replaces* that video, frames included, at the first landing, and until then
(or when the follow fails first) the old version stays whole. Later landings only add files
under new names before their write and delete the thinned ones after it, so the version a
reader sees always has its files. A build killed at any moment therefore resumes at the first window not yet
landed, without asking the model again, and ends with the memory an uninterrupted build makes.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from memtools.builder.assemble import assemble
from memtools.builder.checkpoint import Checkpoints
from memtools.builder.config import BuildConfig
from memtools.builder.extract import Extracted, MacroSpan
from memtools.builder.follow_source import Grid, LiveSource, open_source
from memtools.builder.frame_tiers import TierPolicy
from memtools.builder.frames import grid_step
from memtools.builder.live_frames import LiveFrames
from memtools.builder.live_keyframes import LiveKeyframe, select_window, sweep, thin
from memtools.builder.pipeline import _brief, _VideoBuild
from memtools.builder.progress import Progress
from memtools.builder.report import VideoReport
from memtools.builder.segment import Window
from memtools.errors import BuildError
from memtools.perception import VLM
from memtools.schema import VideoGraph, macro_id, slugify_video_id
from memtools.store import Memory
from memtools.store.catalog.failures import clear_failure, record_failure
from memtools.store.writes.frame_swap import staged_folder
from memtools.video import VideoInfo

LANDED = "live/landed"
ASSUMED_LIVE_FPS = 25.0


class Landed(BaseModel):
    """What the memory holds of the stream: the checkpoint written after every landing."""

    windows: int = 0
    end: float = 0.0
    keyframes: list[LiveKeyframe] = Field(default_factory=list)


class Landing(BaseModel):
    """One landed window: its stream span, and seconds from the window closing to searchable."""

    window: int
    start: float
    end: float
    macros: int
    lag_sec: float | None = None
    keyframes: int = 0
    keyframe_bytes: int = 0


class LiveReport(VideoReport):
    """A live build's report: the file build's, plus each landing of this run."""

    landings: list[Landing] = Field(default_factory=list)
    stopped: str = ""  # "end of stream" | "stopped"

    def render(self) -> str:
        lags = [x.lag_sec for x in self.landings if x.lag_sec is not None]
        last = self.landings[-1] if self.landings else None
        lines = [f"Followed {self.source} into video {self.video_id!r} ({self.stopped or 'stopped'}).",
                 f"  {len(self.landings)} window(s) landed this run; the memory holds {self.duration:.1f} s of "
                 f"the stream, {self.counts.get('macro', 0)} macro event(s), {self.counts.get('keyframe', 0)} "
                 "keyframe(s)" + (f" ({last.keyframe_bytes / 1e6:.2f} MB)" if last else "") + ".",
                 f"  model calls: {self.usage.calls} new, {self.usage.cached_calls} reused from checkpoints."]
        if lags:
            lines.append(f"  lag from a window closing to searchable: mean {sum(lags) / len(lags):.1f} s, "
                         f"max {max(lags):.1f} s.")
        return "\n".join(lines)


def live_video_id(spec: str, video_id: str | None = None) -> str:
    """``--video-id``, else the file or folder name, else the last part of the URL."""
    if video_id:
        return video_id
    name = spec.rstrip("/").rsplit("/", 1)[-1].split("?", 1)[0] or spec
    return slugify_video_id(name)


class LiveBuild(_VideoBuild):
    """The state of following one stream into one video of a memory."""

    def __init__(self, memory: Memory, vlm: VLM, source: LiveSource, spec: str, video_id: str, config: BuildConfig,
                 report: LiveReport, *, tiers: TierPolicy, progress: Progress | None = None) -> None:
        info = VideoInfo(path=Path(spec), fps=ASSUMED_LIVE_FPS, frame_count=1, duration=config.window_sec,
                         width=1, height=1, content_hash=f"live:{spec}")
        super().__init__(memory, vlm, Path(spec), info, video_id, config, progress or Progress(), report)
        self.live_source, self.spec, self.tiers, self.live_report = source, spec, tiers, report
        self.grid = Grid(grid_step(config, ASSUMED_LIVE_FPS))
        self.transcript = []
        self.windows: list[Window] = []
        self.extracted: list[Extracted] = []
        self.landed = Landed()
        self.embed_cache: dict[str, object] = {}
        self._stop = asyncio.Event()

    def request_stop(self) -> None:
        """Close the open window at the newest frame, land it, and return (Ctrl-C)."""
        self._stop.set()

    # --- resume ---------------------------------------------------------------------------

    async def restore(self) -> None:
        """Load what earlier runs landed (the model is not asked again: all of it is checkpointed)."""
        for index in range(self.landed.windows):
            window = self.checkpoints.load(f"segment/window_{index:03d}")
            if window is None:
                raise BuildError(f"the checkpoints of live video {self.video_id} are incomplete (window {index} is "
                                 "missing); follow the stream again with --fresh")
            self.windows.append(Window.model_validate(window))
            self.extracted += await asyncio.gather(*(self._extract(s) for s in self._spans(self.windows[-1])))

    def _spans(self, window: Window) -> list[MacroSpan]:
        first = sum(len(w.episodes) for w in self.windows[:window.index])
        return [MacroSpan(id=macro_id(self.video_id, first + k), ordinal=first + k, t_start=e.t_start,
                          t_end=e.t_end, label=e.title) for k, e in enumerate(window.episodes)]

    # --- the loop -------------------------------------------------------------------------

    async def follow(self) -> None:
        cached = self.checkpoints.load(LANDED)
        if cached is not None:  # the memory holds this follow's frames: later landings add to them
            self.landed = Landed.model_validate(cached)
            self.frames_root = self.memory.path
        cfg = self.config
        stride = max(1, round(cfg.keyframes.sample_every_sec / self.grid.step))
        self.live = LiveFrames(self.live_source, self.grid, self.landed.end, max_side=cfg.frame_max_side,
                               keyframe_stride=stride, max_ahead_sec=3 * cfg.window_sec)
        self.frames = self.live  # type: ignore[assignment]  # the prompts' frames: the same at()/hold()/release()
        await self.restore()
        self.live.start()
        try:
            while True:
                window = await self._next_window(len(self.windows), self.landed.end)
                if window is None:
                    break
                await self._land(window)
                if window.at_end:
                    break
        finally:
            self.live.close()
        self.live_report.stopped = "stopped" if self._stop.is_set() else "end of stream"

    async def _next_window(self, index: int, start: float) -> Window | None:
        """The next window once it closes; at the end of the stream (or a stop) the window up to
        the newest frame; None when nothing is left to land."""
        frames, end = self.live, start + self.config.window_sec
        while frames.latest < end and not frames.ended and not self._stop.is_set():
            await frames.wait_change(0.5)
        if frames.latest >= end:
            return Window(index=index, start=start, end=end, at_end=False)
        last = frames.latest + self.grid.step / 2  # the newest frame's grid bin ends here
        if not math.isfinite(last) or last - start < max(1.0, self.grid.step):
            return None  # not even a second of new stream: nothing to land
        return Window(index=index, start=start, end=last, at_end=True)

    async def _land(self, planned: Window) -> None:
        closed_at = self.live.arrival_of(planned.end) if not planned.at_end else time.monotonic()
        window = await self._segment_window(planned)
        self.windows.append(window)
        spans = self._spans(window)
        extracted = await asyncio.gather(*(self._extract(s) for s in spans))
        self.extracted += extracted
        self.report.issues += [*window.issues, *(i for x in extracted for i in x.issues)]
        end = window.end if window.at_end else window.next_start
        new_frames = await asyncio.to_thread(self._window_keyframes, window.index, window.start, end)
        thinned = await asyncio.to_thread(thin, self.frames_root, [*self.landed.keyframes, *new_frames], end,
                                          self.tiers, self._macro_at)
        graph = await self._graph(end, thinned.kept)
        staged = {self.video_id: self.frames_root} if self.frames_root != self.memory.path else None
        await asyncio.to_thread(self.memory.write_videos, [graph], embed_cache=self.embed_cache, staged_frames=staged)
        self.frames_root = self.memory.path  # swapped in (the first landing of a fresh follow)
        sweep(self.memory.frames_dir(self.video_id), self.memory.path, {k.path for k in thinned.kept})
        self.landed = Landed(windows=window.index + 1, end=end, keyframes=thinned.kept)
        self.checkpoints.save(LANDED, self.landed.model_dump(mode="json"))
        self.live.drop_before(end)
        self._forget_old_tails()
        lag = round(time.monotonic() - closed_at, 3) if closed_at is not None else None
        self.live_report.landings.append(Landing(window=window.index, start=window.start, end=end, macros=len(spans),
                                            lag_sec=lag, keyframes=len(thinned.kept), keyframe_bytes=thinned.bytes))
        self.report.duration = end
        self.report.counts = {"super": len(graph.supers), "macro": len(graph.macros), "entity": len(graph.entities),
                              "event": len(graph.events), "ocr": len(graph.ocr), "keyframe": len(graph.keyframes),
                              "edges": len(graph.edges)}

    def _window_keyframes(self, index: int, start: float, end: float) -> list[LiveKeyframe]:
        name = f"live/keyframes_{index:03d}"
        cached = self.checkpoints.load(name)
        root = self.frames_root
        if cached is not None and all((root / k["path"]).is_file() for k in cached):
            return [LiveKeyframe.model_validate(k) for k in cached]
        first_n = max((k.n for k in self.landed.keyframes), default=-1) + 1
        found = select_window(self.live.candidates(start, end), self.config.keyframes,
                              staged_folder(self.memory.path, self.memory.frames_dir(self.video_id), root), root,
                              first_n)
        self.checkpoints.save(name, [k.model_dump(mode="json") for k in found])
        return found

    def _macro_at(self, t: float) -> str | None:
        return next((x.macro.id for x in self.extracted if x.macro.t_start <= t < x.macro.t_end), None)

    # --- aggregation and the graph -----------------------------------------------------------

    async def _graph(self, end: float, keyframes: Sequence[LiveKeyframe]) -> VideoGraph:
        """The whole video so far: fixed chunks of ``aggregate_chunk`` macro events (only the last
        one is asked again as it grows) and, past one chunk, the root over all super events."""
        briefs = [_brief(x) for x in self.extracted]
        size = self.config.aggregate_chunk
        parts = [range(k, min(len(briefs), k + size)) for k in range(0, len(briefs), size)]
        chunked = len(parts) > 1
        results = list(await asyncio.gather(*(
            self._aggregate_chunk(i, [briefs[j] for j in part], not chunked, step=f"live_chunk_{i:02d}_{len(part):03d}")
            for i, part in enumerate(parts))))
        root = await self._root(results, self.extracted, step=f"live_root_{len(briefs):05d}") if chunked else None
        height, width = self.live.height or 1, self.live.width or 1
        info = self.info.model_copy(update={"duration": max(end, 1e-3), "width": width, "height": height})
        graph = assemble(self.video_id, info, self.source, self.extracted, results, root,
                         [k.stored() for k in keyframes])
        graph.video = graph.video.model_copy(update={"source_path": self.spec})
        return graph

    def _forget_old_tails(self) -> None:
        """Drop checkpoints of tail chunks and roots that a longer tail replaced."""
        n = len(self.extracted)
        size = self.config.aggregate_chunk
        tail, keep_root = (n - 1) // size if n else 0, f"live_root_{n:05d}"
        current = f"live_chunk_{tail:02d}_{n - tail * size:03d}"
        folder = self.checkpoints.folder
        patterns = (f"aggregate/live_chunk_{tail:02d}_*.json", "aggregate/live_root_*.json",
                    f"calls/live_chunk_{tail:02d}_*.json", "calls/live_root_*.json")
        for path in [p for pattern in patterns for p in folder.glob(pattern)]:
            step = path.stem.split("-a", 1)[0]
            if step not in (current, keep_root):
                path.unlink(missing_ok=True)


async def afollow(memory: Memory, vlm: VLM, spec: str, *, video_id: str | None = None,
                  config: BuildConfig | None = None, tiers: TierPolicy | None = None, fresh: bool = False,
                  idle_timeout: float | None = 60.0, poll: float = 0.5, source: LiveSource | None = None,
                  stop: asyncio.Event | None = None) -> LiveReport:
    """Follow ``spec`` (a growing file, a chunk folder or a stream URL) into ``memory`` until the
    stream ends (``idle_timeout`` s without a new frame) or ``stop`` is set; returns the report."""
    config = config or BuildConfig.default()
    started = time.monotonic()
    source = source or open_source(spec, poll=poll, idle_timeout=idle_timeout)
    vid = live_video_id(spec, video_id)
    report = LiveReport(video_id=vid, source=spec)
    checkpoints = Checkpoints(memory.work_dir(vid))
    memory.refresh()
    state = {"live": spec, "config": config.fingerprint()}
    report.resumed = await asyncio.to_thread(checkpoints.prepare, state, fresh=fresh)
    if vid not in memory.manifest.videos or memory.manifest.videos[vid].status != "ready":
        memory.set_status(vid, "building")
    build = LiveBuild(memory, vlm, source, spec, vid, config, report, tiers=tiers or TierPolicy.vam())
    watcher = asyncio.create_task(_relay(stop, build)) if stop is not None else None
    clear_failure(checkpoints.folder)
    try:
        await build.follow()
    except BaseException as exc:
        if memory.manifest.videos.get(vid) is None or memory.manifest.videos[vid].status != "ready":
            record_failure(checkpoints.folder, exc, spec, follow=True)  # memtools info and the tools say why
            memory.set_status(vid, "failed")
        raise
    finally:
        if watcher is not None:
            watcher.cancel()
    if not build.landed.windows:
        memory.set_status(vid, "failed")
        raise BuildError(f"{spec} gave no frames to build from; check that it is a video (or a folder of video "
                         "chunks) OpenCV can read")
    if not report.landings:  # everything was landed by an earlier run
        entry = memory.manifest.videos[vid]
        report.duration, report.counts = build.landed.end, dict(entry.counts)
    report.seconds = round(time.monotonic() - started, 3)
    checkpoints.save("report", report.model_dump(mode="json"))
    return report


async def _relay(stop: asyncio.Event, build: LiveBuild) -> None:
    await stop.wait()
    build.request_stop()
