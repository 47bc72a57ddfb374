"""The same import started while another run of it is still going (a closed terminal the user
thinks dead, an overlapping cron job, a retried tool call): it says so and waits, then joins the
other run's result or resumes what a run that died left, and exits 0; never a raw error.

The "other run" is held here in the test process (``import_turn``), so the second command's
instants are not left to chance; ``benchmarks/crash_random.py --first overlap`` races two real
processes at drawn instants.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from memtools.embed.testing import TestEmbedder
from memtools.importers.bulk import BulkResult, ImportLedger, finished_turn, import_key, import_turn
from memtools.store import Memory

SRC = Path(__file__).resolve().parents[2] / "src"


def _captions(path: Path, videos: int = 6) -> Path:
    path.write_text(json.dumps({f"v{i}": {"duration": 20.0, "timestamps": [[1.0, 5.0], [6.0, 9.0]],
                                          "sentences": [f"crack egg {i}", f"stir the pan {i}"]}
                                for i in range(videos)}), encoding="utf-8")
    return path


def _command(memory: Path, captions: Path) -> list[str]:
    return [str(Path(sys.executable).with_name("memtools")), "import-captions", str(captions), "--memory", str(memory),
            "--embedder", "test:16", "--batch-size", "2", "--no-progress"]


def _start(memory: Path, captions: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(SRC), "HF_HUB_OFFLINE": "1"}
    return subprocess.Popen(_command(memory, captions), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)


def _hold_turn(memory: Path, key: str, release: threading.Event, held: threading.Event, *, finish: bool) -> None:
    with Memory.open(memory, TestEmbedder(16)) as opened, import_turn(opened, key):
        held.set()
        release.wait(120)
        if finish:
            finished_turn(opened, key, 6)


def _key(captions: Path) -> str:
    return import_key([captions], kind="captions", video_id=None, title=None)


def _wait_for(proc: subprocess.Popen, text: str, timeout: float = 60) -> None:
    """Until the command says ``text`` on stderr (it prints one line before waiting)."""
    assert proc.stderr is not None
    deadline = time.monotonic() + timeout
    line = ""
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if text in line:
            return
        assert line or proc.poll() is None, f"exited {proc.returncode} before waiting"
    raise AssertionError(f"never said {text!r}; last line {line!r}")


def _videos(memory: Path) -> set[str]:
    with Memory.open(memory, TestEmbedder(16)) as opened:
        return set(opened.manifest.videos.ids("ready"))


def _held_run(tmp_path: Path, *, finish: bool) -> tuple[subprocess.CompletedProcess | subprocess.Popen, str, str]:
    captions = _captions(tmp_path / "c.json")
    memory = tmp_path / "m"
    subprocess.run(_command(memory, captions), check=True, capture_output=True,
                   env={**os.environ, "PYTHONPATH": str(SRC), "HF_HUB_OFFLINE": "1"})
    release, held = threading.Event(), threading.Event()
    holder = threading.Thread(target=_hold_turn, args=(memory, _key(captions), release, held),
                              kwargs={"finish": finish})
    holder.start()
    assert held.wait(60)
    proc = _start(memory, captions)
    try:
        _wait_for(proc, "another run of this same import is writing")
        time.sleep(0.5)
        assert proc.poll() is None  # still waiting while the other run holds its turn
    finally:
        release.set()
        holder.join(60)
    out, err = proc.communicate(timeout=120)
    return proc, out, err


def test_a_second_run_while_the_first_goes_waits_and_joins_its_result(tmp_path):
    proc, out, err = _held_run(tmp_path, finish=True)
    assert proc.returncode == 0, err[-2000:]
    assert "finished in another process" in out and "nothing was written twice" in out
    assert "Traceback" not in err
    assert _videos(tmp_path / "m") == {f"v{i}" for i in range(6)}


def test_a_second_run_after_the_first_died_does_the_work(tmp_path):
    proc, out, err = _held_run(tmp_path, finish=False)
    assert proc.returncode == 0, err[-2000:]
    assert "Imported 6 video(s)" in out and "Replaced 6 video(s)" in out
    assert _videos(tmp_path / "m") == {f"v{i}" for i in range(6)}


def test_a_ledger_left_by_a_killed_run_survives_a_run_that_joins(tmp_path):
    """A waiting run never deletes what it did not write: the turn's files stay consistent."""
    memory = tmp_path / "m"
    with Memory.create(memory, TestEmbedder(16)) as opened:
        ledger = ImportLedger(opened, "k")
        with import_turn(opened, "k"):
            ledger.start()
            ledger.add(["a"])
        with import_turn(opened, "k") as turn:
            assert turn.joined is None and ledger.landed() == {"a"}
        finished_turn(opened, "k", BulkResult(0, 0, 0.0).written)
        with import_turn(opened, "k") as turn:  # not waited: an earlier run's record is not joined
            assert turn.joined is None


def test_the_same_import_started_twice_at_once_on_a_new_memory_lands_once(tmp_path):
    """Both runs make the memory at the same instant: one creates it, the other waits and opens it."""
    captions = _captions(tmp_path / "c.json")
    memory = tmp_path / "m"
    runs = [_start(memory, captions) for _ in range(2)]
    done = [proc.communicate(timeout=180) for proc in runs]
    for proc, (_, err) in zip(runs, done, strict=True):
        assert proc.returncode == 0, err[-2000:]
        assert "Traceback" not in err
    assert _videos(memory) == {f"v{i}" for i in range(6)}
    checked = subprocess.run([str(Path(sys.executable).with_name("memtools")), "check", "--memory", str(memory)],
                             capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(SRC)})
    assert checked.returncode == 0, checked.stdout


def test_a_second_build_of_the_same_video_waits_for_the_first(tmp_path):
    """Two builds of one video share its checkpoint folder: the second waits for the first's turn
    (``memtools.builder.turns``) instead of discarding the folder under it, then finds the video done."""
    from memtools.builder.turns import take_build_turn
    from test_wallclock import CLI, SCRIPTED, make_video

    video = make_video(tmp_path / "garden.mp4")
    memory = tmp_path / "m"
    with Memory.create(memory, TestEmbedder(16)) as opened:
        release = take_build_turn(opened, "garden")
    build = [sys.executable, "-c", CLI, "build", str(video), "--memory", str(memory), "--vlm", SCRIPTED,
             "--embedder", "test:16", "--preset", "short", "--window-sec", "40", "--speech", "none"]
    proc = subprocess.Popen(build, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(SRC), "MEMTOOLS_ALLOW_MODEL_REQUESTS": "0"})
    try:
        _wait_for(proc, "another build of garden is running")
        time.sleep(0.5)
        assert proc.poll() is None  # still waiting while the other build holds the turn
    finally:
        release()
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 0, err[-2000:]
    assert _videos(memory) == {"garden"}
