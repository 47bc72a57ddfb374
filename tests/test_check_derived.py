"""``memtools check`` verifies the derived files, and ``memtools repair`` makes each again whatever its state
(issue 51, item 4): ``library.sqlite`` (people, entities across videos, activities) with a table dropped, a
row altered, garbage, cut short or a folder in its place; ``navigation.sqlite`` likewise; the time index
inside ``videos.sqlite``; and catalog values no video can have (a duration of 1e308 or infinity)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from memtools.changes import label_person
from memtools.cli import main
from memtools.embed.testing import TestEmbedder
from memtools.store import Memory
from memtools.testing import kitchen_graph
from memtools.tools import MemoryTools
from people_support import near, people, save, talk, voice

EMBEDDER = TestEmbedder(32)


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """Bob (voice 1) and Carol (voice 2) speak in ``mon``; Bob again in ``tue``; written out of id order."""
    path = tmp_path_factory.mktemp("derived") / "m"
    with Memory.create(path, EMBEDDER) as memory:
        for vid, centroids in (("tue", {"S1": near(1, 5)}), ("mon", {"S1": voice(1), "S2": voice(2)})):
            save(path, vid, centroids)
            memory.write_video(talk(vid))
        label_person(memory, "mon/S1", "Bob")
        memory.write_video(kitchen_graph("wed"))
    return path


@pytest.fixture()
def mem(template, tmp_path) -> Path:
    path = tmp_path / "m"
    shutil.copytree(template, path)
    return path


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out + out.err


def bob(path: Path) -> list[tuple[str, str]]:
    """The clusters Bob's timeline shows (video, label), one person expected."""
    with Memory.open(path, EMBEDDER) as memory:
        found = MemoryTools(memory).get_entity_timeline(name="Bob").people
    assert len(found) == 1, found
    return [(k.video_id, k.label) for k in found[0].links]


def sql(path: Path, *statements: str) -> None:
    with sqlite3.connect(path) as conn:
        for statement in statements:
            conn.execute(statement)


def test_the_template_is_whole_even_deep(mem, capsys):
    """No false alarm: videos written out of id order, a person named, deep check recomputing everything."""
    assert bob(mem) == [("mon", "S1"), ("tue", "S1")]
    code, out = run(capsys, "check", "--memory", str(mem))
    assert code == 0, out
    code, out = run(capsys, "check", "--deep", "--memory", str(mem))
    assert code == 0, out


@pytest.mark.parametrize("damage", [
    "DROP TABLE clusters", "DROP TABLE ids", "DROP TABLE activities", "DELETE FROM members",
    "UPDATE members SET lib_id = 'lib/entity_0999' WHERE rowid = 1",
    "UPDATE activities SET grp = 'nothing' WHERE rowid = 1", "UPDATE meta SET value = 1 WHERE key = 'next_person'",
])
def test_a_damaged_library_table_is_found_and_computed_again(mem, capsys, damage):
    before = people(mem)
    sql(mem / "library.sqlite", damage)
    code, out = run(capsys, "check", "--memory", str(mem))
    assert code == 1 and "library.sqlite:" in out, out
    table = damage.split()[2] if damage.startswith(("DROP", "DELETE")) else damage.split()[1]
    assert table in out, out
    code, out = run(capsys, "repair", "--memory", str(mem))
    assert code == 0, out
    assert "library.sqlite" in out and (mem / "library.sqlite.damaged").is_file()
    assert people(mem) == before and bob(mem) == [("mon", "S1"), ("tue", "S1")]
    assert run(capsys, "check", "--deep", "--memory", str(mem))[0] == 0


def test_two_voices_made_one_person_by_hand_are_found(mem, capsys):
    """``UPDATE clusters SET person_id``: Bob's timeline would show Carol's voice as his."""
    person = people(mem)[("mon", "S1")]
    sql(mem / "library.sqlite", f"UPDATE clusters SET person_id = '{person}' WHERE video_id = 'mon' AND label = 'S2'")
    assert bob(mem) == [("mon", "S1"), ("mon", "S2"), ("tue", "S1")]  # what a reader would be told
    code, out = run(capsys, "check", "--memory", str(mem))
    assert code == 1 and "clusters" in out and "mon" in out, out
    assert run(capsys, "repair", "--memory", str(mem))[0] == 0
    assert bob(mem) == [("mon", "S1"), ("tue", "S1")]


def test_a_change_only_the_deep_check_sees(mem, capsys):
    """Both ``clusters`` and ``ids`` changed alike: consistent inside the file, only recomputing finds it."""
    person = people(mem)[("mon", "S1")]
    sql(mem / "library.sqlite",
        f"UPDATE clusters SET person_id = '{person}' WHERE video_id = 'mon' AND label = 'S2'",
        f"UPDATE ids SET lib_id = '{person}' WHERE video_id = 'mon' AND entity_type = 'person:voice' AND key = 'S2'",
        "UPDATE occurrences SET t_start = t_start + 1 WHERE rowid = 1")
    code, out = run(capsys, "check", "--deep", "--memory", str(mem))
    assert code == 1 and "clusters differ" in out and "occurrences differ" in out, out
    assert run(capsys, "repair", "--memory", str(mem))[0] == 0
    assert bob(mem) == [("mon", "S1"), ("tue", "S1")]
    assert run(capsys, "check", "--deep", "--memory", str(mem))[0] == 0


def _garbage(file: Path) -> None:
    file.write_bytes(b"this is not a database " * 500)


def _truncated(file: Path) -> None:
    file.write_bytes(file.read_bytes()[:len(file.read_bytes()) // 3])


def _folder(file: Path) -> None:
    file.unlink()
    (file / "inside").mkdir(parents=True)


def _empty(file: Path) -> None:
    file.write_bytes(b"")


@pytest.mark.parametrize("spoil", [_garbage, _truncated, _folder, _empty])
def test_a_spoilt_library_file_is_set_aside_and_computed_again(mem, capsys, spoil):
    spoil(mem / "library.sqlite")
    code, out = run(capsys, "check", "--memory", str(mem))
    assert code == 1 and "library" in out and "Traceback" not in out, out
    code, out = run(capsys, "repair", "--memory", str(mem))
    assert code == 0, out
    assert (mem / "library.sqlite").is_file()
    assert sorted(bob(mem)) == [("mon", "S1"), ("tue", "S1")]
    assert run(capsys, "check", "--deep", "--memory", str(mem))[0] == 0


def test_a_write_on_a_garbage_library_file_computes_it_again(mem):
    _garbage(mem / "library.sqlite")
    with Memory.open(mem, EMBEDDER) as memory:
        memory.write_video(kitchen_graph("thu"))
        assert "thu" in memory.video_ids()
    assert bob(mem) == [("mon", "S1"), ("tue", "S1")]


def test_a_write_on_a_layer_that_lost_a_table_computes_it_whole(mem, capsys):
    """Adding one video to a layer without ``clusters`` would keep only that video's people."""
    sql(mem / "library.sqlite", "DROP TABLE clusters")
    with Memory.open(mem, EMBEDDER) as memory:
        memory.write_video(kitchen_graph("thu"))
    assert bob(mem) == [("mon", "S1"), ("tue", "S1")]
    assert run(capsys, "check", "--deep", "--memory", str(mem))[0] == 0


@pytest.mark.parametrize("spoil", [_garbage, _folder, _empty])
def test_a_spoilt_navigation_file_is_made_again(mem, capsys, spoil):
    spoil(mem / "navigation.sqlite")
    code, out = run(capsys, "check", "--memory", str(mem))
    assert code == 1 and "navigation" in out, out
    code, out = run(capsys, "repair", "--memory", str(mem))
    assert code == 0, out
    assert run(capsys, "check", "--deep", "--memory", str(mem))[0] == 0


def test_an_altered_navigation_row_is_found_by_the_deep_check(mem, capsys):
    sql(mem / "navigation.sqlite", "UPDATE VideoOutline SET video = replace(video, 'kitchen', 'garage') "
                                   "WHERE video_id = 'wed'")
    assert run(capsys, "check", "--memory", str(mem))[0] == 0  # the counts agree: only recomputing sees it
    code, out = run(capsys, "check", "--deep", "--memory", str(mem))
    assert code == 1 and "wed" in out and "navigation rows differ" in out, out
    assert run(capsys, "repair", "--memory", str(mem))[0] == 0
    assert run(capsys, "check", "--deep", "--memory", str(mem))[0] == 0


def test_a_lost_time_index_table_is_damage_not_a_crash(mem, capsys):
    sql(mem / "videos.sqlite", "DROP TABLE video_times")
    code, out = run(capsys, "check", "--memory", str(mem))
    assert code == 1 and "[times]" in out, out
    assert run(capsys, "repair", "--memory", str(mem))[0] == 0
    assert run(capsys, "check", "--memory", str(mem))[0] == 0


@pytest.mark.parametrize("duration", ["1e308", "9e999", "-9e999", "-1", "315576001"])
def test_a_duration_no_video_can_have_is_damage_repaired_from_the_graph(mem, capsys, duration):
    sql(mem / "videos.sqlite", f"UPDATE videos SET duration = {duration} WHERE id = 'wed'")
    code, out = run(capsys, "check", "--memory", str(mem))
    assert code == 1 and "'wed'" in out and "duration" in out, out
    code, out = run(capsys, "repair", "--memory", str(mem))
    assert code == 0, out
    with Memory.open(mem, EMBEDDER) as memory:
        assert memory.manifest.videos["wed"].duration == kitchen_graph("wed").video.duration
