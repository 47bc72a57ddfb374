"""Build throughput: the video stage against real time, the whole pipeline against concurrency.

    python benchmarks/build_throughput.py [--seconds 60] [--latency 0.5] [--pipeline-minutes 10]

1. Video stage, on a generated 1280x720 30 fps video (mp4v, a new scene every 10 s, moving
   shapes): probe, then the build's single decoding pass with the default settings: keyframe
   rules and keyframe files, and every frame of the prompt grid JPEG-encoded (the most any
   build sends). Reported as seconds and "x real time" (video seconds per wall-clock second).
2. Whole pipeline, with a simulated model of fixed latency (``FunctionVLM`` + ``asyncio.sleep``)
   answering like ``ScriptedPerception``, on a long low-resolution video (default 30 minutes:
   four 10-minute segmentation windows, 90 macro events of 20 s, aggregated in three chunks
   plus the root: 98 calls), at concurrency 1, 4 and 8. Segmentation windows are sequential by
   design (each starts where the previous one's last complete episode ended) and so are the
   chunk -> root aggregation steps; the speed-up comes from extraction, which runs while the
   next window is segmented.

Targets: video stage >= 20x real time on 2 cores; concurrency 8 >= 6x faster than 1.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import shutil
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

from memtools.builder import BuildConfig, build_video
from memtools.builder.checkpoint import Checkpoints
from memtools.builder.frames import FrameGrid, FrameReader, grid_step
from memtools.builder.keyframes import KeyframeWriter
from memtools.builder.testing import ScriptedPerception
from memtools.embed import TestEmbedder
from memtools.perception import FunctionVLM
from memtools.store import Memory
from memtools.video import probe


def make_video(path: Path, seconds: float, width: int, height: int, fps: int, scene_sec: float = 10.0) -> Path:
    """Moving shapes over a background that changes every ``scene_sec`` seconds."""
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), fps, (width, height))
    rng = np.random.default_rng(7)
    palette = rng.integers(20, 235, size=(64, 3))
    for i in range(int(seconds * fps)):
        t = i / fps
        scene = int(t // scene_sec)
        frame = np.empty((height, width, 3), np.uint8)
        frame[:] = palette[scene % 64]
        for k in range(6):
            x = int((0.5 + 0.4 * math.sin(t * (0.3 + 0.1 * k) + k)) * width)
            y = int((0.5 + 0.4 * math.cos(t * (0.2 + 0.05 * k) + 2 * k)) * height)
            color = tuple(int(c) for c in palette[(scene * 7 + k + 1) % 64])
            cv2.circle(frame, (x, y), height // 12 + 4 * k, color, -1)
        cv2.putText(frame, f"SCENE {scene}", (width // 20, height // 8), cv2.FONT_HERSHEY_SIMPLEX, height / 400,
                    (255, 255, 255), max(1, height // 240))
        writer.write(frame)
    writer.release()
    return path


def video_stage(path: Path, work: Path) -> list[tuple[str, float, float]]:
    """Probe, then the build's single decoding pass with the default settings, keeping (and
    JPEG-encoding) every grid frame, as if every one of them went into a prompt."""
    config = BuildConfig.default()
    rows = []
    start = time.perf_counter()
    info = probe(path)
    rows.append(("probe", time.perf_counter() - start, info.duration))
    step = grid_step(config, info.fps)
    grid = FrameGrid(info.duration, step)
    writer = KeyframeWriter(config.keyframes, work / "frames", work, Checkpoints(work / "work"))
    reader = FrameReader(path, grid, max_side=config.frame_max_side, keyframes=writer,
                         keyframe_stride=round(config.keyframes.sample_every_sec / step), max_ahead=grid.count)

    async def one_pass() -> int:
        reader.hold("everything", 0.0)
        reader.start()
        frames = await reader.at(grid.times)
        await reader.finish()
        return len(frames)

    start = time.perf_counter()
    n = asyncio.run(one_pass())
    rows.append((f"decode pass: {n} prompt frames, {len(writer.stored)} keyframes", time.perf_counter() - start,
                 info.duration))
    return rows


def pipeline(path: Path, work: Path, latency: float, concurrency: int) -> tuple[float, int]:
    script = ScriptedPerception(episode_sec=20, per_super=4)

    async def answer(request):
        await asyncio.sleep(latency)
        return script(request)

    vlm = FunctionVLM(answer)
    folder = work / f"memory-c{concurrency}"
    shutil.rmtree(folder, ignore_errors=True)
    config = BuildConfig.default().model_copy(update={"concurrency": concurrency})
    with Memory.create(folder, TestEmbedder(64)) as memory:
        start = time.perf_counter()
        build_video(memory, vlm, path, config=config)
        return time.perf_counter() - start, len(vlm.requests)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="length of the 720p30 video")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 8], help="levels to compare")
    parser.add_argument("--latency", type=float, default=1.0, help="simulated model latency per call (s)")
    parser.add_argument("--pipeline-minutes", type=float, default=30.0, help="length of the pipeline video")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        print(f"cores: {os.cpu_count()}, OpenCV {cv2.__version__}")
        video = make_video(work / "hd.mp4", args.seconds, 1280, 720, 30)
        print(f"\nVideo stage, 1280x720 30 fps, {args.seconds:.0f} s (mp4v)")
        print(f"{'step':<48}{'seconds':>10}{'x real time':>14}")
        total = 0.0
        for name, seconds, duration in video_stage(video, work / "video-stage"):
            total += seconds
            print(f"{name:<48}{seconds:>10.2f}{duration / seconds:>14.1f}")
        print(f"{'video stage total':<48}{total:>10.2f}{args.seconds / total:>14.1f}")

        long_video = make_video(work / "long.mp4", args.pipeline_minutes * 60, 320, 180, 5, scene_sec=20)
        print(f"\nWhole pipeline, {args.pipeline_minutes:.0f} min 320x180 video, simulated model latency "
              f"{args.latency:.2f} s")
        print(f"{'concurrency':<14}{'model calls':>12}{'seconds':>10}{'speed-up':>10}")
        base = None
        for concurrency in args.concurrency:
            seconds, calls = pipeline(long_video, work, args.latency, concurrency)
            base = base or seconds
            print(f"{concurrency:<14}{calls:>12}{seconds:>10.2f}{base / seconds:>9.1f}x")


if __name__ == "__main__":
    main()
