"""``memtools.heap.give_back``: memory a process freed goes back to the system (glibc), and a bulk
import gives it back around each fold."""

from __future__ import annotations

import subprocess
import sys

import pytest

FREED_IN_THE_MIDDLE = """
import ctypes
from memtools.heap import give_back

libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]

def resident_mib():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 2**20

blocks = [libc.malloc(4096) for _ in range(40_000)]  # ~160 MB of small blocks: the heap, not mmap
for block in blocks:
    libc.memset(block, 1, 4096)
pin = libc.malloc(64)  # a block above them keeps glibc from trimming the top on its own
for block in blocks:
    libc.free(block)
held = resident_mib()
give_back()
print(held, resident_mib())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_memory_freed_in_the_middle_of_the_heap_goes_back():
    done = subprocess.run([sys.executable, "-c", FREED_IN_THE_MIDDLE], capture_output=True, text=True, check=True)
    held, after = map(float, done.stdout.split())
    assert held - after > 100, (held, after)  # ~160 MB freed, and given back


def test_a_bulk_imports_fold_lets_go_of_the_lance_handles_and_gives_memory_back(tmp_path, monkeypatch):
    from memtools.embed.testing import TestEmbedder
    from memtools.store import Memory
    from memtools.store.writes import batch
    from memtools.testing import kitchen_graph

    calls: list[str] = []
    monkeypatch.setattr(batch, "give_back", lambda: calls.append("give back"))
    with Memory.create(tmp_path / "m", TestEmbedder(16)) as memory:
        memory.write_videos([kitchen_graph()], index=False)
        finish = memory._vectors.finish_write
        monkeypatch.setattr(memory._vectors, "finish_write", lambda **kw: (calls.append("fold"), finish(**kw)))
        memory.finish_indexes()  # a write's own fold: nothing else
        assert calls == ["fold"]
        calls.clear()
        held = memory._vectors.nodes()
        memory.finish_indexes(release=True)  # a bulk import's
        assert calls == ["give back", "fold", "give back"]
        assert memory._vectors._nodes is None and memory._entities._table is None  # let go
        assert memory._vectors.nodes() is not held and memory._vectors.nodes().count_rows() == held.count_rows()


def test_a_vector_index_build_gives_back_what_the_steps_around_it_freed(tmp_path, monkeypatch):
    """The compaction's freed memory goes back before the ANN build, the build's before the fold
    after it; a fold with no ANN build due gives nothing back (it is not a loop's cost)."""
    from memtools.embed.testing import TestEmbedder
    from memtools.store import Memory
    from memtools.store.tables import lance_fold
    from memtools.testing import kitchen_graph

    calls: list[str] = []
    real_fold = lance_fold.fold
    monkeypatch.setattr(lance_fold, "give_back", lambda: calls.append("give back"))
    monkeypatch.setattr(lance_fold, "fold", lambda table, **kw: (calls.append("fold"), real_fold(table, **kw)))
    monkeypatch.setattr(lance_fold, "ANN_MIN_ROWS", 10)  # the kitchen video's rows are enough for a build
    with Memory.create(tmp_path / "m", TestEmbedder(16)) as memory:
        memory.write_videos([kitchen_graph()], index=False)
        table = memory._vectors.nodes()
        real_create = table.create_index
        monkeypatch.setattr(table, "create_index", lambda column, **kw: (calls.append(f"index {column}"),
                                                                         real_create(column, **kw)))
        memory.finish_indexes()
        built = [c for c in calls if not c.startswith("index ") or c == "index vector"]  # scalar indexes left out
        assert built[:5] == ["fold", "give back", "index vector", "give back", "fold"]
        assert memory._vectors._has_ann
        calls.clear()
        memory.finish_indexes()  # nothing new: no build due, nothing given back
        assert "give back" not in calls and "index vector" not in calls
        calls.clear()
        memory.write_videos([kitchen_graph("v2")], index=False)
        memory.finish_indexes(release=True)  # a bulk import's fold: the compaction's freed memory goes back
        assert calls[:2] == ["fold", "give back"] and "index vector" not in calls
