"""Day and week nodes above the videos, and the tools in clock time (issue 31), on both engines.

The memories are made and read by child processes (kuzu and ladybug cannot share one process); the
MCP test runs the real client against the server in this process (kuzu)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from mcp.types import TextContent

from mcp_support import Client
from memtools.mcp import build_server
from memtools.store import Memory
from test_wallclock import ENGINES, build, make_video, memtools

VIDEOS = {
    "kitchen_a": {"duration": 600, "recorded_at": "2026-11-20T09:00:00+01:00", "title": "Breakfast",
                  "timestamps": [[0, 100], [100, 300], [300, 600]],
                  "sentences": ["A man fries eggs in a pan.", "He pours coffee into a mug.", "He washes the dishes."]},
    "living_b": {"duration": 300, "recorded_at": "2026-11-20T14:00:00+01:00",
                 "timestamps": [[0, 150], [150, 300]],
                 "sentences": ["A woman reads a book on the sofa.", "She puts the keys on the table."]},
    "hall_c": {"duration": 200, "recorded_at": "2026-11-21T08:00:00+01:00", "timestamps": [[0, 200]],
               "sentences": ["Someone picks up the keys and leaves the flat."]},
    "old_d": {"duration": 100, "timestamps": [[0, 100]], "sentences": ["A cat sleeps on a chair."]},
}


def import_videos(tmp_path: Path, engine: str, videos: dict, name: str = "caps.json") -> Path:
    source = tmp_path / name
    source.write_text(json.dumps(videos))
    memory = tmp_path / "mem"
    memtools("import-captions", str(source), "--memory", str(memory), "--embedder", "test:16", "--no-progress",
             "--graph-engine", engine)
    return memory


def tool(memory: Path, name: str, *args: str, check: bool = True) -> str:
    done = memtools("tool", name, "--memory", str(memory), *args, check=check)
    return done.stdout if check else done.stdout + done.stderr


@pytest.mark.parametrize("engine", ENGINES)
def test_day_and_week_nodes_follow_the_videos(tmp_path, engine):
    memory = import_videos(tmp_path, engine, VIDEOS)
    day = tool(memory, "get_summary", "--video-id", "day/2026-11-20")
    assert "Friday 2026-11-20: 2 videos recorded from 09:00 to 14:05 (+01:00), 15 min in all." in day
    assert day.index("09:00-09:10 kitchen_a \"Breakfast\": A man fries eggs in a pan.") < day.index(
        "14:00-14:05 living_b: A woman reads a book on the sofa.")
    assert "hall_c" not in day and "(1 video(s) have no recording time and are in no day.)" in day
    week = tool(memory, "get_summary", "--video-id", "week/2026-W47")
    assert "3 videos on 2 days" in week and "day/2026-11-20 (Fri): 2 videos: Breakfast; living_b" in week
    missing = tool(memory, "get_summary", "--video-id", "day/2026-11-25", check=False)
    assert "no videos were recorded in day/2026-11-25; days with videos include: day/2026-11-21, day/2026-11-20" \
        in missing and "Traceback" not in missing

    # a re-import moves living_b to the next day: both days are made again in the same write
    moved = {"living_b": {**VIDEOS["living_b"], "recorded_at": "2026-11-21T19:30:00+01:00"}}
    import_videos(tmp_path, engine, moved, "moved.json")
    assert "living_b" not in tool(memory, "get_summary", "--video-id", "day/2026-11-20")
    assert "19:30-19:35 living_b" in tool(memory, "get_summary", "--video-id", "day/2026-11-21")
    # deleting the last video of a day removes the day (and keeps the week while it has videos)
    subprocess.run([sys.executable, "-c", "import sys; from memtools.store import Memory\n"
                    "with Memory.open(sys.argv[1]) as m: m.delete_video('kitchen_a')", str(memory)], check=True)
    assert "no videos were recorded in day/2026-11-20" in tool(memory, "get_summary", "--video-id",
                                                                "day/2026-11-20", check=False)
    assert "2 videos on 1 day" in tool(memory, "get_summary", "--video-id", "week/2026-W47")
    assert memtools("check", "--memory", str(memory)).returncode == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_search_by_time_and_list_videos_in_clock_time(tmp_path, engine):
    memory = import_videos(tmp_path, engine, VIDEOS)
    found = tool(memory, "search_by_time", "--start-time", "2026-11-20T09:02+01:00", "--end-time", "14:03")
    assert "4 macro event(s) in 2 video(s) recorded from 2026-11-20T09:02:00+01:00 to 2026-11-20T14:03:00+01:00" \
        in found
    assert "- 2026-11-20T09:01:40+01:00 to 09:05:00 kitchen_a/macro_0001 [0:01:40-0:05:00] He pours coffee" in found
    assert found.index("kitchen_a/macro_0002") < found.index("living_b/macro_0000")  # clock order across videos
    assert "hall_c" not in found
    assert "(1 video(s) have no recording time and were not searched" in found
    # the same window written in UTC, and a whole day; a clock instant as as_of across videos
    assert tool(memory, "search_by_time", "--start-time", "2026-11-20T08:02Z", "--end-time",
                "2026-11-20T13:03Z").count("macro_") == found.count("macro_")
    as_of = tool(memory, "search_by_time", "--start-time", "2026-11-20", "--as-of-time", "2026-11-20T14:02:30+01:00")
    assert "living_b/macro_0000" in as_of and "living_b/macro_0001" not in as_of and "kitchen_a/macro_0002" in as_of
    # one video by its media time also shows clock times; as_of_time becomes its as_of_sec
    media = tool(memory, "search_by_time", "--video-id", "living_b", "--start-sec", "0", "--end-sec", "300",
                 "--as-of-time", "2026-11-20T14:02:30+01:00")
    assert "living_b/macro_0000 [0:00:00-0:02:30] at 2026-11-20T14:00:00+01:00" in media
    assert "living_b/macro_0001" not in media
    untimed = tool(memory, "search_by_time", "--video-id", "old_d", "--start-sec", "0", "--end-sec", "50",
                   "--as-of-time", "2026-11-20T14:00+01:00", check=False)
    assert "video 'old_d' has no recording time" in untimed and "as_of_sec" in untimed

    listed = tool(memory, "list_videos", "--recorded-from", "2026-11-20", "--recorded-to", "2026-11-20")
    assert listed.index("kitchen_a") < listed.index("living_b") and "hall_c" not in listed
    assert "recorded 2026-11-20T09:00:00+01:00" in listed
    assert "(1 video(s) have no recording time and are not listed by date.)" in listed
    everything = tool(memory, "list_videos")
    assert "old_d [0:00:00-0:01:40] old_d (no recording time)" in everything
    summary = tool(memory, "get_summary", "--video-id", "hall_c")
    assert "Recorded: 2026-11-21T08:00:00+01:00 (its day: day/2026-11-21" in summary
    mixed = tool(memory, "search_by_time", "--start-sec", "0", "--end-sec", "9", "--start-time", "2026-11-20",
                 check=False)
    assert "either as start_sec and end_sec" in mixed


async def test_the_mcp_server_answers_a_day_and_a_clock_window(tmp_path):
    memory_path = import_videos(tmp_path, "kuzu", VIDEOS)
    with Memory.open(memory_path) as memory:
        async with Client(build_server(memory)) as client:
            day = await client.call_tool("get_summary", {"video_id": "day/2026-11-21"})
            window = await client.call_tool("search_by_time", {"start_time": "2026-11-21T08:00+01:00",
                                                               "end_time": "08:10"})
    assert not day.is_error and not window.is_error
    text = [b.text for b in day.content if isinstance(b, TextContent)][0]
    assert "Saturday 2026-11-21: 1 video recorded from 08:00 to 08:03" in text
    assert day.structured_content["video_id"] == "day/2026-11-21"
    assert day.structured_content["members"] == ["hall_c"]
    assert window.structured_content["matches"][0]["starts_at"] == "2026-11-21T08:00:00+01:00"


def _as_before(memory: Path, engine: str) -> None:
    """Make a memory look as memtools made it before recording times: no Video.recorded_at column in the
    graph, no time tables in videos.sqlite."""
    code = (f"import {engine} as e, sys\ndb = e.Database(sys.argv[1])\nc = e.Connection(db)\n"
            "c.execute('ALTER TABLE Video DROP recorded_at')\n")
    graph = memory / ("graph.kuzu" if engine == "kuzu" else "graph.lbug")
    subprocess.run([sys.executable, "-c", code, str(graph)], check=True)
    with sqlite3.connect(memory / "videos.sqlite") as conn:
        conn.execute("DROP TABLE video_times")
        conn.execute("DROP TABLE periods")
    conn.close()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_memory_made_before_gains_the_layer_through_repair(tmp_path, engine):
    memory = tmp_path / "mem"
    garden = make_video(tmp_path / "garden.mp4", "2026-11-20T13:03:00Z")
    build(memory, str(garden), "--graph-engine", engine)  # its time comes from the file's metadata
    untimed = {k: {key: v for key, v in entry.items() if key != "recorded_at"} for k, entry in VIDEOS.items()}
    import_videos(tmp_path, engine, untimed)
    _as_before(memory, engine)
    before = {name: tool(memory, name, *args) for name, args in (
        ("get_subgraph", ("--macro-id", "kitchen_a/macro_0001")), ("search_nodes", ("--query", "keys on a table")),
        ("get_summary", ("--video-id", "living_b")))}
    assert "recorded" not in tool(memory, "list_videos")  # it opens, and says nothing it does not know
    assert "no video of this memory has a recording time" in tool(memory, "get_summary", "--video-id",
                                                                  "day/2026-11-20", check=False)
    checked = memtools("check", "--memory", str(memory))  # not damage: nothing is wrong, a layer is not there yet
    assert "no day/week layer yet (made before recording times): `memtools repair` adds it" in checked.stdout

    repaired = memtools("repair", "--memory", str(memory), "--timezone", "Europe/Paris")
    assert "made the time layer again: 1 video(s) with a recording time (read 1 from their source files)" \
        in repaired.stdout
    assert memtools("check", "--memory", str(memory)).returncode == 0
    assert "- 14:03-14:03 garden" in tool(memory, "get_summary", "--video-id", "day/2026-11-20")
    assert "garden [0:00:00-0:00:04] Balls knocking over boxes recorded 2026-11-20T14:03:00+01:00" in tool(
        memory, "list_videos")
    for name, args in (("get_subgraph", ("--macro-id", "kitchen_a/macro_0001")),
                       ("search_nodes", ("--query", "keys on a table")), ("get_summary", ("--video-id", "living_b"))):
        assert tool(memory, name, *args) == before[name]  # nothing lost or changed
    # the next import writes into the upgraded graph and catalog as usual
    import_videos(tmp_path, engine, {"hall_c": VIDEOS["hall_c"]}, "again.json")
    assert "08:00-08:03 hall_c" in tool(memory, "get_summary", "--video-id", "day/2026-11-21")


@pytest.mark.parametrize(("engine", "point"), [(e, p) for e in ENGINES
                                               for p in ("nodes-written", "graph-committed", "catalog-written")])
def test_a_write_killed_anywhere_keeps_the_days_with_the_videos(tmp_path, engine, point):
    memory = import_videos(tmp_path, engine, {"kitchen_a": VIDEOS["kitchen_a"]})
    source = tmp_path / "more.json"
    source.write_text(json.dumps({k: VIDEOS[k] for k in ("living_b", "hall_c")}))
    killed = subprocess.run([sys.executable, "-c", "import sys; from memtools.cli import main; "
                             "sys.exit(main(sys.argv[1:]))", "import-captions", str(source), "--memory",
                             str(memory), "--no-progress"], capture_output=True, text=True,
                            env={**__import__("os").environ, "MEMTOOLS_FAULT_POINT": point}, timeout=300)
    assert killed.returncode == -9, killed.stderr
    memtools("recover", "--memory", str(memory))
    assert memtools("check", "--memory", str(memory)).returncode == 0
    day = tool(memory, "get_summary", "--video-id", "day/2026-11-20")
    videos = tool(memory, "list_videos")
    assert ("living_b" in day) == ("living_b" in videos)  # the day holds exactly the videos the memory holds
    assert ("living_b" in day) == (point != "nodes-written")  # rolled back before the commit, forward after
    memtools("import-captions", str(source), "--memory", str(memory), "--no-progress")  # the same command again
    assert "14:00-14:05 living_b" in tool(memory, "get_summary", "--video-id", "day/2026-11-20")
    assert "08:00-08:03 hall_c" in tool(memory, "get_summary", "--video-id", "day/2026-11-21")


@pytest.mark.parametrize("engine", ENGINES)
def test_check_finds_a_time_layer_that_disagrees_with_the_graph_and_repair_remakes_it(tmp_path, engine):
    memory = import_videos(tmp_path, engine, VIDEOS)
    day = tool(memory, "get_summary", "--video-id", "day/2026-11-20")
    with sqlite3.connect(memory / "videos.sqlite") as conn:
        conn.execute("DELETE FROM periods WHERE id = 'day/2026-11-20'")
        conn.execute("UPDATE video_times SET recorded_at = '2026-11-20T10:00:00+01:00' WHERE id = 'kitchen_a'")
    conn.close()
    checked = memtools("check", "--memory", str(memory), check=False)
    assert checked.returncode == 1
    assert "[times] the time index of video 'kitchen_a' does not match its root in the graph" in checked.stdout
    assert "[times] the day and week nodes do not match the videos (missing: day/2026-11-20; stray: none)" \
        in checked.stdout
    memtools("repair", "--memory", str(memory))
    assert memtools("check", "--memory", str(memory)).returncode == 0
    assert tool(memory, "get_summary", "--video-id", "day/2026-11-20") == day
