"""The fleet options of ``memtools build``: ``--ray [--address ADDR]``, ``--from-list FILE``, limits."""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

from memtools.errors import ConfigError


def add_fleet_args(p: argparse.ArgumentParser) -> None:
    fleet = p.add_argument_group("many videos (memtools.fleet)")
    fleet.add_argument("--from-list", type=Path, metavar="FILE",
                       help="build the video files listed in FILE (one path a line; # starts a comment)")
    fleet.add_argument("--ray", action="store_true",
                       help="run each video's perception as a Ray task (pip install 'memtools[ray]'); "
                            "this process writes the memory")
    fleet.add_argument("--address", metavar="ADDR",
                       help="Ray cluster to join (auto, HOST:PORT or ray://HOST:10001; default: start a local one)")
    fleet.add_argument("--endpoint-limit", type=int, default=16, metavar="N",
                       help="model requests in flight to the endpoint across all workers (default 16)")
    fleet.add_argument("--videos-in-flight", type=int, metavar="N",
                       help="videos built at once (default: Ray: cluster CPUs / --task-cpus; else 4)")
    fleet.add_argument("--task-cpus", type=float, default=1.0, metavar="N",
                       help="CPUs Ray reserves per video task (default 1; below 1 packs more videos per core)")
    fleet.add_argument("--max-retries", type=int, default=3, metavar="N",
                       help="Ray retries of a video whose worker or node died (default 3)")
    fleet.add_argument("--build-folder", type=Path, metavar="DIR",
                       help="where work/ and frames/ are made (default: the memory folder; shared storage on a "
                            "cluster)")


def wants_fleet(args: argparse.Namespace) -> bool:
    return bool(args.ray or args.from_list)


def read_list(path: Path) -> list[Path]:
    """Video paths from a list file; relative paths are relative to the file's folder."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the video list {path}: {exc}") from exc
    entries = [line.split("#", 1)[0].strip() for line in lines]
    return [p if p.is_absolute() else path.parent / p for p in (Path(e) for e in entries if e)]


def run_fleet(args: argparse.Namespace, settings, create_memory) -> int:
    from memtools.builder.settings import vlm_from_settings
    from memtools.fleet import FleetOptions, TextFleetProgress, build_fleet

    videos = list(args.videos) + (read_list(args.from_list) if args.from_list else [])
    if not videos:
        raise ConfigError(f"{args.from_list} lists no videos")
    if args.video_id:
        raise ConfigError("--video-id names one video; it cannot be used with --ray or --from-list")
    options = FleetOptions(ray=args.ray, address=args.address, endpoint_limit=args.endpoint_limit,
                           videos_in_flight=args.videos_in_flight, task_cpus=args.task_cpus,
                           max_retries=args.max_retries, build_folder=args.build_folder,
                           endpoint=settings.base_url or settings.vlm or settings.replay)
    vlm_from_settings(settings)  # a bad --vlm / --replay fails here, before any task starts
    sink = None if args.quiet else TextFleetProgress(sys.stderr)
    with create_memory(args.memory, settings.embedder, args.tables, args.graph_engine) as memory:
        summary = build_fleet(memory, functools.partial(vlm_from_settings, settings), videos,
                              config=settings.config, options=options, fresh=args.fresh, sink=sink)
        reports = [str(memory.work_dir(v.video_id) / "report.json") for v in summary.videos if not v.skipped]
        print(summary.render(str(args.memory), reports))
    return 1 if summary.failed else 0
