"""``--recorded-at``, ``--recorded-at-pattern`` and ``--timezone``: when the videos of a build or
import were recorded (``memtools.wallclock`` says where else a recording start comes from)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtools.errors import ConfigError

if TYPE_CHECKING:
    from memtools.store import Memory
    from memtools.wallclock import RecordingRule


def add_time_args(p: argparse.ArgumentParser, *, flag: bool = True) -> None:
    """``flag``: also ``--recorded-at`` (a build or import; ``memtools repair`` reads source files only)."""
    group = p.add_argument_group("recording time (wall clock)")
    if flag:
        group.add_argument("--recorded-at", metavar="TIME",
                           help="when the video started, ISO 8601 (e.g. 2026-11-20T14:03:00+01:00; one video only). "
                                "Else from a sidecar VIDEO.recorded_at, --recorded-at-pattern, or the file's "
                                "creation_time metadata")
    group.add_argument("--recorded-at-pattern", metavar="PATTERN",
                       help="strptime pattern found in each file name (or video id), e.g. '%%Y%%m%%d_%%H%%M%%S' "
                            "for VID_20261120_140300.mp4")
    group.add_argument("--timezone", metavar="ZONE", type=zone_arg,
                       help="zone of times that name none (file names), and the zone days are counted in: an "
                            "IANA name (Europe/Paris) or an offset (+01:00); default: this machine's")


def zone_arg(text: str) -> str:
    """``--timezone`` checked while the flags are read (an argparse error naming the flag, exit 2, never a
    traceback later); kept as written, since jobs and repairs pass it on as text."""
    from memtools.wallclock import WallClockError, parse_zone

    try:
        parse_zone(text)
    except WallClockError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def recording_rule(args: argparse.Namespace, videos: int) -> RecordingRule:
    """The rule the command's flags give (without flags: sidecars and container metadata, in this
    machine's zone)."""
    from memtools.wallclock import RecordingRule, WallClockError

    given = getattr(args, "recorded_at", None)
    if given and videos > 1:
        raise ConfigError("--recorded-at names when one video started; for several, give each a sidecar "
                          "VIDEO.recorded_at or a --recorded-at-pattern that reads their file names")
    try:
        return RecordingRule.from_args(given, getattr(args, "recorded_at_pattern", None),
                                       getattr(args, "timezone", None))
    except WallClockError as exc:
        raise ConfigError(str(exc)) from None


def check_starts(rule: RecordingRule, videos: Sequence[Path], durations: Sequence[float],
                 video_ids: Sequence[str]) -> None:
    """Find each video's recording start now, with its probed duration: a bad sidecar or a start the store
    cannot hold is refused before any model call (the write checks again, ``stamp_times``)."""
    for path, duration, video_id in zip(videos, durations, video_ids, strict=True):
        rule.resolve(path, video_id, duration=duration)


def timed_memory(create: Callable[..., Memory], rule: RecordingRule) -> Callable[..., Memory]:
    """``create_memory`` for a fleet or live build: the memory it opens finds recording starts by ``rule``."""

    def creating(*args: Any, **kwargs: Any) -> Memory:
        memory = create(*args, **kwargs)
        memory.recording_rule = rule
        return memory

    return creating
