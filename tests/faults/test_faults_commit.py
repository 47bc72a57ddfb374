"""A kill inside the graph engine's own commit, and what readers and ``check`` make of a killed write.

kuzu 0.11.3 and ladybug can keep a transaction's small, logged statements (the write's mark) and
drop the rows it COPY'd when a kill lands in the checkpoint of its COMMIT (docs/storage.md, "What
the engines guarantee"). Recovery must then verify the data, not trust the mark: the tests below
take the data out of the graph behind a committed mark, as such a kill does, and expect the write
rolled back everywhere (a replaced video removed, to be written again), never rolled forward onto
a graph that lacks it.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from fault_helpers import EMBEDDER, check, cli, mem, searchable, template  # noqa: F401 - fixtures

from memtools.store import Memory
from memtools.store.catalog.manifest import read_manifest
from memtools.store.graph.cypher import KuzuGraph
from memtools.testing import kitchen_graph

SRC = Path(__file__).resolve().parents[2] / "src"
WRITER = textwrap.dedent("""
    import sys
    from memtools.embed.testing import TestEmbedder
    from memtools.store import Memory
    from memtools.testing import kitchen_graph
    graph = kitchen_graph(sys.argv[2])
    if len(sys.argv) > 3:
        graph.video = graph.video.model_copy(update={"title": sys.argv[3]})
    with Memory.open(sys.argv[1], TestEmbedder(64)) as memory:
        memory.write_video(graph)
""")


def _killed_write(mem: Path, video_id: str, **fault: str) -> None:
    title = fault.pop("WRITER_TITLE", None)
    env = {**os.environ, "PYTHONPATH": str(SRC), **fault}
    done = subprocess.run([sys.executable, "-c", WRITER, str(mem), video_id, *([title] if title else [])],
                          capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == -9, done.stderr[-2000:]


def _engine_drops_the_data(mem: Path, video_id: str) -> None:
    """What a kill in the checkpoint of the write's COMMIT leaves: the mark, not the COPY'd rows."""
    graph = KuzuGraph(mem / "graph.kuzu", read_only=False)
    try:
        graph.begin()
        graph.delete_videos([video_id])
        graph.commit()
        assert graph._run("MATCH (m:WriteMark) RETURN count(m)")[0][0] == 1
    finally:
        graph.close()


def test_a_mark_whose_new_video_the_graph_lost_is_rolled_back_not_forward(mem, capsys):
    _killed_write(mem, "k3", MEMTOOLS_FAULT_POINT="graph-committed")
    _engine_drops_the_data(mem, "k3")
    with Memory.open(mem, EMBEDDER, recover=False) as memory:
        memory.finish_indexes()  # the next writer: recovers first
    code, out = check(mem, capsys)
    assert code == 0, out
    assert "k3" not in read_manifest(mem).videos  # never listed as ready while the graph lacks it
    assert searchable(mem) == {"kitchen", "k2"}
    with Memory.open(mem, EMBEDDER) as memory:  # the same write again lands whole
        memory.write_video(kitchen_graph("k3"))
    assert check(mem, capsys)[0] == 0
    assert searchable(mem) == {"kitchen", "k2", "k3"}


def _titles(mem: Path) -> dict[str, str]:
    from memtools.tools import MemoryTools

    with Memory.open(mem, EMBEDDER) as memory:
        return {v.video_id: v.title for v in MemoryTools(memory).list_videos().videos}


def test_a_replace_whose_commit_the_engine_lost_keeps_the_old_version(mem, capsys):
    """The engine kept the replace's DELETE and lost its COPY: the old version comes back whole from
    the copy the write kept aside (memtools.store.writes.kept), nothing is removed, nothing is owed."""
    before = _titles(mem)
    _killed_write(mem, "kitchen", MEMTOOLS_FAULT_POINT="graph-committed", WRITER_TITLE="the new version")
    _engine_drops_the_data(mem, "kitchen")
    assert _titles(mem) == before  # a reader (it recovers first) finds the old version, not a gap
    code, out = check(mem, capsys)
    assert code == 0, out
    assert searchable(mem) == {"kitchen", "k2"}
    assert not (mem / ".write-kept").exists() and not (mem / "lost-videos.json").exists()


def test_a_replace_whose_old_copy_is_unreadable_names_the_video_until_written_again(mem, capsys):
    _killed_write(mem, "kitchen", MEMTOOLS_FAULT_POINT="graph-committed", WRITER_TITLE="the new version")
    _engine_drops_the_data(mem, "kitchen")
    (mem / ".write-kept").write_text("{cut short", encoding="utf-8")
    code, out, _ = cli("recover", "--memory", str(mem), capsys=capsys)
    assert code == 0 and "kitchen" in out and "removed" in out
    assert _titles(mem) == {"k2": _titles(mem)["k2"]}
    code, out = check(mem, capsys)
    assert code == 0 and "kitchen" in out and "write them again" in out, out
    code, out, _ = cli("log", "--memory", str(mem), capsys=capsys)
    assert "kitchen" in out and "write them again" in out
    from memtools.tools import MemoryTools

    with Memory.open(mem, EMBEDDER) as memory:
        assert "kitchen" in MemoryTools(memory).list_videos().warning
        memory.write_video(kitchen_graph("kitchen"))  # written again: no longer owed
    assert not (mem / "lost-videos.json").exists()
    code, out = check(mem, capsys)
    assert code == 0 and "write them again" not in out


def test_check_tells_a_pending_recovery_from_damage(mem, capsys):
    _killed_write(mem, "k3", MEMTOOLS_FAULT_POINT="graph-inserted")
    code, out = check(mem, capsys)
    assert code == 3, out
    assert "RECOVERY PENDING" in out and f"memtools recover --memory {mem}" in out
    assert "DAMAGED" not in out and "repair" not in out
    code, out, _ = cli("recover", "--memory", str(mem), capsys=capsys)
    assert code == 0 and "rolled back an interrupted write of video(s) k3" in out
    assert check(mem, capsys)[0] == 0
    code, out, _ = cli("recover", "--memory", str(mem), capsys=capsys)
    assert code == 0 and "Nothing to recover" in out


def test_a_reader_finishes_a_commit_killed_in_its_checkpoint(mem, capsys):
    """Shadow pages left by a kill inside the engine's checkpoint cannot be replayed read-only: a
    reader that may write the folder finishes the recovery itself, then reads."""
    for delay in (0.005, 0.01, 0.02, 0.04, 0.07, 0.1, 0.15, 0.2, 0.3, 0.5):
        path = mem.with_name(f"memory-{delay}")
        import shutil

        shutil.copytree(mem, path)
        _killed_write(path, "k3", MEMTOOLS_FAULT_COMMIT=f"1:{delay}")
        if (path / "graph.kuzu.shadow").exists():
            break
    else:
        pytest.skip("no kill landed inside the checkpoint on this machine")
    code, out = check(path, capsys)
    assert code == 3 and "graph.kuzu.shadow" in out, out
    from memtools.tools import MemoryTools

    with Memory.open(path, EMBEDDER) as memory:
        videos = {v.video_id for v in MemoryTools(memory).list_videos().videos}
    assert videos in ({"kitchen", "k2"}, {"kitchen", "k2", "k3"})
    assert not (path / "graph.kuzu.shadow").exists()
    assert check(path, capsys)[0] == 0


CREATOR = textwrap.dedent("""
    import sys
    from memtools.embed.testing import TestEmbedder
    from memtools.store import Memory
    from memtools.testing import kitchen_graph
    with Memory.create(sys.argv[1], TestEmbedder(64)) as memory:
        memory.write_video(kitchen_graph(sys.argv[2]))
""")


def test_a_memory_whose_creation_was_killed_is_created_again(tmp_path, capsys):
    path = tmp_path / "new"
    done = subprocess.run([sys.executable, "-c", CREATOR, str(path), "kitchen"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(SRC),
                                            "MEMTOOLS_FAULT_POINT": "create-catalog-made"})
    assert done.returncode == -9 and path.is_dir() and not (path / "memtools.json").exists(), done.stderr[-2000:]
    (path / "work" / "kitchen").mkdir(parents=True)  # a build's checkpoints survive the restart
    with Memory.create(path, EMBEDDER) as memory:  # the same command again
        memory.write_video(kitchen_graph("kitchen"))
    assert check(path, capsys)[0] == 0
    assert (path / "work" / "kitchen").is_dir() and not (path / ".memtools-creating").exists()
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(Exception, match="exists and is not a memtools memory"):
        Memory.create(other, EMBEDDER)
    assert (other / "notes.txt").read_text() == "mine"


def test_a_first_write_killed_inside_lance_creating_its_table_is_rolled_back(tmp_path, capsys):
    """A kill inside lance's ``create_table`` (found by crash_random: a build's first write at 1.1 s) leaves a
    ``nodes.lance`` folder that lists as a table and cannot be opened; the write's journal says the table did
    not exist before, so recovery drops it without opening it, and the same write again lands."""
    import lancedb

    path = tmp_path / "new"
    done = subprocess.run([sys.executable, "-c", CREATOR, str(path), "kitchen"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(SRC),
                                            "MEMTOOLS_FAULT_POINT": "journal-written"})
    assert done.returncode == -9, done.stderr[-2000:]
    half = lancedb.connect(str(path / "vectors"))
    half.create_table("nodes", data=[{"x": 1}])
    for version in (path / "vectors" / "nodes.lance" / "_versions").iterdir():  # what the kill left
        version.unlink()
    assert "nodes" in half.list_tables().tables
    with pytest.raises(Exception, match="not found|was not found"):
        half.open_table("nodes")
    code, out, err = cli("recover", "--memory", str(path), capsys=capsys)
    assert code == 0, out + err
    assert check(path, capsys)[0] == 0
    with Memory.open(path, EMBEDDER) as memory:  # the same write again
        memory.write_video(kitchen_graph("kitchen"))
    assert check(path, capsys)[0] == 0 and searchable(path) == {"kitchen"}


LADYBUG = textwrap.dedent("""
    import os, signal, sys
    from memtools.embed.testing import TestEmbedder
    from memtools.store import Memory
    from memtools.testing import kitchen_graph
    path, step = sys.argv[1], sys.argv[2]
    if step == "create":
        with Memory.create(path, TestEmbedder(64), graph_engine="ladybug") as memory:
            memory.write_video(kitchen_graph("kitchen"))
    elif step == "killed-at-close":  # a write's last commit made, its log not yet checkpointed into the file
        import ladybug
        connection = ladybug.Connection(ladybug.Database(path + "/graph.lbug"))
        connection.execute("MATCH (m:WriteMark) SET m.token = m.token")
        os.kill(os.getpid(), signal.SIGKILL)
    else:  # a reader
        with Memory.open(path, TestEmbedder(64)) as memory:
            print(" ".join(sorted(memory.video_ids())))
""")


def _ladybug(*argv: str) -> subprocess.CompletedProcess:
    """ladybug in a process of its own (it cannot be loaded beside kuzu, which this process has loaded)."""
    return subprocess.run([sys.executable, "-c", *argv], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(SRC)})


@pytest.mark.skipif(importlib.util.find_spec("ladybug") is None, reason="the ladybug extra is not installed")
def test_a_ladybug_checkpoint_cut_short_is_a_pending_recovery_not_a_busy_memory(tmp_path):
    """ladybug sets its write-ahead log aside as ``graph.lbug.wal.checkpoint`` while it checkpoints; a kill then
    (found by crash_random: a delete at 0.77 s) left a memory that every read called "being updated, try again"
    forever. It is a pending recovery: check names `memtools recover`, and a reader that may write finishes it."""
    path = tmp_path / "lb"
    assert _ladybug(LADYBUG, str(path), "create").returncode == 0
    assert _ladybug(LADYBUG, str(path), "killed-at-close").returncode == -9
    (path / "graph.lbug.wal").rename(path / "graph.lbug.wal.checkpoint")  # the log as ladybug's checkpoint holds it
    (path / ".write-intent").touch()  # and the killed writer's intent, as the kill left them
    main = "import sys; from memtools.cli import main; sys.exit(main(sys.argv[1:]))"
    said = _ladybug(main, "check", "--memory", str(path))
    assert said.returncode == 3, said.stdout + said.stderr
    assert "RECOVERY PENDING" in said.stdout and f"memtools recover --memory {path}" in said.stdout
    read = _ladybug(LADYBUG, str(path), "read")  # a reader that may write recovers, then reads
    assert read.returncode == 0 and read.stdout.split() == ["kitchen"], read.stderr[-2000:]
    assert not (path / "graph.lbug.wal.checkpoint").exists()
    assert _ladybug(main, "check", "--memory", str(path)).returncode == 0


def test_a_manifest_cut_short_by_a_kill_after_the_last_write_is_cleared_by_the_next_open(mem, capsys):
    """A kill inside the last fold's manifest write leaves ``.memtools-*.json``; the same import run again
    finds every video landed and writes nothing, so the next open (any command) clears it."""
    (mem / ".memtools-cut0short.json").write_text('{"version": 1, "vid', encoding="utf-8")
    with Memory.open(mem, EMBEDDER):
        pass
    assert not list(mem.glob(".memtools-*.json"))
    assert check(mem, capsys)[0] == 0
