"""One video's perception work as a unit that can run anywhere, and its single write.

``aperceive_video`` runs probe, keyframes and every model call of one video (checkpointed
under ``work/<video_id>/`` of the build folder, as ``build_video`` does) and returns a
``VideoBundle``: the assembled graph, the build report and the keyframe files. It never
touches the memory's graph, tables or manifest, so many of them can run at once, in one
process or as Ray tasks on other machines (``memtools.fleet``). ``write_bundle`` is the
other half: the one writer stages the keyframe files and writes the graph, whose write swaps
them into ``frames/<id>/`` whole (``memtools.store.writes.frame_swap``).

The build folder is where ``work/`` lives (keyframes are staged in ``work/<id>/staged/``): the
memory folder itself by default, or any folder every worker can reach (shared storage).
Keyframes travel in the bundle, so the memory gets them even when the build folder is elsewhere.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from memtools.builder.checkpoint import Checkpoints, atomic_write_bytes
from memtools.builder.config import BuildConfig
from memtools.builder.progress import Progress
from memtools.builder.report import VideoReport
from memtools.perception import VLM
from memtools.schema import VideoGraph
from memtools.store import Memory
from memtools.store.writes.frame_swap import staging_root
from memtools.video import VideoInfo, probe

if TYPE_CHECKING:
    from memtools.builder.bundle_vectors import BundleVectors


@dataclass(frozen=True)
class BuildFolder:
    """Where a video's checkpoints and keyframe files are made: ``work/<id>`` (its staged keyframes in
    ``work/<id>/staged/frames/<id>``, the final ``frames_dir`` relative to ``path``)."""

    path: Path

    def work_dir(self, video_id: str) -> Path:
        return self.path / "work" / video_id

    def frames_dir(self, video_id: str) -> Path:
        return self.path / "frames" / video_id


@dataclass
class VideoBundle:
    """What one video's perception produced; ``graph`` is None when the video was skipped
    (already built from the same file with the same settings)."""

    report: VideoReport
    state: dict
    graph: VideoGraph | None = None
    frames: dict[str, bytes] = field(default_factory=dict)  # keyframe path (relative to the memory) -> JPEG
    vectors: BundleVectors | None = None  # the texts' vectors, when a fleet worker embedded them


def build_state(content_hash: str, config: BuildConfig) -> dict:
    """What a video's checkpoints were made for: the file's content and the build settings."""
    return {"content_hash": content_hash, "config": config.fingerprint()}


def is_built(memory: Memory, video_id: str, state: dict) -> bool:
    """The memory holds this video, built from the same file with the same settings."""
    entry = memory.manifest.videos.get(video_id)
    return (entry is not None and entry.status == "ready"
            and Checkpoints(memory.work_dir(video_id)).load("done") == state)


def start_fresh(folder: BuildFolder, video_id: str) -> None:
    """Forget a video's earlier checkpoints (``--fresh``), once, before its first attempt:
    a retried attempt must find what the failed one saved."""
    shutil.rmtree(folder.work_dir(video_id), ignore_errors=True)


async def aperceive_video(folder: BuildFolder | str | os.PathLike, vlm: VLM, source: str | os.PathLike, video_id: str,
                          *, config: BuildConfig | None = None, info: VideoInfo | None = None,
                          progress: Progress | None = None) -> VideoBundle:
    """Probe, keyframes and model calls of one video, resuming from its checkpoints.
    Raises ``VideoError`` for an unreadable file and ``PerceptionError`` when the model fails for good."""
    import asyncio

    from memtools.builder.pipeline import _VideoBuild

    folder = folder if isinstance(folder, BuildFolder) else BuildFolder(Path(folder))
    config = config or BuildConfig.default()
    progress = progress or Progress()
    started = time.monotonic()
    path = Path(source).resolve()
    if info is None:
        info = await asyncio.to_thread(probe, path)
    report = VideoReport(video_id=video_id, source=str(path), duration=info.duration)
    state = build_state(info.content_hash, config)
    checkpoints = Checkpoints(folder.work_dir(video_id))
    progress.start_video(video_id, progress.video_index, report.usage)
    report.resumed = await asyncio.to_thread(checkpoints.prepare, state)
    build = _VideoBuild(folder, vlm, path, info, video_id, config, progress, report)  # type: ignore[arg-type]
    graph = await build.perceive()
    frames = {k.path: (build.frames_root / k.path).read_bytes() for k in graph.keyframes if k.path}
    report.seconds = round(time.monotonic() - started, 3)
    return VideoBundle(report, state, graph, frames)


def write_bundle(memory: Memory, bundle: VideoBundle) -> None:
    """The single write of a finished video: keyframe files staged (in the memory's own
    ``work/<id>/staged/``), then graph + tables + the frames swapped in, in one atomic step, then
    the ``done`` checkpoint that lets a later run skip it."""
    if bundle.graph is None:
        return
    vid = bundle.report.video_id
    cache = None
    if bundle.vectors is not None:  # embedded in the worker: checked first, then the writer embeds nothing
        from memtools.builder.bundle_vectors import writer_cache

        cache = writer_cache(memory, bundle.vectors, vid)
    staged = {vid: stage_frames(memory, bundle)}
    memory.write_videos([bundle.graph], batch_size=1, embed_cache=cache, staged_frames=staged)
    checkpoints = Checkpoints(memory.work_dir(vid))
    checkpoints.save("report", bundle.report.model_dump(mode="json"))
    checkpoints.save("done", bundle.state)


def stage_frames(memory: Memory, bundle: VideoBundle) -> Path:
    """Put a bundle's keyframe files in the memory's ``work/<id>/staged/`` (the write swaps them in
    whole); returns that staging root."""
    root = staging_root(memory.work_dir(bundle.report.video_id))
    for rel, data in bundle.frames.items():
        target = root / rel  # already there when the build folder is the memory
        if not (target.is_file() and target.read_bytes() == data):
            atomic_write_bytes(target, data)
    return root
