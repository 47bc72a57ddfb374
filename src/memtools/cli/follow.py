"""``memtools build --follow SOURCE``: grow a memory while the video is still being recorded."""

from __future__ import annotations

import argparse
import signal
import sys

from memtools.errors import BuildError, ConfigError, PerceptionError

DEFAULT_IDLE_TIMEOUT = 60.0
"""Seconds without a new frame (or chunk) that end a followed stream. A recorder flushes every few
seconds and a segmenter writes a chunk every 2-10 s, so a minute rides out a network hiccup or
a slow flush. It still ends a finished recording within a minute. Chunks longer than that need
a larger value, and 0 follows until Ctrl-C."""


def add_follow_args(p: argparse.ArgumentParser) -> None:
    live = p.add_argument_group("live streams (--follow)")
    live.add_argument("--follow", metavar="SOURCE",
                      help="grow the memory while SOURCE is recorded: a growing video file, a folder that receives "
                           "chunk files (read in name order) or a stream URL OpenCV opens (rtsp://, http://...)")
    live.add_argument("--idle-timeout", type=float, default=DEFAULT_IDLE_TIMEOUT, metavar="SEC",
                      help=f"end of stream after this long without a new frame (default {DEFAULT_IDLE_TIMEOUT:g}; "
                           "0: follow until Ctrl-C)")
    live.add_argument("--keyframe-cap-mb", type=float, metavar="MB",
                      help="keep the stream's keyframe files under this size: older keyframes are thinned and "
                           "recompressed harder first (VAM frame-age tiers; default: the tiers alone, no cap)")


def run_follow(args: argparse.Namespace, settings, vlm, create_memory, use_image_embedder) -> int:
    from memtools.builder.budget import BudgetExceeded, spending_limit
    from memtools.builder.frame_tiers import TierPolicy
    from memtools.builder.live import afollow
    from memtools.cli.costs import budget_from_args

    if args.videos:
        raise BuildError("--follow builds one stream; name video files in a separate `memtools build` command")
    if args.speech not in ("auto", "none") or args.subtitles:
        raise BuildError("live builds (--follow) do not recognise speech yet; drop --speech/--subtitles, or build "
                         "the finished recording as a file")
    if args.idle_timeout is not None and args.idle_timeout < 0:
        raise ConfigError(f"--idle-timeout must be 0 (follow until Ctrl-C) or more seconds, not {args.idle_timeout}")
    if args.keyframe_cap_mb is not None and args.keyframe_cap_mb <= 0:
        raise ConfigError(f"--keyframe-cap-mb must be a positive number of MB, not {args.keyframe_cap_mb}")
    tiers = TierPolicy.vam(args.keyframe_cap_mb)
    memory = create_memory(args.memory, settings.embedder, args.tables, args.graph_engine)
    with use_image_embedder(memory, args) as memory:
        budget = budget_from_args(args, memory.path, getattr(vlm, "model_name", ""))
        again = ("Landed windows are in the memory and finished steps are checkpointed: run the same command "
                 "again to continue.")
        try:
            with spending_limit(budget):
                import asyncio  # here: every command's parser imports this module, asyncio (and ssl) cost ~40 ms

                report = asyncio.run(_follow(memory, vlm, args, settings, tiers, afollow))
        except (PerceptionError, BudgetExceeded) as exc:
            raise type(exc)(f"{exc}\n{again}") from exc
        print(report.render())
        if budget is not None:
            print(f"Model calls of this run: {budget.summary()}")
    return 0


async def _follow(memory, vlm, args, settings, tiers, afollow):
    """Follow until the stream ends; the first Ctrl-C (or SIGTERM) lands what was seen, a second aborts."""
    import asyncio

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal() -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        print("memtools build: stopping: landing what was seen (Ctrl-C again to abort)", file=sys.stderr)
        stop.set()

    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, on_signal)
        except NotImplementedError:  # Windows' event loops: a plain handler that hands over to the loop
            previous[sig] = signal.signal(sig, lambda *_: loop.call_soon_threadsafe(on_signal))
    try:
        return await afollow(memory, vlm, args.follow, video_id=args.video_id, config=settings.config, tiers=tiers,
                             fresh=args.fresh, idle_timeout=args.idle_timeout or None, stop=stop)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            if sig in previous:
                signal.signal(sig, previous[sig])
            else:
                loop.remove_signal_handler(sig)
