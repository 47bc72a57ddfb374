"""Writes that fail half-way: a full disk at each storage boundary, kill -9 at each write phase,
two writers at once. Afterwards the memory is whole (``check`` exits 0), or reads refuse with a
message naming ``memtools repair`` and the repair makes it whole; no video is lost silently."""

from __future__ import annotations

import errno
import textwrap
from concurrent.futures import ThreadPoolExecutor

import pytest
from fault_helpers import EMBEDDER, check, cli, mem, run_python, searchable, template  # noqa: F401 - fixtures

from memtools.errors import MemoryDamaged, StoreError
from memtools.store import Memory
from memtools.store.catalog.manifest import read_manifest
from memtools.testing import kitchen_graph
from memtools.tools import MemoryTools


def _enospc(*_args, **_kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def _write_fails_and_nothing_changes(mem, capsys, video_id: str) -> None:
    generation = read_manifest(mem).generation
    with Memory.open(mem, EMBEDDER) as memory, pytest.raises(StoreError, match="No space left on device"):
        memory.write_video(kitchen_graph(video_id))
    assert read_manifest(mem).generation == generation
    assert set(read_manifest(mem).videos) == {"kitchen", "k2"}
    code, out = check(mem, capsys)
    assert code == 0, out


@pytest.mark.parametrize("video_id", ["k3", "kitchen"])  # a new video, and one replacing an old one
def test_disk_full_in_the_vector_store(mem, capsys, monkeypatch, video_id):
    from lancedb.table import LanceTable

    monkeypatch.setattr(LanceTable, "add", _enospc)
    _write_fails_and_nothing_changes(mem, capsys, video_id)
    monkeypatch.undo()
    assert searchable(mem) == {"kitchen", "k2"}


@pytest.mark.parametrize("video_id", ["k3", "kitchen"])
def test_disk_full_while_the_graph_copies(mem, capsys, monkeypatch, video_id):
    import kuzu

    execute = kuzu.Connection.execute

    def copy_fails(self, query, *args, **kwargs):  # kuzu's own call, the graph store's boundary
        if isinstance(query, str) and query.startswith("COPY Rel"):
            raise RuntimeError("IO exception: Cannot write to file: No space left on device")
        return execute(self, query, *args, **kwargs)

    monkeypatch.setattr(kuzu.Connection, "execute", copy_fails)
    _write_fails_and_nothing_changes(mem, capsys, video_id)
    monkeypatch.undo()
    assert searchable(mem) == {"kitchen", "k2"}
    with Memory.open(mem, EMBEDDER) as memory:  # the old video's edges survived the rolled-back COPY
        assert MemoryTools(memory).get_relations("kitchen/macro_0002/evt_001").outgoing


def test_disk_full_when_the_manifest_is_written(mem, capsys, monkeypatch):
    import memtools.store.writes.batch as memory_module  # the write path of Memory

    monkeypatch.setattr(memory_module, "write_manifest", _enospc)
    with Memory.open(mem, EMBEDDER) as memory, pytest.raises(OSError, match="No space left"):
        memory.write_video(kitchen_graph("k3"))
    monkeypatch.undo()
    code, out = check(mem, capsys)  # check changes nothing: the journal is left for a writer
    assert code == 3 and ".write-journal" in out and "memtools recover" in out, out
    with Memory.open(mem, EMBEDDER) as memory:  # a reader that may write finishes the committed k3 first
        hits = MemoryTools(memory).search_nodes("the pan catches fire", top_k=50).hits
    assert {h.video_id for h in hits} == {"kitchen", "k2", "k3"}
    assert check(mem, capsys)[0] == 0
    assert read_manifest(mem).videos["k3"].counts == read_manifest(mem).videos["kitchen"].counts


def test_the_next_write_finishes_a_write_whose_manifest_failed(mem, capsys, monkeypatch):
    import memtools.store.writes.batch as memory_module

    monkeypatch.setattr(memory_module, "write_manifest", _enospc)
    with Memory.open(mem, EMBEDDER) as memory, pytest.raises(OSError, match="No space left"):
        memory.write_video(kitchen_graph("k3"))
    monkeypatch.undo()
    with Memory.open(mem, EMBEDDER) as memory:  # no repair: the writer rolls the committed k3 forward first
        memory.write_video(kitchen_graph("k4"))
    assert check(mem, capsys)[0] == 0
    assert searchable(mem) == {"kitchen", "k2", "k3", "k4"}


def test_a_write_refuses_to_start_on_a_damaged_memory(mem, capsys):
    with Memory.open(mem, EMBEDDER) as memory:  # rows of a video the manifest does not list
        index = memory.vectors_unchecked
        index.replace_videos([], [dict(row, id="stray", video_id="stray") for row in
                                  index.nodes().search().limit(1).to_list()])
    with Memory.open(mem, EMBEDDER) as memory, pytest.raises(MemoryDamaged) as refused:
        memory.write_video(kitchen_graph("k3"))
    assert "refusing to write" in str(refused.value) and "memtools repair --memory" in str(refused.value)
    assert "rows but the manifest lists" in str(refused.value)
    assert set(read_manifest(mem).videos) == {"kitchen", "k2"}
    assert cli("repair", "--memory", str(mem), capsys=capsys)[0] == 0
    with Memory.open(mem, EMBEDDER) as memory:
        memory.write_video(kitchen_graph("k3"))
    assert check(mem, capsys)[0] == 0


WRITER = textwrap.dedent("""
    import os, signal, sys, tempfile
    from memtools.embed.testing import TestEmbedder
    from memtools.store import Memory
    from memtools.store.graph import cypher as graph
    from memtools.store.writes import recovery
    from memtools.store.writes import batch as memory_module
    from memtools.testing import kitchen_graph

    path, phase, video_id = sys.argv[1:4]

    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    if phase == "lance-written":          # vectors written, graph transaction not begun
        graph.KuzuGraph.begin = die
    elif phase == "kuzu-committing":      # graph rows copied inside the open transaction
        graph.KuzuGraph.commit = die
    elif phase == "kuzu-data-committed":  # the data's transaction committed, the write's mark not yet
        commit = graph.KuzuGraph.commit
        graph.KuzuGraph.commit = lambda self: (commit(self), die())
    elif phase == "kuzu-committed":       # graph committed (the mark too), manifest not yet written
        mark = recovery.commit_mark
        recovery.commit_mark = lambda memory, kuzu, journal: (mark(memory, kuzu, journal), die())
    elif phase == "manifest":             # half of the new manifest in its temp file
        def half(folder, manifest):
            fd, _ = tempfile.mkstemp(prefix=".memtools-", suffix=".json", dir=folder)
            text = manifest.model_dump_json()
            os.write(fd, text[: len(text) // 2].encode())
            die()
        memory_module.write_manifest = half
    with Memory.open(path, TestEmbedder(64)) as memory:
        memory.write_video(kitchen_graph(video_id))
    print("finished")
""")


@pytest.mark.slow
@pytest.mark.parametrize("phase, video_id", [
    ("lance-written", "k3"), ("lance-written", "kitchen"), ("kuzu-committing", "k3"),
    ("kuzu-data-committed", "k3"), ("kuzu-data-committed", "kitchen"), ("kuzu-committed", "k3"), ("manifest", "k3"),
])
def test_kill_9_at_each_write_phase(mem, capsys, phase, video_id):
    done = run_python(WRITER, str(mem), phase, video_id)
    assert done.returncode == -9 and "finished" not in done.stdout, done.stderr
    # Readers are not stuck behind the dead writer's intent file, and never see half a write:
    # either the memory reads whole, or every read names the damage and `memtools repair`.
    try:
        seen = searchable(mem)
    except MemoryDamaged as exc:
        assert "memtools repair --memory" in str(exc)
        seen = None
    if seen is not None:  # whole to a reader; at most the journal waits for the next writer
        code, out = check(mem, capsys)
        assert code == 0 or out.count("  - [") == 1 and "leftovers of an interrupted write: .write-journal" in out, out
    code, out, _ = cli("repair", "--memory", str(mem), capsys=capsys)
    assert code == 0, out
    assert check(mem, capsys)[0] == 0
    videos = set(read_manifest(mem).videos)
    committed = phase in ("kuzu-committed", "manifest")
    assert videos == ({"kitchen", "k2", "k3"} if committed else {"kitchen", "k2"})
    assert searchable(mem) == videos  # everything listed is searchable; the old videos are never lost
    assert not list(mem.glob(".memtools-*.json")) and not (mem / ".write-intent").exists()


@pytest.mark.slow
def test_two_writer_processes_at_once_both_land(mem, capsys):
    writer = textwrap.dedent("""
        import sys
        from memtools.embed.testing import TestEmbedder
        from memtools.store import Memory
        from memtools.testing import kitchen_graph
        with Memory.open(sys.argv[1], TestEmbedder(64)) as memory:
            for vid in sys.argv[2:]:
                memory.write_video(kitchen_graph(vid))
    """)
    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda ids: run_python(writer, str(mem), *ids), [("a1",), ("b1",)]))
    assert [r.returncode for r in runs] == [0, 0], [r.stderr[-2000:] for r in runs]
    assert check(mem, capsys)[0] == 0
    assert searchable(mem) == {"kitchen", "k2", "a1", "b1"}
