"""Live builds: how soon a closed window is searchable, and keyframe storage over a long stream.

1. Live lag. ``afollow`` follows a folder that a feeder thread fills with 10-second chunks at
   ``--speed`` times real time, while a separate read-only ``Memory`` polls ``search_by_time``
   every 50 ms. For each window the table shows when its end was recorded on the stream (the
   feeder's clock) and when its first episode became searchable. The lag includes the folder's
   one-chunk hold-back (the newest chunk may still be being written), the model time (the scripted
   model answers after ``--model-sec`` per call) and the memory write. Target: lag <= one
   segmentation window + model time.
2. Keyframe storage. ``frame_tiers.simulate`` runs a stream for ``--hours`` with a keyframe every
   2 s (60 KB each, a 768 px JPEG at quality 90), thinning at every landing (10 min), under
   several caps. No video is decoded. It reports the peak and final size against the cap, the
   frames kept and how often the gaps had to double.

Usage: python benchmarks/live.py [--speed 6] [--model-sec 0.5] [--windows 5] [--hours 24]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
from _common import load_average, markdown_table, offline  # noqa: E402


def live_lag(speed: float, model_sec: float, windows: int, window_sec: float, chunk_sec: int) -> None:
    import live_support
    from live_support import write_chunk  # tests/: synthetic chunks renamed into place
    from memtools.builder.config import BuildConfig
    from memtools.builder.live import afollow
    from memtools.builder.testing import ScriptedPerception
    from memtools.embed import TestEmbedder
    from memtools.perception import FunctionVLM
    from memtools.store import Memory
    from memtools.tools import MemoryTools

    live_support.CHUNK_SEC = chunk_sec
    script = ScriptedPerception(episode_sec=window_sec / 3)
    calls = {"n": 0, "seconds": 0.0}

    async def answer(request):
        calls["n"] += 1
        calls["seconds"] += model_sec
        await asyncio.sleep(model_sec)
        return script(request)

    config = BuildConfig.short().model_copy(update={"window_sec": window_sec, "frames_per_window": 12,
                                                    "frames_per_macro": 4, "min_episode_sec": 5})
    chunks_needed = int(windows * window_sec / chunk_sec) + 2
    with tempfile.TemporaryDirectory() as tmp:
        folder, path = Path(tmp) / "chunks", Path(tmp) / "memory"
        folder.mkdir()
        Memory.create(path, TestEmbedder(64)).close()
        recorded: dict[int, float] = {}  # chunk -> wall time its last frame was "recorded"
        started = time.monotonic()

        def feed() -> None:
            for k in range(chunks_needed):
                due = started + (k + 1) * chunk_sec / speed  # a chunk is written once it is recorded
                time.sleep(max(0.0, due - time.monotonic()))
                write_chunk(folder, k)
                recorded[k] = due

        seen: dict[float, float] = {}  # a macro event's start -> when it was first searchable
        done = threading.Event()

        def watch() -> None:
            with Memory.open(path, TestEmbedder(64)) as reader:
                tools = MemoryTools(reader)
                while not done.is_set():
                    try:
                        matches = tools.search_by_time(0, 10**6, "chunks").matches
                    except Exception:  # noqa: BLE001 - not written yet, or being updated
                        matches = []
                    for m in matches:
                        seen.setdefault(round(m.macro.t_start, 1), time.monotonic())
                    time.sleep(0.05)

        feeder, watcher = threading.Thread(target=feed), threading.Thread(target=watch)
        feeder.start()
        watcher.start()
        with Memory.open(path, TestEmbedder(64)) as memory:
            report = asyncio.run(afollow(memory, FunctionVLM(answer), str(folder), config=config,
                                         idle_timeout=3 * chunk_sec / speed + 2, poll=0.05))
        feeder.join()
        time.sleep(0.3)
        done.set()
        watcher.join()

    rows = []
    for landing in report.landings[:windows]:
        closes = started + (landing.start + window_sec) / speed  # the window's end, recorded on the stream
        if round(landing.start, 1) not in seen:
            continue
        lag = seen[round(landing.start, 1)] - closes
        rows.append([landing.window, f"{landing.start:.0f}-{landing.end:.0f}", landing.macros,
                     f"{lag:.2f}", f"{lag * speed:.1f}", f"{landing.lag_sec:.2f}" if landing.lag_sec else "-"])
    print(f"## Live lag ({speed:g}x real time, tau = {window_sec:g} s = {window_sec / speed:.1f} s wall, "
          f"chunks of {chunk_sec} s, {model_sec:g} s per model call)\n")
    print(markdown_table(["window", "stream s", "macros", "lag (wall s)", "lag (stream s)",
                          "close -> landed, in-process (s)"], rows))
    per_window = calls["seconds"] / max(1, len(report.landings))
    print(f"\nModel time per window (serial calls would take): {per_window:.1f} s over "
          f"{calls['n'] / max(1, len(report.landings)):.1f} calls; a window lasts {window_sec / speed:.1f} s wall.\n")


def storage(hours: float, caps: list[float | None]) -> None:
    from memtools.builder.frame_tiers import TierPolicy, simulate

    rows = []
    for cap in caps:
        began = time.perf_counter()
        history = simulate(hours, TierPolicy.vam(cap), every_sec=2.0, frame_bytes=60_000)
        seconds = time.perf_counter() - began
        last = history[-1]
        rows.append(["none" if cap is None else f"{cap:g}", f"{max(h.bytes for h in history) / 1e6:.1f}",
                     f"{last.bytes / 1e6:.1f}", last.frames, max(h.doublings for h in history),
                     "yes" if cap is None or all(h.bytes <= cap * 1e6 for h in history) else "NO",
                     f"{seconds / len(history) * 1000:.1f}"])
    print(f"## Keyframe storage over a simulated {hours:g} h stream (a keyframe every 2 s, 60 KB; thinned "
          "every 10 min)\n")
    print(markdown_table(["cap MB", "peak MB", "final MB", "frames kept", "gap doublings", "under cap always",
                          "plan ms / landing"], rows))
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--speed", type=float, default=6.0, help="stream seconds per wall second")
    parser.add_argument("--model-sec", type=float, default=0.5, help="seconds the scripted model takes per call")
    parser.add_argument("--windows", type=int, default=5)
    parser.add_argument("--window-sec", type=float, default=60.0)
    parser.add_argument("--chunk-sec", type=int, default=10)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--month", action="store_true", help="also simulate 30 days under a 500 MB cap")
    args = parser.parse_args()
    offline()
    print(f"load average: {load_average()}\n")
    live_lag(args.speed, args.model_sec, args.windows, args.window_sec, args.chunk_sec)
    storage(args.hours, [None, 500, 200, 50])
    if args.month:
        storage(24 * 30, [500])


if __name__ == "__main__":
    main()
