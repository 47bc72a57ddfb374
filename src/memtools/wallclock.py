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

Every start, whichever way it came, passes ``check_span`` before a write begins: a time the store
cannot hold (past ``LATEST`` or before ``EARLIEST``, once in UTC and with the video's duration
added) is refused by name, never left to overflow half-way through a write.
"""

from __future__ import annotations

import logging
import math
import os
import re
import stat
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from memtools.errors import MemtoolsError

SIDECAR_SUFFIX = ".recorded_at"
SIDECAR_MAX_BYTES = 200
"""A sidecar holds one time; a larger file is refused unread (it is not a sidecar, and its content
is never printed)."""
EXCERPT = 60  # characters of a file's content an error message may show
EARLIEST = datetime(1, 1, 2, tzinfo=timezone.utc)
LATEST = datetime(9998, 12, 31, 23, 59, 59, tzinfo=timezone.utc)
"""The times a memory holds: every instant of a recording (its start and its end, in UTC) within
0001-01-02 .. 9998-12-31. Python's ``datetime`` stops at the years 1 and 9999; the store derives from
each start its UTC form (up to a day away, offsets run to +-23:59), its end (plus the duration) and
whole-day windows (plus a day), and ``list_videos``' open windows run from 0001-01-02 to 9999-12-30.
This range leaves a day's margin below and a year above, so none of those overflows and an open
window covers every stored video. It is no plausibility range (1900..2200 would refuse digitised
footage of the 1890s): only what can be computed is refused."""
MAX_DURATION = 10 * 365.25 * 86400.0
"""Seconds: a longer (or non-finite) duration cannot be laid on the clock (no recording runs ten years)."""
NO_TIME = "no recording time"
_FIELDS = {"Y": r"\d{4}", "m": r"\d{2}", "d": r"\d{2}", "H": r"\d{2}", "M": r"\d{2}", "S": r"\d{2}",
           "y": r"\d{2}", "j": r"\d{3}", "f": r"\d{1,6}", "z": r"[+-]\d{2}:?\d{2}|Z", "b": r"[A-Za-z]{3}",
           "%": "%"}


class WallClockError(MemtoolsError, ValueError):
    """A recording time, zone or pattern that cannot be read or held (its text says what to give
    instead). A ``MemtoolsError``, so the CLI and the job runner print it as a message, no traceback."""


def excerpt(text: str) -> str:
    """At most ``EXCERPT`` characters of a file's content, as ``repr``: an error names what it read
    without dumping a file the user pointed at."""
    shown = repr(text)
    return shown if len(shown) <= EXCERPT else shown[:EXCERPT - 3] + "..."


def check_span(start: datetime, duration: float, what: str) -> datetime:
    """``start`` again when the recording (``duration`` seconds from it) lies within ``EARLIEST`` ..
    ``LATEST`` in UTC; else a ``WallClockError`` naming ``what`` (e.g. "--recorded-at '...'").
    Computed without date arithmetic that could overflow: this is the check that runs before a write."""
    if not (isinstance(duration, int | float) and math.isfinite(duration) and 0 <= duration <= MAX_DURATION):
        raise WallClockError(f"{what}: the video's duration {duration!r} s is not a length a recording time can "
                             "be laid on (a finite number of seconds, at most ten years): give the video a real "
                             "duration, or no recording time")
    try:
        in_utc = start.astimezone(timezone.utc)
    except (OverflowError, ValueError):  # its offset moves it past year 1 or 9999
        in_utc = LATEST + timedelta(seconds=1) if start.year > 5000 else EARLIEST - timedelta(seconds=1)
    if in_utc < EARLIEST:
        raise WallClockError(f"{what} is before {_z(EARLIEST)}, the earliest time a memory can hold (in UTC): "
                             "give a later time")
    if in_utc > LATEST:
        raise WallClockError(f"{what} is past {_z(LATEST)}, the latest time a memory can hold (in UTC): give an "
                             "earlier time")
    if (LATEST - in_utc).total_seconds() < duration:
        raise WallClockError(f"{what} plus the video's {duration:g} s runs past {_z(LATEST)}, the latest time a "
                             "memory can hold (in UTC): give an earlier time")
    return start


def _z(value: datetime) -> str:
    """A UTC instant as ``0001-01-02T00:00:00Z`` (``strftime`` drops the year's zeros on some systems)."""
    return value.replace(tzinfo=None).isoformat(timespec="seconds") + "Z"


def parse_zone(text: str | None) -> tzinfo:
    """``Europe/Paris``, ``UTC``, ``+01:00`` or None (this machine's zone)."""
    if not text:
        local = datetime.now().astimezone().tzinfo
        return local if local is not None else timezone.utc
    m = re.fullmatch(r"([+-])(\d{1,2}):?(\d{2})", text.strip())
    if m:
        if int(m[2]) > 23 or int(m[3]) > 59:
            raise WallClockError(f"{excerpt(text)} is not a UTC offset: an offset runs from -23:59 to +23:59 (real "
                                 "zones from -12:00 to +14:00); give e.g. '+01:00' or an IANA name such as "
                                 "'Europe/Paris'")
        delta = timedelta(hours=int(m[2]), minutes=int(m[3]))
        return timezone(delta if m[1] == "+" else -delta)
    if text.strip().upper() in ("UTC", "Z"):
        return timezone.utc
    try:
        return ZoneInfo(text.strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise WallClockError(f"unknown time zone {excerpt(text)}: give an IANA name such as 'Europe/Paris' or an "
                             "offset such as '+01:00'") from None


def parse_time(text: str, zone: tzinfo | None = None) -> datetime:
    """An ISO 8601 date or date-time (``2026-11-20``, ``2026-11-20 14:00``, ``...T14:00:00+01:00``, ``Z``)
    as an aware datetime; one without an offset is taken in ``zone`` (default: this machine's)."""
    raw = text.strip()
    try:
        value = datetime.fromisoformat(raw[:-1] + "+00:00" if raw.endswith(("Z", "z")) else raw)
    except ValueError:
        raise WallClockError(f"{excerpt(text)} is not a date or time: write ISO 8601, e.g. '2026-11-20T14:00+01:00' "
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


def sidecar_of(video: Path) -> Path:
    return video.with_name(video.name + SIDECAR_SUFFIX)


def from_sidecar(video: Path, zone: tzinfo) -> datetime | None:
    """The time in the video's sidecar (None: it has none). A sidecar that is there but unusable is
    refused by name: silently falling back to the file name or metadata would hide the mistake.

    A sidecar that is a link is followed (git-annex and dataset link farms keep files as links), but
    an error never shows a linked file's content, and an unlinked one's only as a short excerpt: the
    message may reach a caller (an MCP job) who should not read the files the link points at."""
    side = sidecar_of(video)
    if not os.path.lexists(side):
        return None
    linked = side.is_symlink()
    text = _read_sidecar(side, linked)
    try:
        return parse_time(text, zone)
    except WallClockError:
        held = "it is a link, its content is not shown," if linked else f"it holds {excerpt(text)},"
        raise WallClockError(f"sidecar {side}: {held} which is not a date and time; write one ISO 8601 time in "
                             "it, e.g. '2026-11-20T14:03:00+01:00', or remove it") from None


def _read_sidecar(side: Path, linked: bool) -> str:
    """A sidecar's text, read with a size cap, from a regular file only (never a pipe or device)."""
    fix = "write one ISO 8601 time in it (e.g. '2026-11-20T14:03:00+01:00') or remove it"
    link = " (a link)" if linked else ""
    try:
        fd = os.open(side, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise WallClockError(f"sidecar {side}{link} cannot be read ({exc.strerror}): {fix}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise WallClockError(f"sidecar {side}{link} is not a regular file: {fix}")
        data = b""
        while len(data) <= SIDECAR_MAX_BYTES and (chunk := os.read(fd, SIDECAR_MAX_BYTES + 1 - len(data))):
            data += chunk
    finally:
        os.close(fd)
    if len(data) > SIDECAR_MAX_BYTES:
        raise WallClockError(f"sidecar {side}{link} is larger than {SIDECAR_MAX_BYTES} bytes, so it was not read "
                             f"(a sidecar holds one time): {fix}")
    try:
        return data.decode("utf-8-sig").strip()
    except UnicodeDecodeError:
        raise WallClockError(f"sidecar {side}{link} is not UTF-8 text: {fix}") from None


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
        """The flags' rule; a bad zone, pattern or time (one the store cannot hold even for a video of no
        length) is refused here, before anything is written."""
        tz = parse_zone(zone) if zone else None
        if pattern:
            pattern_regex(pattern)
        given = parse_time(recorded_at, tz) if recorded_at else None
        if given is not None:
            check_span(given, 0.0, f"--recorded-at {recorded_at!r}")
        return cls(given=given, pattern=pattern or None, zone=tz)

    def resolve(self, source: str | Path | None, video_id: str, stated: str | None = None,
                duration: float = 0.0) -> str | None:
        """The recording start of one video as stored (ISO 8601 with offset), or None; a start that
        the store cannot hold with the video's ``duration`` is refused by where it came from."""
        found = self._find(source, video_id, stated, duration)
        return iso(found) if found is not None else None

    def _find(self, source: str | Path | None, video_id: str, stated: str | None, duration: float) -> datetime | None:
        zone = self.zone or parse_zone(None)
        if self.given is not None:
            return check_span(self.given, duration, f"--recorded-at {iso(self.given)!r}")
        start = start_of(stated)
        if start is not None:
            return check_span(start, duration, f"recorded_at {stated!r} of video {video_id!r}")
        path = Path(source) if source else None
        if path is not None and path.is_file():
            start = from_sidecar(path, zone)
            if start is not None:
                return check_span(start, duration, f"sidecar {sidecar_of(path)}: {iso(start)!r}")
        if self.pattern:
            for name in ([path.name] if path is not None else []) + [video_id]:
                start = from_name(name, self.pattern, zone)
                if start is not None:
                    return check_span(start, duration, f"{name!r} read with --recorded-at-pattern {self.pattern!r} "
                                      f"({iso(start)!r})")
        if path is not None and path.is_file():
            return _from_metadata(path, zone, duration)
        return None


_WARNED: set[str] = set()


def _from_metadata(path: Path, zone: tzinfo, duration: float) -> datetime | None:
    """The container's time in ``zone``; one the store cannot hold is skipped with a warning, as an
    unset camera clock is: the file, not the user, said it, and the build goes on without it."""
    start = from_container(path)
    if start is None:
        return None
    try:
        check_span(start, duration, f"the creation_time {iso(start)!r} of {path.name}")
    except WallClockError as exc:
        if str(exc) not in _WARNED:  # a build looks twice (before the model calls and at its write)
            _WARNED.add(str(exc))
            logging.getLogger(__name__).warning("%s; the video gets no recording time (give one with "
                                                "--recorded-at or a sidecar %s)", exc, sidecar_of(path).name)
        return None
    return start.astimezone(zone)
