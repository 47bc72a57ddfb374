"""Wall-clock time: when a video was recorded, and the absolute time of any moment in it.

Every node keeps its *media time* (seconds from the start of its video). A video may also have a
*recording start* (``Video.recorded_at``: ISO 8601 with a UTC offset, e.g.
``2026-11-20T14:03:00+01:00``); a moment's absolute time is that start plus its media time
(``absolute``). Videos without one (memories made before, or a file that says nothing) keep media
time only, and tools say "no recording time".

Where a recording start comes from, first found wins (``RecordingRule.resolve``):

1. ``--recorded-at`` on ``build`` / ``import-captions`` (one video only);
2. the input itself: a dense-caption JSON entry's ``"recorded_at"``;
3. a sidecar file beside the video, ``<video file>.recorded_at`` (e.g. ``clip.mp4.recorded_at``),
   holding one ISO 8601 time;
4. ``--recorded-at-pattern`` (a ``strptime`` pattern such as ``%Y%m%d_%H%M%S``) found in the video
   file's name (or, for captions without a video file, in the video id);
5. the container's ``creation_time`` tag (what cameras and phones write; read with PyAV).

A time without a zone (a file name, a sidecar without offset) is taken in ``--timezone`` (an IANA
name such as ``Europe/Paris`` or an offset ``+01:00``; default: this machine's zone); a UTC time
from container metadata is shown in that zone too, so a video's *day* is the local calendar day.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

SIDECAR_SUFFIX = ".recorded_at"
NO_TIME = "no recording time"
_FIELDS = {"Y": r"\d{4}", "m": r"\d{2}", "d": r"\d{2}", "H": r"\d{2}", "M": r"\d{2}", "S": r"\d{2}",
           "y": r"\d{2}", "j": r"\d{3}", "f": r"\d{1,6}", "z": r"[+-]\d{2}:?\d{2}|Z", "b": r"[A-Za-z]{3}",
           "%": "%"}


class WallClockError(ValueError):
    """A recording time, zone or pattern that cannot be read (its text says what to give instead)."""


def parse_zone(text: str | None) -> tzinfo:
    """``Europe/Paris``, ``UTC``, ``+01:00`` or None (this machine's zone)."""
    if not text:
        local = datetime.now().astimezone().tzinfo
        return local if local is not None else timezone.utc
    m = re.fullmatch(r"([+-])(\d{1,2}):?(\d{2})", text.strip())
    if m:
        delta = timedelta(hours=int(m[2]), minutes=int(m[3]))
        return timezone(delta if m[1] == "+" else -delta)
    if text.strip().upper() in ("UTC", "Z"):
        return timezone.utc
    try:
        return ZoneInfo(text.strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise WallClockError(f"unknown time zone {text!r}: give an IANA name such as 'Europe/Paris' or an "
                             "offset such as '+01:00'") from None


def parse_time(text: str, zone: tzinfo | None = None) -> datetime:
    """An ISO 8601 date or date-time (``2026-11-20``, ``2026-11-20 14:00``, ``...T14:00:00+01:00``, ``Z``)
    as an aware datetime; one without an offset is taken in ``zone`` (default: this machine's)."""
    raw = text.strip()
    try:
        value = datetime.fromisoformat(raw[:-1] + "+00:00" if raw.endswith(("Z", "z")) else raw)
    except ValueError:
        raise WallClockError(f"{text!r} is not a date or time: write ISO 8601, e.g. '2026-11-20T14:00+01:00' "
                             "or '2026-11-20 14:00'") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=zone or parse_zone(None))
    return value


def iso(value: datetime) -> str:
    """ISO 8601 with the offset, to the second (``2026-11-20T14:03:00+01:00``)."""
    return value.isoformat(timespec="seconds")


def start_of(recorded_at: str | None) -> datetime | None:
    """A stored recording start (``Video.recorded_at``) as an aware datetime (None: the video has none)."""
    if not recorded_at:
        return None
    try:
        value = datetime.fromisoformat(recorded_at)
    except ValueError:
        return None
    return value if value.tzinfo is not None else None


def absolute(recorded_at: str | datetime | None, media_sec: float) -> datetime | None:
    """The wall-clock time of a moment ``media_sec`` seconds into a video (None: no recording start)."""
    start = recorded_at if isinstance(recorded_at, datetime) else start_of(recorded_at)
    return None if start is None else start + timedelta(seconds=float(media_sec))


def day_of(start: datetime) -> str:
    """The node id of the day a video starting at ``start`` belongs to (its own offset's calendar day)."""
    return f"day/{start.date().isoformat()}"


def week_of(start: datetime) -> str:
    year, week, _ = start.date().isocalendar()
    return f"week/{year}-W{week:02d}"


def pattern_regex(pattern: str) -> re.Pattern[str]:
    """A ``strptime`` pattern as a regex that finds it inside a longer name."""
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] == "%" and i + 1 < len(pattern):
            field = pattern[i + 1]
            if field not in _FIELDS:
                raise WallClockError(f"--recorded-at-pattern {pattern!r}: %{field} is not supported; use "
                                     "%Y %m %d %H %M %S %y %j %f %z %b")
            out.append(f"(?:{_FIELDS[field]})")
            i += 2
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


def from_name(name: str, pattern: str, zone: tzinfo) -> datetime | None:
    """The time ``pattern`` finds in ``name`` (None when it is not there or is no real date)."""
    for found in pattern_regex(pattern).finditer(name):
        try:
            value = datetime.strptime(found.group(0), pattern)
        except ValueError:
            continue
        return value if value.tzinfo is not None else value.replace(tzinfo=zone)
    return None


def from_sidecar(video: Path, zone: tzinfo) -> datetime | None:
    side = video.with_name(video.name + SIDECAR_SUFFIX)
    if not side.is_file():
        return None
    text = side.read_text(encoding="utf-8", errors="replace").strip()
    try:
        return parse_time(text, zone)
    except WallClockError as exc:
        raise WallClockError(f"{side}: {exc}") from None


def from_container(video: Path) -> datetime | None:
    """The ``creation_time`` tag of a video file (container or first video stream), or None."""
    try:
        import av
    except ImportError:  # pragma: no cover - PyAV is a dependency of builds
        return None
    try:
        with av.open(str(video)) as container:
            tags = [dict(container.metadata or {})]
            tags += [dict(s.metadata or {}) for s in container.streams.video[:1]]
    except Exception:  # noqa: BLE001 - an unreadable file just has no recording time here
        return None
    for found in tags:
        text = found.get("creation_time") or found.get("com.apple.quicktime.creationdate")
        if text:
            try:
                value = parse_time(str(text), timezone.utc)
            except WallClockError:
                continue
            if value.year > 1971:  # 1970-01-01 / 1904-01-01: a camera that never set its clock
                return value
    return None


@dataclass(frozen=True)
class RecordingRule:
    """How a build or import finds each video's recording start (the module docstring's order)."""

    given: datetime | None = None       # --recorded-at (one video)
    pattern: str | None = None          # --recorded-at-pattern
    zone: tzinfo | None = None          # --timezone (None: this machine's)

    @classmethod
    def from_args(cls, recorded_at: str | None, pattern: str | None, zone: str | None) -> RecordingRule:
        tz = parse_zone(zone) if zone else None
        if pattern:
            pattern_regex(pattern)  # a bad pattern is refused before anything is written
        return cls(given=parse_time(recorded_at, tz) if recorded_at else None, pattern=pattern or None, zone=tz)

    def resolve(self, source: str | Path | None, video_id: str, stated: str | None = None) -> str | None:
        """The recording start of one video as stored (ISO 8601 with offset), or None."""
        zone = self.zone or parse_zone(None)
        found = self.given or start_of(stated)
        path = Path(source) if source else None
        if found is None and path is not None and path.is_file():
            found = from_sidecar(path, zone)
        if found is None and self.pattern:
            found = from_name(path.name if path is not None else video_id, self.pattern, zone)
            if found is None and path is not None:
                found = from_name(video_id, self.pattern, zone)
        if found is None and path is not None and path.is_file():
            found = from_container(path)
            if found is not None:
                found = found.astimezone(zone)
        return iso(found) if found is not None else None
