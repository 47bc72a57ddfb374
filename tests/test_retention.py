"""The retention policy (issue 47, item 4): ``memtools retention``, the config file's ``retention_days``, the
server's daily run, and the raw bytes after a retention purge on both engines.

The memories of the raw-bytes test are made and changed by child processes (kuzu and ladybug cannot share one
process); the memory folder is read as ``purge_support.holders`` reads it: every file's bytes, and the SQLite
files' zlib blobs. The lance rows (read here with lancedb, not through a graph engine) give the vectors to look
for: the positive control finds them, and the sentences, before the purge.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from mcp_support import http_server
from memtools.changes.retention import apply, due, prune_reads, read_policy, set_policy
from memtools.changes.retention_daily import DailyRetention
from memtools.embed import TestEmbedder
from memtools.errors import ConfigError
from memtools.store import Memory
from memtools.testing import kitchen_graph
from purge_support import holders
from test_wallclock import ENGINES, memtools

NOW = datetime.now(timezone.utc)
SECRET = ("The zqxold courier leaves a crate by the gate", "Zqxold counts the coins twice before the bank shuts")
VIDEOS = {
    "old_a": {"duration": 200, "recorded_at": "2020-01-01T09:00:00+01:00", "title": "An old morning",
              "timestamps": [[0, 100], [100, 200]], "sentences": list(SECRET)},
    "recent_b": {"duration": 100, "recorded_at": (NOW - timedelta(days=2)).isoformat(timespec="seconds"),
                 "timestamps": [[0, 100]], "sentences": ["A woman reads a book on the sofa."]},
    "untimed_c": {"duration": 100, "timestamps": [[0, 100]], "sentences": ["A cat sleeps on a chair."]},
}


def read_line(at: datetime, video: str) -> str:
    return json.dumps({"at": at.isoformat(), "caller": "alice", "tool": "get_summary",
                       "arguments": {"video_id": video}, "node_ids": [f"{video}/macro_0000"]}) + "\n"


def make(tmp_path: Path, engine: str, videos: dict = VIDEOS) -> Path:
    source = tmp_path / "caps.json"
    source.write_text(json.dumps(videos))
    memory = tmp_path / "mem"
    memtools("import-captions", str(source), "--memory", str(memory), "--embedder", "test:16", "--no-progress",
             "--graph-engine", engine)
    return memory


def lance_vectors(memory: Path, video_id: str) -> dict[str, bytes]:
    """The float32 bytes of the video's rows that hold its own sentences, in the ``nodes`` table."""
    import lancedb

    rows = lancedb.connect(memory / "vectors").open_table("nodes").to_arrow().to_pylist()
    mine = [r for r in rows if r["video_id"] == video_id and "zqx" in str(r["text"]).lower()]
    return {f"vector:{r['id']}": np.asarray(r["vector"], dtype="<f4").tobytes() for r in mine}


@pytest.mark.parametrize("engine", ENGINES)
def test_retention_purges_what_is_older_than_the_policy_and_leaves_no_byte_of_it(tmp_path, engine):
    memory = make(tmp_path, engine)
    (memory / "reads.jsonl").write_text(read_line(NOW - timedelta(days=90), "recent_b")
                                        + read_line(NOW - timedelta(hours=1), "recent_b") + "not a record\n")
    assert "No retention policy" in memtools("retention", "--memory", str(memory)).stdout
    assert "more than 30 day(s) ago" in memtools("retention", "--memory", str(memory), "--keep-days", "30").stdout
    assert json.loads((memory / "retention.json").read_text()) == {"keep_days": 30}
    assert "more than 30 day(s) ago are purged" in memtools("retention", "--memory", str(memory), "--show").stdout

    preview = memtools("retention", "--memory", str(memory), "--dry-run").stdout
    assert "1 video(s) would be purged now" in preview
    assert "old_a  recorded 2020-01-01T09:00:00+01:00  \"An old morning\"" in preview
    assert "recent_b" not in preview and "untimed_c" not in preview
    assert "1 line(s) of reads.jsonl would be dropped" in preview
    wide = memtools("retention", "--memory", str(memory), "--dry-run", "--keep-days", "1").stdout
    assert "recent_b  recorded" in wide and "untimed_c" not in wide  # untimed_c was added just now
    assert json.loads((memory / "retention.json").read_text()) == {"keep_days": 30}  # a dry run stores nothing

    needles = {"said": SECRET[0].encode(), "caption": SECRET[1].encode(), **lance_vectors(memory, "old_a")}
    assert len(needles) >= 4
    before = holders(memory, needles)
    assert all(before.values()), before  # the positive control

    applied = memtools("retention", "--memory", str(memory), "--apply").stdout
    assert "Purged 1 video(s) in change c" in applied and "old_a  recorded 2020-01-01" in applied
    receipt = json.loads(applied[applied.index("{"):applied.rindex("}") + 1])
    assert receipt["reason"] == "retention" and receipt["videos"] == ["old_a"] and receipt["front_end"] == "cli"
    assert "Dropped 1 line(s) older than 30 day(s) from reads.jsonl" in applied
    assert json.loads((memory / "purges" / f"{receipt['change_id']}.json").read_text())["videos"] == ["old_a"]

    after = holders(memory, needles)
    assert not any(after.values()), after
    listed = memtools("tool", "list_videos", "--memory", str(memory)).stdout
    assert "recent_b" in listed and "untimed_c" in listed and "old_a" not in listed
    lines = (memory / "reads.jsonl").read_text().splitlines()
    assert len(lines) == 2 and lines[1] == "not a record"  # a line without a time is kept
    assert json.loads(lines[0])["at"] == (NOW - timedelta(hours=1)).isoformat()
    log = memtools("log", "--memory", str(memory)).stdout
    assert f"{receipt['change_id']}" in log and "purge" in log and "An old morning" not in log
    assert memtools("check", "--memory", str(memory)).returncode == 0
    again = memtools("retention", "--memory", str(memory), "--apply").stdout
    assert "No video is older than that: nothing purged." in again
    assert "No retention policy" in memtools("retention", "--memory", str(memory), "--off").stdout
    assert json.loads((memory / "retention.json").read_text()) == {"keep_days": None}


def test_the_config_file_and_bad_policies(tmp_path):
    memory = make(tmp_path, "kuzu", {"old_a": VIDEOS["old_a"]})
    config = tmp_path / "memtools.toml"
    config.write_text("retention_days = 30\n\n[search]\nreranker = \"none\"\n")
    shown = memtools("retention", "--memory", str(memory), "--config", str(config)).stdout
    assert "more than 30 day(s) ago are purged" in shown and str(config) in shown
    assert "old_a  recorded" in memtools("retention", "--memory", str(memory), "--config", str(config),
                                         "--dry-run").stdout
    assert "No retention policy" in memtools("retention", "--memory", str(memory), "--dry-run").stdout
    memtools("retention", "--memory", str(memory), "--off")  # the memory's own policy wins over the file
    assert "No retention policy" in memtools("retention", "--memory", str(memory), "--config", str(config)).stdout

    config.write_text("retention_days = \"a month\"\n")
    (memory / "retention.json").unlink()
    bad = memtools("retention", "--memory", str(memory), "--config", str(config), check=False)
    assert bad.returncode == 1 and "retention_days in" in bad.stderr and "whole number of days" in bad.stderr
    (memory / "retention.json").write_text("{\"keep\": 3}")
    bad = memtools("retention", "--memory", str(memory), "--apply", check=False)
    assert bad.returncode == 1 and "must hold {\"keep_days\": N}" in bad.stderr and "--keep-days N" in bad.stderr
    bad = memtools("retention", "--memory", str(memory), "--keep-days", "0", check=False)
    assert bad.returncode == 2 and "--keep-days" in bad.stderr
    bad = memtools("retention", "--memory", str(memory), "--keep-days", "3", "--off", check=False)
    assert bad.returncode == 1 and "give one of them" in bad.stderr
    assert "old_a" in memtools("tool", "list_videos", "--memory", str(memory)).stdout  # nothing lost
    with pytest.raises(ConfigError, match="whole number of days from 1 to"):
        set_policy(memory, 10**6)


def _old(video_id: str, recorded_at: str | None):
    graph = kitchen_graph(video_id)
    graph.video.recorded_at = recorded_at
    return graph


def test_ages_run_from_the_recording_time_else_from_when_the_video_was_added(tmp_path):
    with Memory.create(tmp_path / "m", TestEmbedder(16)) as memory:
        memory.write_videos([_old("long_ago", "2021-03-04T05:06:07+00:00"), _old("no_time", None),
                             _old("soon", (NOW + timedelta(days=1)).isoformat())])
        assert [d.video_id for d in due(memory, 30)] == ["long_ago"]
        later = [(d.video_id, d.recorded) for d in due(memory, 30, now=NOW + timedelta(days=40))]
        assert later == [("long_ago", True), ("no_time", False), ("soon", True)]
        assert apply(memory).receipt is None  # no policy: nothing done
        set_policy(memory.path, 30)
        outcome = apply(memory, now=NOW + timedelta(days=30, hours=12))
        assert outcome.receipt is not None and sorted(outcome.receipt["videos"]) == ["long_ago", "no_time"]
        assert memory.video_ids() == ["soon"]
        assert read_policy(memory.path).keep_days == 30


def test_pruning_the_reads_log_keeps_what_it_cannot_date_and_what_is_appended(tmp_path):
    path = tmp_path / "reads.jsonl"
    assert prune_reads(tmp_path, NOW) == 0  # no file: nothing to do
    old, new = read_line(NOW - timedelta(days=9), "a"), read_line(NOW, "b")
    path.write_text(old + "{}\n" + new + old + '{"at": "yesterday"}\n' + old.rstrip("\n"))  # the last cut short
    assert prune_reads(tmp_path, NOW - timedelta(days=1), dry_run=True) == 2
    assert prune_reads(tmp_path, NOW - timedelta(days=1)) == 2
    assert path.read_text() == "{}\n" + new + '{"at": "yesterday"}\n' + old.rstrip("\n")
    assert path.stat().st_mode & 0o777 == 0o600


def test_the_daily_run_applies_the_policy_in_the_background(tmp_path, capfd):
    with Memory.create(tmp_path / "m", TestEmbedder(16)) as memory:
        memory.write_videos([_old("long_ago", "2021-03-04T05:06:07+00:00"), _old("today", NOW.isoformat())])
        set_policy(memory.path, 30)
        daily = DailyRetention(memory, every=3600).start()  # the first run starts at once
        try:
            deadline = time.monotonic() + 120  # a hang guard, not a timing
            while not list((memory.path / "purges").glob("c*.json")) and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            daily.close()
        [receipt] = [json.loads(p.read_text()) for p in (memory.path / "purges").glob("c*.json")]
        assert receipt["reason"] == "retention" and receipt["videos"] == ["long_ago"]
        assert (receipt["front_end"], receipt["who"]) == ("mcp", "retention policy")
        assert memory.video_ids() == ["today"]
    err = capfd.readouterr().err
    assert f"memtools retention: purged 1 video(s) older than 30 day(s) from {tmp_path / 'm'}: long_ago" in err


@pytest.mark.skipif(sys.platform == "win32", reason="the server is stopped with a signal")
def test_memtools_serve_applies_the_config_files_policy_at_start(tmp_path):
    memory = make(tmp_path, "kuzu")
    config = tmp_path / "memtools.toml"
    config.write_text("retention_days = 30\n")
    with http_server(memory, extra=("--config", str(config))):
        deadline = time.monotonic() + 120  # a hang guard
        while not list((memory / "purges").glob("c*.json")) and time.monotonic() < deadline:
            time.sleep(0.1)
    [receipt] = [json.loads(p.read_text()) for p in (memory / "purges").glob("c*.json")]
    assert receipt["reason"] == "retention" and receipt["videos"] == ["old_a"] and receipt["front_end"] == "mcp"
    assert "old_a" not in memtools("tool", "list_videos", "--memory", str(memory)).stdout


def test_a_server_of_many_memories_applies_each_ones_policy(tmp_path):
    from memtools.mcp.many import build_many_server

    (tmp_path / "all").mkdir()
    for name, keep in (("home", 30), ("work", None)):
        with Memory.create(tmp_path / "all" / name, TestEmbedder(16)) as memory:
            memory.write_videos([_old("long_ago", "2021-03-04T05:06:07+00:00"), _old("today", NOW.isoformat())])
        if keep is not None:
            set_policy(tmp_path / "all" / name, keep)
    server = build_many_server(tmp_path / "all", allow_writes=True)  # each memory's policy starts with it
    try:
        deadline = time.monotonic() + 120  # a hang guard, not a timing
        while not list((tmp_path / "all" / "home" / "purges").glob("c*.json")) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        server.memories.close()
    [receipt] = [json.loads(p.read_text()) for p in (tmp_path / "all" / "home" / "purges").glob("c*.json")]
    assert receipt["reason"] == "retention" and receipt["videos"] == ["long_ago"]
    assert not (tmp_path / "all" / "work" / "purges").exists()  # no policy there: nothing purged
    with Memory.open(tmp_path / "all" / "work") as work:
        assert work.video_ids() == ["long_ago", "today"]
