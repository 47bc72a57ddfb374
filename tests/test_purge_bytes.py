"""A purge leaves no byte of a video in the memory folder (issue 47, item 2), on both graph engines.

Each engine runs in a child process (kuzu and ladybug cannot share one: ``purge_support.py``), which builds a
memory of three videos, forgets one (undoably) and purges it and a live one, reading every file's raw bytes
before (a positive control: each sentence and vector is found) and after (none is). Then ``forget_person
--purge``: the person's centroid is gone from every file, the change log's kept copies included. Killed at each
step of a purge, the next writer finishes it and the bytes are gone all the same.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memtools.changes.purge import receipts, update_receipt
from memtools.cli import main

HERE = Path(__file__).resolve().parent
ENGINES = ["kuzu", "ladybug"]


def child(*argv: str, fault: str | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent / "src"), str(HERE)])}
    env.pop("MEMTOOLS_FAULT_POINT", None)
    if fault:
        env["MEMTOOLS_FAULT_POINT"] = fault
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=timeout, env=env)


def scenario(engine: str, folder: Path, which: str) -> dict:
    if importlib.util.find_spec(engine) is None:
        pytest.skip(f"{engine} is not installed")
    done = child(str(HERE / "purge_support.py"), engine, str(folder), which)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("engine", ENGINES)
def test_a_purge_leaves_no_byte_of_the_video_in_any_file(engine, tmp_path):
    found = scenario(engine, tmp_path / "m", "videos")
    before, after = found["before"], found["after"]
    for name in ("said", "caption", "frame", "voice", "face", "vector0"):
        for vid in ("mon", "thu"):
            assert before[f"{vid}:{name}"], f"positive control: {vid}'s {name} is not found before the purge"
    assert any("graph." in f for f in before["thu:said"]) and any(".lance" in f for f in before["thu:said"])
    assert "changes.sqlite" in before["mon:caption"]  # the undoable forget's copy, compressed
    assert {k: v for k, v in after.items() if v} == {}
    assert found["answers"] == {"videos": ["tue"], "hit_videos": ["tue"],
                                "summary": found["answers"]["summary"]}
    assert found["answers"]["summary"].startswith("Video tue")
    assert "purged in c0003" in found["undo"] and "cannot come back" in found["undo"]
    # the log keeps who purged what and when, not the content: the forget lost its copy and its summary
    assert found["log"] == [[1, "forget", "purged in c0003", "done", 1], [2, "purge", "purged thu (purge)", "done", 0],
                            [3, "purge", "purged mon (purge)", "done", 0]]
    thu, mon = found["receipt_thu"], found["receipt_mon"]
    assert found["stored"] == [thu, mon]
    assert thu["videos"] == ["thu"] and thu["reason"] == "purge" and thu["bucket"] is None
    assert {"frames/thu/0001.jpg", "voices/thu.json", "faces/thu.json", "work/thu/speech/0.json", "jobs.json",
            "reads.jsonl"} <= set(thu["files"])
    assert thu["rows"]["graph:Speech"] == 5 and thu["rows"]["lance:nodes"] > 0 and thu["versions"]["lance:nodes"] > 0
    assert mon["log_rows_redacted"] == 1 and "changes/c0001/frames/mon/0001.jpg" in mon["files"]
    assert not [f for f in found["files"] if "thu" in f or "mon" in f or "purge-copy" in f]


@pytest.mark.parametrize("engine", ENGINES)
def test_forget_person_purge_reaches_every_copy_of_the_centroid(engine, tmp_path):
    found = scenario(engine, tmp_path / "m", "person")
    assert found["before"]["mon:json"] == ["changes/c0001/voices/mon.json"]  # kept for an undo of the forget
    assert found["before"]["tue:json"] == ["voices/tue.json"]
    assert {k: v for k, v in found["after"].items() if v} == {}
    assert found["receipt_tue"]["reason"] == "forget_person" and found["receipt_tue"]["clusters"] == [
        ["tue", "voice", "S1"]]


def _memory(tmp_path: Path) -> Path:
    folder = tmp_path / "m"
    done = child("-c", "import sys, purge_support as s; s.build(__import__('pathlib').Path(sys.argv[1]), 'kuzu')",
                 str(folder))
    assert done.returncode == 0, done.stderr[-2000:]
    return folder


@pytest.mark.parametrize("point", ["purge-recorded", "purge-deleted", "purge-files", "purge-log", "purge-table-written",
                                   "purge-tables", "purge-sqlite", "purge-graph-copied", "purge-graph-swapped",
                                   "purge-receipt"])
def test_a_purge_killed_at_any_step_is_finished_by_the_next_writer(tmp_path, point):
    folder = _memory(tmp_path)
    killed = child("-c", "import sys; from memtools.cli import main; sys.exit(main(sys.argv[1:]))", "forget", "thu",
                   "--purge", "--memory", str(folder), fault=point)
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert child("-c", "import sys; from memtools.cli import main; sys.exit(main(sys.argv[1:]))", "note",
                 "tue@10", "a later change finishes the purge", "--memory", str(folder)).returncode == 0
    check = child("-c", "import sys, json, purge_support as s; from pathlib import Path; "
                  "print(json.dumps(s.holders(Path(sys.argv[1]), {k: v.encode() for k, v in "
                  "zip(('said', 'caption'), s.SECRETS['thu'])})))", str(folder))
    assert json.loads(check.stdout) == {"said": [], "caption": []}
    stored = receipts(folder)
    assert [r["videos"] for r in stored] == [["thu"]]
    assert not list(folder.glob("*.purge-copy*")) and not (folder / "frames" / "thu").exists()


def test_cli_prints_the_receipt_and_refuses_what_is_not_there(tmp_path, capsys):
    folder = _memory(tmp_path)
    assert main(["forget", "thu", "--purge", "--memory", str(folder)]) == 0
    out = capsys.readouterr().out
    head, _, body = out.partition("\n")
    assert head.startswith("c0001: purged video thu for good") and "purges/c0001.json" in head
    assert json.loads(body) == receipts(folder)[0]
    update_receipt(folder, "c0001", bucket={"at": "x", "versions_deleted": [], "objects_deleted": 2,
                                            "pending_until": None})
    assert receipts(folder)[0]["bucket"]["objects_deleted"] == 2
    assert main(["forget", "thu", "--purge", "--memory", str(folder)]) != 0
    assert "purged already, in c0001" in capsys.readouterr().err
    assert main(["forget", "nope", "--purge", "--memory", str(folder)]) != 0
    assert "no video 'nope'" in capsys.readouterr().err
