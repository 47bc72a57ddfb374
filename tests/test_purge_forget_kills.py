"""An undoable forget (and its undo) killed between keeping the video's copies and writing: the next writer puts
every copy where the settled change says (issue 47, item 1), so nothing of a live video is left in the change
log's place and nothing of a forgotten one in ``work/`` or ``voices/``."""

from __future__ import annotations

import json
from pathlib import Path

from memtools.changes import change_log
from memtools.store import Memory
from purge_support import EMBEDDER
from test_purge_bytes import _memory, child

CLI = "import sys; from memtools.cli import main; sys.exit(main(sys.argv[1:]))"


def _later_write(folder: Path) -> None:
    assert child("-c", CLI, "note", "tue@10", "a later change settles it", "--memory", str(folder)).returncode == 0


def test_a_forget_killed_after_keeping_its_copies_gives_them_back(tmp_path):
    folder = _memory(tmp_path)
    work = (folder / "work" / "mon" / "speech" / "0.json").read_text()
    killed = child("-c", CLI, "forget", "mon", "--memory", str(folder), fault="forget-kept")
    assert killed.returncode == -9
    assert not (folder / "work" / "mon").exists()  # moved aside before the kill
    _later_write(folder)
    assert (folder / "work" / "mon" / "speech" / "0.json").read_text() == work
    assert not (folder / "changes" / "c0001").exists()
    with Memory.open(folder, EMBEDDER) as memory:
        assert "mon" in memory.video_ids()
        assert [c.state for c in change_log(memory) if c.id == "c0001"] == ["abandoned"]


def test_an_undo_of_a_forget_killed_after_putting_vectors_back_removes_them(tmp_path):
    folder = _memory(tmp_path)
    voices = (folder / "voices" / "mon.json").read_bytes()
    assert child("-c", CLI, "forget", "mon", "--memory", str(folder)).returncode == 0
    killed = child("-c", CLI, "undo", "c0001", "--memory", str(folder), fault="undo-vectors-restored")
    assert killed.returncode == -9
    assert (folder / "voices" / "mon.json").exists()  # put back before the kill, the video not yet
    _later_write(folder)
    assert not (folder / "voices" / "mon.json").exists()  # the video is not back: neither are its vectors
    assert (folder / "changes" / "c0001" / "voices" / "mon.json").read_bytes() == voices  # still kept for an undo
    assert child("-c", CLI, "undo", "c0001", "--memory", str(folder)).returncode == 0
    assert (folder / "voices" / "mon.json").read_bytes() == voices
    assert not (folder / "changes" / "c0001" / "voices").exists() or not any(
        (folder / "changes" / "c0001" / "voices").iterdir())
    assert json.loads((folder / "work" / "mon" / "speech" / "0.json").read_text())["text"]
