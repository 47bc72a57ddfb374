"""A kill that leaves kuzu's log of a write: the log is dropped and the write rolled back, not replayed.

kuzu 0.11.3 replays a logged ``DETACH DELETE`` of one video with edges of other videos lost (found by
``benchmarks/crash_random.py --ops purge --modes commit``: 4 of 7 edges of ``vid00`` gone after a kill inside the
delete of ``vid03``). kuzu checkpoints at each COMMIT, so the log outlives a COMMIT only when the kill lands inside
it; here the engine's automatic checkpoint is turned off in the killed writer, so that the log is certainly left,
and the kill comes once the delete's COMMIT has returned (``graph-data-committed``, before the write's mark).
``memtools.store.writes.engine_log.discard_log`` drops that log; the delete is rolled back whole and every other
video keeps every edge. ladybug replays its log right and is left to do so.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import kuzu

from memtools.embed.testing import TestEmbedder
from memtools.store import Memory
from memtools.testing import kitchen_graph

SRC = Path(__file__).resolve().parents[2] / "src"
KILLED_DELETE = textwrap.dedent("""
    import functools, sys
    import kuzu
    class NoAutoCheckpoint(kuzu.Database):
        __init__ = functools.partialmethod(kuzu.Database.__init__, auto_checkpoint=False)
    kuzu.Database = NoAutoCheckpoint
    from memtools.embed.testing import TestEmbedder
    from memtools.store import Memory
    with Memory.open(sys.argv[1], TestEmbedder(64)) as memory:
        memory.delete_video(sys.argv[2])
""")


def _edges(folder: Path) -> dict[str, int]:
    db = kuzu.Database(str(folder / "graph.kuzu"), read_only=True)
    try:
        conn = kuzu.Connection(db)
        result = conn.execute("MATCH (a)-[r:Rel]->() RETURN a.video_id, count(r)")
        out: dict[str, int] = {}
        while result.has_next():
            vid, n = result.get_next()
            out[vid] = out.get(vid, 0) + int(n)
        return out
    finally:
        db.close()


def test_a_killed_delete_leaves_its_log_which_is_dropped_and_the_delete_rolled_back(tmp_path, caplog):
    folder = tmp_path / "mem"
    with Memory.create(folder, TestEmbedder(64)) as memory:
        memory.write_videos([kitchen_graph(f"v{i}") for i in range(6)])
    before = _edges(folder)
    assert len(before) == 6 and all(before.values())
    env = {**os.environ, "PYTHONPATH": str(SRC), "MEMTOOLS_FAULT_POINT": "graph-data-committed:1"}
    done = subprocess.run([sys.executable, "-c", KILLED_DELETE, str(folder), "v3"], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == -9, done.stderr[-2000:]
    assert (folder / "graph.kuzu.wal").exists() and not (folder / "graph.kuzu.shadow").exists()
    with Memory.open(folder, TestEmbedder(64)) as memory:
        memory.recover_if_left()  # the writer's recovery (opening may have run it already)
        assert memory.video_ids() == [f"v{i}" for i in range(6)]
    assert "dropped the graph engine's log of the interrupted write" in caplog.text
    assert not (folder / "graph.kuzu.wal").exists()
    assert _edges(folder) == before  # every video keeps every edge, v3 included
    with Memory.open(folder, TestEmbedder(64)) as memory:
        assert memory.delete_video("v3")  # the same delete again, uninterrupted
    assert _edges(folder) == {vid: n for vid, n in before.items() if vid != "v3"}


def test_a_checkpoint_cut_short_puts_the_graph_back_as_the_delete_found_it(tmp_path, caplog):
    """A kill inside the checkpoint of a delete leaves kuzu's shadow pages, which kuzu 0.11.3 finishes with other
    videos' edges lost. Here the writer is killed once its mark is committed (the delete and the mark in the log,
    the checkpoint not begun) and the shadow pages of a checkpoint cut short are laid beside the graph: the
    writer's copy of the graph as the delete found it is put back instead, and the delete rolled back whole."""
    folder = tmp_path / "mem"
    with Memory.create(folder, TestEmbedder(64)) as memory:
        memory.write_videos([kitchen_graph(f"v{i}") for i in range(6)])
    before = _edges(folder)
    env = {**os.environ, "PYTHONPATH": str(SRC), "MEMTOOLS_FAULT_POINT": "graph-marked:1"}
    done = subprocess.run([sys.executable, "-c", KILLED_DELETE, str(folder), "v3"], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == -9, done.stderr[-2000:]
    snapshots = list(folder.glob(".memtools-graph-before-*"))
    assert len(snapshots) == 1 and (folder / "graph.kuzu.wal").exists()
    (folder / "graph.kuzu.shadow").write_bytes(os.urandom(4096 * 3))  # the checkpoint, cut short
    with Memory.open(folder, TestEmbedder(64)) as memory:
        memory.recover_if_left()
        assert memory.video_ids() == [f"v{i}" for i in range(6)]
    assert "the graph as the write found it was put back" in caplog.text
    assert not [p.name for p in folder.iterdir() if p.name.startswith(".memtools-graph-")
                or p.name.startswith("graph.kuzu.")]
    assert _edges(folder) == before
    with Memory.open(folder, TestEmbedder(64)) as memory:
        assert memory.delete_video("v3")  # the same delete again, uninterrupted: no copy is left behind
    assert _edges(folder) == {vid: n for vid, n in before.items() if vid != "v3"}
    assert not list(folder.glob(".memtools-graph-*"))


def test_a_snapshot_of_no_pending_write_is_removed_and_never_put_back(tmp_path):
    folder = tmp_path / "mem"
    with Memory.create(folder, TestEmbedder(64)) as memory:
        memory.write_videos([kitchen_graph(f"v{i}") for i in range(2)])
    before = _edges(folder)
    (folder / ".memtools-graph-before-0123abcd").write_bytes(b"not a graph")  # a kill after the write ended
    with Memory.open(folder, TestEmbedder(64)) as memory:
        assert memory.delete_video("v1")
    assert not list(folder.glob(".memtools-graph-*"))
    assert _edges(folder) == {"v0": before["v0"]}
