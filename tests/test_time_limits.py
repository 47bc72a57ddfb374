"""No recording time bricks a memory: every way a time enters (caption JSON, ``--recorded-at``,
``--timezone``, a sidecar, ``--recorded-at-pattern``, container metadata, tool arguments) refuses one
the store cannot hold by name, before anything is written, and the memory answers as before.

The range is ``memtools.wallclock.EARLIEST`` .. ``LATEST`` (0001-01-02 .. 9998-12-31, UTC, the
video's duration included). A sidecar error never shows more than a short excerpt of the file, and
none of a linked one."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp.types import TextContent

from mcp_support import Client
from memtools.mcp import build_server
from memtools.store import Memory
from memtools.store.catalog.time_rows import VideoTime
from memtools.wallclock import RecordingRule, WallClockError, check_span, from_sidecar, parse_time, parse_zone
from test_wallclock import SCRIPTED, make_video, memtools

GOOD = {"a": {"duration": 20, "recorded_at": "2026-11-20T09:00:00Z", "timestamps": [[0, 10]],
              "sentences": ["A man opens the door."]}}
SRT = "1\n00:00:01,000 --> 00:00:04,000\nHello there.\n"
SECRET = "root:x:0:0:SECRET-LINE:/root:/bin/bash"
BUILD = ("--vlm", SCRIPTED, "--embedder", "test:16", "--preset", "short", "--window-sec", "40", "--speech", "none",
         "-q")


@pytest.fixture(scope="module")
def memory(tmp_path_factory) -> Path:
    """One memory every refused command is tried on: it must answer the same after each."""
    folder = tmp_path_factory.mktemp("limits")
    (folder / "good.json").write_text(json.dumps(GOOD))
    memtools("import-captions", str(folder / "good.json"), "--memory", str(folder / "mem"), "--embedder", "test:16",
             "--no-progress")
    return folder / "mem"


@pytest.fixture(scope="module")
def clip(tmp_path_factory) -> Path:
    return make_video(tmp_path_factory.mktemp("clip") / "clip.mp4", frames=20)


def listing(memory: Path) -> str:
    return memtools("tool", "list_videos", "--memory", str(memory)).stdout


def assert_as_before(memory: Path, before: str) -> None:
    """The memory answers as it did, is whole, and no write was left half-done."""
    assert listing(memory) == before
    assert not (memory / ".write-journal").exists()
    assert "OK:" in memtools("check", "--memory", str(memory)).stdout


# --- the ways a time enters, each with a value the store cannot hold --------------------------

def caption_json(recorded_at: str, duration: float = 120) -> Callable[[Path, Path, Path], list[str]]:
    def make(tmp: Path, memory: Path, clip: Path) -> list[str]:
        entry = {"duration": duration, "recorded_at": recorded_at, "timestamps": [[0, 10]], "sentences": ["A cat."]}
        (tmp / "bad.json").write_text(json.dumps({"b": entry}))
        return ["import-captions", str(tmp / "bad.json"), "--memory", str(memory), "--no-progress"]
    return make


def srt_with(*flags: str, name: str = "talk.srt") -> Callable[[Path, Path, Path], list[str]]:
    def make(tmp: Path, memory: Path, clip: Path) -> list[str]:
        (tmp / name).write_text(SRT)
        return ["import-captions", str(tmp / name), "--memory", str(memory), "--no-progress", *flags]
    return make


def sidecar(write: Callable[[Path, Path], None], *flags: str) -> Callable[[Path, Path, Path], list[str]]:
    """A build of a copy of ``clip`` whose sidecar ``write(sidecar, tmp)`` makes."""
    def make(tmp: Path, memory: Path, clip: Path) -> list[str]:
        video = tmp / "clip.mp4"
        shutil.copy(clip, video)
        write(tmp / "clip.mp4.recorded_at", tmp)
        return ["build", str(video), "--memory", str(memory), *BUILD, *flags]
    return make


def text(content: str) -> Callable[[Path, Path], None]:
    return lambda side, tmp: side.write_text(content)


def link_to(content: str) -> Callable[[Path, Path], None]:
    def write(side: Path, tmp: Path) -> None:
        (tmp / "secret.txt").write_text(content)
        side.symlink_to(tmp / "secret.txt")
    return write


def folder(side: Path, tmp: Path) -> None:
    side.mkdir()


def tool(*args: str) -> Callable[[Path, Path, Path], list[str]]:
    return lambda tmp, memory, clip: ["tool", *args, "--memory", str(memory)]


PAST = "is past 9998-12-31T23:59:59Z, the latest time a memory can hold"
BEFORE = "is before 0001-01-02T00:00:00Z, the earliest time a memory can hold"
LONG = "garbage " * 12 + "tail-never-shown"
REFUSED = [
    ("json-past", caption_json("9999-12-31T23:59:59Z"), f"video b: \"recorded_at\" '9999-12-31T23:59:59Z' {PAST}"),
    ("json-duration", caption_json("9998-12-31T23:59:00Z"),
     "\"recorded_at\" '9998-12-31T23:59:00Z' plus the video's 120 s runs past 9998-12-31T23:59:59Z"),
    ("json-west", caption_json("9999-12-31T23:59:59-14:00"), f"'9999-12-31T23:59:59-14:00' {PAST}"),
    ("json-year-1", caption_json("0001-01-01T00:00:00+01:00"), f"'0001-01-01T00:00:00+01:00' {BEFORE}"),
    ("flag-past", srt_with("--recorded-at", "9999-12-31T23:59:30+00:00"),
     f"--recorded-at '9999-12-31T23:59:30+00:00' {PAST}"),
    ("flag-west", srt_with("--recorded-at", "9999-12-31T23:59:59-14:00"), f"'9999-12-31T23:59:59-14:00' {PAST}"),
    ("flag-year-1", srt_with("--recorded-at", "0001-01-01T00:00:00+01:00"), f"'0001-01-01T00:00:00+01:00' {BEFORE}"),
    ("flag-duration", srt_with("--recorded-at", "9998-12-31T23:59:58Z"),
     "--recorded-at '9998-12-31T23:59:58+00:00' plus the video's 4 s runs past"),
    ("zone-naive-year-1", srt_with("--recorded-at", "0001-01-01 00:00", "--timezone", "+01:00"),
     f"--recorded-at '0001-01-01 00:00' {BEFORE}"),
    ("pattern", srt_with("--recorded-at-pattern", "VID_%Y%m%d_%H%M%S", "--timezone", "-05:00",
                         name="VID_99991231_235959.srt"),
     f"'VID_99991231_235959' read with --recorded-at-pattern 'VID_%Y%m%d_%H%M%S' ('9999-12-31T23:59:59-05:00')"
     f" {PAST}"),
    ("sidecar-garbage", sidecar(text("yesterday at noon\n")),
     "clip.mp4.recorded_at: it holds 'yesterday at noon', which is not a date and time; write one ISO 8601"),
    ("sidecar-feb-30", sidecar(text("2026-02-30T10:00:00+01:00")),
     "it holds '2026-02-30T10:00:00+01:00', which is not"),
    ("sidecar-past", sidecar(text("9999-12-31T23:59:30Z")),
     f"clip.mp4.recorded_at: '9999-12-31T23:59:30+00:00' {PAST}"),
    ("sidecar-duration", sidecar(text("9998-12-31T23:59:58Z")), "plus the video's 2 s runs past"),
    ("sidecar-long-text", sidecar(text(LONG)), "it holds 'garbage garbage garbage"),
    ("sidecar-too-big", sidecar(text("2026-11-20T14:00:00+01:00" + " " * 300)),
     "clip.mp4.recorded_at is larger than 200 bytes, so it was not read"),
    ("sidecar-link-small", sidecar(link_to(SECRET)), "clip.mp4.recorded_at: it is a link, its content is not shown"),
    ("sidecar-link-passwd", sidecar(link_to((SECRET + "\n") * 40)),
     "clip.mp4.recorded_at (a link) is larger than 200 bytes, so it was not read"),
    ("sidecar-folder", sidecar(folder), "clip.mp4.recorded_at is not a regular file"),
    ("tool-day", tool("search_by_time", "--start-time", "9999-12-31"), f"start_time='9999-12-31' {PAST}"),
    ("tool-west", tool("search_by_time", "--start-time", "2026-11-20", "--end-time", "9999-12-31T23:59:59-14:00"),
     f"end_time='9999-12-31T23:59:59-14:00' {PAST}"),
    ("tool-list-to", tool("list_videos", "--recorded-to", "9999-12-31"),
     f"recorded_to='9999-12-31' {PAST} (in UTC): give an earlier time; or leave recorded_to out for an open end"),
    ("tool-list-from", tool("list_videos", "--recorded-from", "0001-01-01"), f"recorded_from='0001-01-01' {BEFORE}"),
    ("tool-as-of", tool("search_by_time", "--video-id", "a", "--start-sec", "0", "--end-sec", "5", "--as-of-time",
                        "0001-01-01T00:00+05:00"), f"as_of_time='0001-01-01T00:00+05:00' {BEFORE}"),
]


@pytest.mark.parametrize(("make", "said"), [pytest.param(m, s, id=i) for i, m, s in REFUSED])
def test_a_time_the_store_cannot_hold_is_refused_by_name(tmp_path, memory, clip, make, said):
    before = listing(memory)
    done = memtools(*make(tmp_path, memory, clip), check=False)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert said in out and "Traceback" not in out
    assert SECRET not in out and "tail-never-shown" not in out  # a file is never dumped into a message
    assert_as_before(memory, before)


@pytest.mark.parametrize("zone", ["+25:00", "-24:00", "+01:75", "Mars/Olympus"])
def test_a_bad_timezone_is_an_argument_error(tmp_path, memory, zone):
    (tmp_path / "talk.srt").write_text(SRT)
    before = listing(memory)
    done = memtools("import-captions", str(tmp_path / "talk.srt"), "--memory", str(memory), "--timezone", zone,
                    check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "memtools import-captions: error: argument --timezone: " in done.stderr and f"'{zone}'" in done.stderr
    assert "'+01:00'" in done.stderr  # a valid example
    assert_as_before(memory, before)


def test_container_metadata_past_the_range_leaves_the_video_without_a_time(tmp_path, memory):
    """The file, not the user, said it (a camera clock gone wrong): the video is built without a time, as
    with an unset clock, and the warning names the value. A .nut file keeps the text as written."""
    video = make_video(tmp_path / "far.nut", "9999-12-31T23:59:59Z", frames=20)
    done = memtools("build", str(video), "--memory", str(memory), *BUILD, "--timezone", "+01:00", check=False)
    assert done.returncode == 0, done.stderr
    assert "the creation_time '9999-12-31T23:59:59+00:00' of far.nut " + PAST in done.stderr
    assert "Traceback" not in done.stderr
    assert "far [0:00:00-0:00:02] Balls knocking over boxes (no recording time)" in listing(memory)
    assert "OK:" in memtools("check", "--memory", str(memory)).stdout


async def test_mcp_tool_arguments_out_of_range_are_tool_errors(tmp_path):
    source = tmp_path / "good.json"
    source.write_text(json.dumps(GOOD))
    memtools("import-captions", str(source), "--memory", str(tmp_path / "mem"), "--embedder", "test:16",
             "--no-progress")
    calls = [("search_by_time", {"start_time": "9999-12-31"}), ("list_videos", {"recorded_to": "9999-12-31"}),
             ("search_by_time", {"start_time": "0001-01-01T00:00:00+14:00", "end_time": "2026-01-01"}),
             ("get_summary", {"video_id": "day/9999-12-31"})]
    with Memory.open(tmp_path / "mem") as opened:
        async with Client(build_server(opened)) as client:
            results = [await client.call_tool(name, args) for name, args in calls]
            fine = await client.call_tool("list_videos", {})
    said = [[b.text for b in r.content if isinstance(b, TextContent)][0] for r in results]
    assert all(r.is_error for r in results), said
    assert "start_time='9999-12-31' " + PAST in said[0]
    assert "recorded_to='9999-12-31' " + PAST in said[1]
    assert "start_time='0001-01-01T00:00:00+14:00' " + BEFORE in said[2]
    assert "no videos were recorded in day/9999-12-31" in said[3]
    assert not fine.is_error


# --- the helpers themselves -------------------------------------------------------------------

@pytest.mark.parametrize("duration", [math.nan, math.inf, 1e308, -1.0, 4e8])
def test_a_duration_that_cannot_be_laid_on_the_clock_is_refused(duration):
    with pytest.raises(WallClockError, match=r"the video's duration .* s is not a length"):
        check_span(parse_time("2026-11-20T14:00+01:00"), duration, "--recorded-at x")
    with pytest.raises(WallClockError, match="the video's duration"):
        RecordingRule(given=parse_time("2026-11-20T14:00+01:00")).resolve(None, "v", duration=duration)


def test_the_edges_of_the_range_are_held():
    assert check_span(parse_time("9998-12-31T23:58:00Z"), 119, "x") == parse_time("9998-12-31T23:58:00Z")
    assert check_span(parse_time("0001-01-02T00:00:00Z"), 0, "x").year == 1
    with pytest.raises(WallClockError, match="plus the video's 120 s runs past"):
        check_span(parse_time("9998-12-31T23:58:00Z"), 120, "x")


@pytest.mark.parametrize(("recorded_at", "duration"), [
    ("9999-12-31T23:59:59+00:00", 120.0), ("9999-12-31T23:59:59-14:00", 0.0), ("0001-01-01T00:00:00+01:00", 0.0),
    ("2026-11-20T14:00:00+01:00", math.nan), ("2026-11-20T14:00:00+01:00", 1e308)])
def test_a_time_row_never_overflows(recorded_at, duration):
    """Defence in depth: were such a start ever stored, its row is a named error, not an OverflowError."""
    with pytest.raises(WallClockError, match="falls outside the dates a memory can hold"):
        VideoTime.of("v", recorded_at, "t", duration, "r")


@pytest.mark.parametrize("zone", ["+25:00", "-24:00", "+01:75"])
def test_offsets_python_cannot_hold_are_named(zone):
    with pytest.raises(WallClockError, match=re.escape(f"'{zone}' is not a UTC offset")):
        parse_zone(zone)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_a_sidecar_that_is_a_pipe_is_refused_without_waiting(tmp_path):
    os.mkfifo(tmp_path / "clip.mp4.recorded_at")
    with pytest.raises(WallClockError, match="is not a regular file"):
        from_sidecar(tmp_path / "clip.mp4", parse_zone("+01:00"))
