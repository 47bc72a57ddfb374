"""Wall-clock time (issue 31): each video's recording start, from the flag, a sidecar, a file-name
pattern or the container's ``creation_time``, kept in the graph and the catalog, on both engines.

The commands run as child processes (kuzu and ladybug cannot share one process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta, timezone
from pathlib import Path

import av
import numpy as np
import pytest

from memtools.wallclock import (
    RecordingRule,
    WallClockError,
    absolute,
    from_container,
    from_name,
    parse_time,
    parse_zone,
)

ENGINES = ["kuzu", "ladybug"]
SCRIPTED = "python:memtools.builder.testing:scripted_vlm"
PLUS_ONE = timezone(timedelta(hours=1))
CLI = "import sys; from memtools.cli import main; sys.exit(main(sys.argv[1:]))"


def make_video(path: Path, creation_time: str | None = None, frames: int = 40) -> Path:
    """A small mp4 written with PyAV, with ``creation_time`` in its container metadata if given."""
    with av.open(str(path), "w") as out:
        if creation_time:
            out.metadata["creation_time"] = creation_time
        stream = out.add_stream("mpeg4", rate=10)
        stream.width, stream.height, stream.pix_fmt = 160, 120, "yuv420p"
        for i in range(frames):
            image = np.full((120, 160, 3), (i * 5) % 255, np.uint8)
            image[:, : (i * 3) % 160] = 220
            for packet in stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def memtools(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-c", CLI, *args], capture_output=True, text=True,
                          env={**os.environ, "MEMTOOLS_ALLOW_MODEL_REQUESTS": "0"}, timeout=300)
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


def starts(memory: Path) -> dict[str, str | None]:
    """Each video's stored recording start, read in a child process (the graph's and the catalog's)."""
    code = ("import json, sys\nfrom memtools.store import Memory\n"
            "m = Memory.open(sys.argv[1])\ntimed = m.recorded_starts()\n"
            "out = {v: [m.outline(v).video.recorded_at, timed[v].isoformat() if v in timed else None] "
            "for v in m.video_ids()}\nprint(json.dumps(out))")
    done = subprocess.run([sys.executable, "-c", code, str(memory)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    both = json.loads(done.stdout)
    for vid, (graph, catalog) in both.items():
        assert graph == catalog, f"{vid}: the graph says {graph}, the catalog {catalog}"
    return {vid: graph for vid, (graph, _) in both.items()}


def build(memory: Path, *args: str) -> None:
    memtools("build", *args, "--memory", str(memory), "--vlm", SCRIPTED, "--embedder", "test:16", "--preset",
             "short", "--window-sec", "40", "--speech", "none", "-q")


@pytest.mark.parametrize("engine", ENGINES)
def test_recording_start_from_metadata_file_name_and_sidecar(tmp_path, engine):
    tagged = make_video(tmp_path / "garden.mp4", "2026-11-20T13:03:00.000000Z")
    named = make_video(tmp_path / "VID_20261121_083000.mp4")
    sided = make_video(tmp_path / "VID_20261122_090000.mp4", "2026-01-01T00:00:00Z")
    (tmp_path / "VID_20261122_090000.mp4.recorded_at").write_text("2026-11-22T18:45:00+01:00\n")
    bare = make_video(tmp_path / "plain.mp4")
    memory = tmp_path / "mem"
    build(memory, str(tagged), str(named), str(sided), str(bare), "--graph-engine", engine,
          "--recorded-at-pattern", "VID_%Y%m%d_%H%M%S", "--timezone", "Europe/Paris")
    assert starts(memory) == {
        "garden": "2026-11-20T14:03:00+01:00",              # container metadata (UTC), shown in the zone
        "VID_20261121_083000": "2026-11-21T08:30:00+01:00",  # the file name, in the zone given
        "VID_20261122_090000": "2026-11-22T18:45:00+01:00",  # a sidecar comes before the name and metadata
        "plain": None,                                        # nothing says: no recording time
    }


@pytest.mark.parametrize("engine", ENGINES)
def test_recording_start_from_the_flag_beats_metadata(tmp_path, engine):
    video = make_video(tmp_path / "VID_20261121_083000.mp4", "2026-11-20T13:03:00Z")
    memory = tmp_path / "mem"
    build(memory, str(video), "--graph-engine", engine, "--recorded-at", "2026-11-23T07:15:00-05:00",
          "--recorded-at-pattern", "VID_%Y%m%d_%H%M%S")
    assert starts(memory) == {"VID_20261121_083000": "2026-11-23T07:15:00-05:00"}


@pytest.mark.parametrize("engine", ENGINES)
def test_caption_import_takes_the_flag_and_the_json_field(tmp_path, engine):
    srt = tmp_path / "talk.srt"
    srt.write_text("1\n00:00:01,000 --> 00:00:04,000\nHello there.\n\n2\n00:00:05,000 --> 00:00:09,000\nBye.\n")
    memory = tmp_path / "mem"
    memtools("import-captions", str(srt), "--memory", str(memory), "--embedder", "test:16", "--no-progress",
             "--graph-engine", engine, "--recorded-at", "2026-11-20 16:00", "--timezone", "+01:00")
    dense = tmp_path / "dense.json"
    dense.write_text(json.dumps({
        "cam_a": {"duration": 20, "recorded_at": "2026-11-20T09:00:00Z", "timestamps": [[0, 10]],
                  "sentences": ["A man opens the door."]},
        "cam_b": {"duration": 20, "timestamps": [[0, 10]], "sentences": ["A cat sleeps."]}}))
    memtools("import-captions", str(dense), "--memory", str(memory), "--no-progress")
    assert starts(memory) == {"talk": "2026-11-20T16:00:00+01:00", "cam_a": "2026-11-20T09:00:00+00:00",
                              "cam_b": None}


def test_refused_recording_times_say_what_to_give(tmp_path):
    srt = tmp_path / "a.srt"
    srt.write_text("1\n00:00:01,000 --> 00:00:04,000\nHello.\n")
    other = tmp_path / "b.srt"
    other.write_text(srt.read_text())
    memory = tmp_path / "mem"
    several = memtools("import-captions", str(srt), str(other), "--memory", str(memory), "--recorded-at",
                       "2026-11-20T10:00+01:00", check=False)
    assert several.returncode != 0 and "one video" in several.stderr and "Traceback" not in several.stderr
    zone = memtools("import-captions", str(srt), "--memory", str(memory), "--recorded-at", "2026-11-20T10:00",
                    "--timezone", "Mars/Olympus", check=False)
    assert zone.returncode != 0 and "unknown time zone 'Mars/Olympus'" in zone.stderr
    bad = tmp_path / "dense.json"
    bad.write_text(json.dumps({"v": {"duration": 5, "recorded_at": "2026-11-20 10:00", "timestamps": [[0, 1]],
                                     "sentences": ["x"]}}))
    naive = memtools("import-captions", str(bad), "--memory", str(memory), check=False)
    assert naive.returncode != 0 and "ISO 8601 time with its zone" in naive.stderr
    assert not memory.exists()  # refused before anything was written


def test_wall_clock_helpers():
    start = parse_time("2026-11-20T14:00+01:00")
    assert absolute("2026-11-20T14:00:00+01:00", 90.5) == start + timedelta(seconds=90.5)
    assert absolute(None, 3.0) is None
    assert parse_time("2026-11-20 14:00", PLUS_ONE) == start
    assert parse_time("2026-11-20T13:00Z") == start
    assert from_name("clip_2026-11-20_1400.mp4", "%Y-%m-%d_%H%M", PLUS_ONE) == start
    assert from_name("clip_2026-13-40_1400.mp4", "%Y-%m-%d_%H%M", PLUS_ONE) is None  # no real date
    assert parse_zone("+05:30").utcoffset(None) == timedelta(hours=5, minutes=30)
    with pytest.raises(WallClockError, match="not a date or time"):
        parse_time("yesterday")
    with pytest.raises(WallClockError, match="%Q is not supported"):
        RecordingRule.from_args(None, "%Q", None)


def test_container_creation_time_and_unset_clocks(tmp_path):
    assert from_container(make_video(tmp_path / "a.mp4", "2026-11-20T13:03:00.000000Z")) == parse_time(
        "2026-11-20T14:03+01:00")
    assert from_container(make_video(tmp_path / "b.mp4", "1970-01-01T00:00:00Z")) is None  # a clock never set
    assert from_container(make_video(tmp_path / "c.mp4")) is None
    assert from_container(tmp_path / "missing.mp4") is None
