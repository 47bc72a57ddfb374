"""What keeps a long caption import's memory bounded (issue 34, item 5; memtools.importers.heap):
the free memory of each write batch goes back to the system before a fold adds lance's own, and
lance's read-ahead is capped for a local memory. The peak itself is measured by
benchmarks/import_bounded.py, not here."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from memtools.embed.testing import TestEmbedder
from memtools.importers import bulk
from memtools.importers.captions import graph_from_captions
from memtools.store import Memory
from memtools.store.tables import vectors
from test_import_folds import captioned

FREED_AND_KEPT = """
import sys
from pathlib import Path
from memtools.importers.heap import give_back_free_memory

def rss_mb():
    status = Path('/proc/self/status').read_text().splitlines()
    return int(next(line for line in status if line.startswith('VmRSS')).split()[1]) // 1024

blocks = [bytes(2000) for _ in range(100_000)]  # ~200 MB of malloc'd blocks (not pymalloc's: > 512 bytes)
kept = blocks[::50]                                  # a few stay, so the heap cannot simply shrink
del blocks
freed = rss_mb()
give_back_free_memory()
print(freed, rss_mb(), len(kept))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_free_memory_goes_back_to_the_system():
    out = subprocess.run([sys.executable, "-c", FREED_AND_KEPT], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    freed, after, _ = map(int, out.stdout.split())
    assert freed - after > 100, (freed, after)  # glibc had kept ~190 MB of freed blocks


def test_a_bulk_import_gives_back_free_memory_before_every_fold(tmp_path, monkeypatch):
    monkeypatch.setattr(vectors, "ANN_MIN_ROWS", 300)
    monkeypatch.setattr(bulk, "INDEX_EVERY_NODES", 150)
    events: list[str] = []
    monkeypatch.setattr(bulk, "give_back_free_memory", lambda: events.append("give back"))
    original = vectors.LanceIndex.finish_write

    def finish_write(index, *args, **kwargs):
        events.append("fold")
        original(index, *args, **kwargs)

    monkeypatch.setattr(vectors.LanceIndex, "finish_write", finish_write)
    with Memory.create(tmp_path / "memory", TestEmbedder(32)) as memory:
        bulk.bulk_write(memory, (graph_from_captions(v) for v in captioned(40)), batch_size=5, show_progress=False)
    folds = [i for i, e in enumerate(events) if e == "fold"]
    assert len(folds) > 3
    # the first batch indexes inside its own write; every later fold, the last (ANN) one included, comes
    # right after the memory was given back
    assert all(events[i - 1] == "give back" for i in folds[1:])
    assert events.count("give back") >= 8 + 1  # every batch, and once more before the last fold


READ_AHEAD = """
import os, sys
from memtools.cli import main
code = main(["import-captions", sys.argv[1], "--memory", sys.argv[2], "--embedder", "test:32"])
print(code, os.environ.get("LANCE_DEFAULT_IO_BUFFER_SIZE"))
"""


@pytest.mark.parametrize(("given", "seen"), [(None, str(64 << 20)), ("1048576", "1048576")])
def test_an_import_caps_lances_read_ahead_unless_the_user_set_it(tmp_path, given, seen):
    subtitles = tmp_path / "talk.srt"
    subtitles.write_text("1\n00:00:01,000 --> 00:00:04,000\nHello there.\n\n2\n00:00:05,000 --> 00:00:08,000\n"
                         "The pan is hot.\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "LANCE_DEFAULT_IO_BUFFER_SIZE"}
    if given:
        env["LANCE_DEFAULT_IO_BUFFER_SIZE"] = given
    out = subprocess.run([sys.executable, "-c", READ_AHEAD, str(subtitles), str(tmp_path / "memory")],
                         capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-2:] == ["0", seen]


def test_object_storage_keeps_lances_read_ahead(monkeypatch):
    from memtools.importers.heap import bound_read_ahead

    monkeypatch.delenv("LANCE_DEFAULT_IO_BUFFER_SIZE", raising=False)
    bound_read_ahead("s3://bucket/memory")
    assert "LANCE_DEFAULT_IO_BUFFER_SIZE" not in os.environ
