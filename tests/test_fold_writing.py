"""A fold (``Memory.finish_indexes``) changes only the lance tables and the manifest's table versions,
so it takes the writers' lock without opening the graph read-write (issue 34, item 5: a large graph
opened read-write holds ~70 MiB through the fold, the import's peak); when a killed writer left its
journal, the fold recovers that write first, as every write does."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from memtools.embed.testing import TestEmbedder
from memtools.importers import bulk
from memtools.importers.captions import graph_from_captions
from memtools.store import Memory
from memtools.store.graph import engines
from memtools.store.integrity import checker
from memtools.store.tables import lance_fold
from memtools.store.writes import batch
from memtools.testing import kitchen_graph
from memtools.tools import MemoryTools
from test_import_folds import captioned

SRC = Path(__file__).resolve().parents[1] / "src"


def test_a_bulk_imports_folds_leave_the_graph_closed(tmp_path, monkeypatch):
    monkeypatch.setattr(lance_fold, "ANN_MIN_ROWS", 300)
    monkeypatch.setattr(bulk, "INDEX_EVERY_NODES", 150)
    state = {"folding": False, "folds": 0, "opened_in_fold": 0, "opened": 0}
    real_open, real_finish = engines.CypherEngine.open, batch.MemoryWrites.finish_indexes

    def open_graph(engine, path, *, read_only, **kwargs):
        if not read_only:
            state["opened"] += 1
            state["opened_in_fold"] += state["folding"]
        return real_open(engine, path, read_only=read_only, **kwargs)

    def finish_indexes(memory, **kwargs):
        state["folding"] = True
        try:
            real_finish(memory, **kwargs)
        finally:
            state["folding"] = False
            state["folds"] += 1

    monkeypatch.setattr(engines.CypherEngine, "open", open_graph)
    monkeypatch.setattr(batch.MemoryWrites, "finish_indexes", finish_indexes)
    videos = captioned(80)  # 14 nodes a video: folds at 25, 40, 55, 70 videos and at the end
    with Memory.create(tmp_path / "memory", TestEmbedder(32)) as memory:
        bulk.bulk_write(memory, (graph_from_captions(v) for v in videos), batch_size=5, show_progress=False)
        assert state["folds"] >= 4 and state["opened"] >= 16  # every batch opened it: the folds did not
        assert state["opened_in_fold"] == 0
        index = next(ix for ix in memory.vectors.nodes().list_indices() if tuple(ix.columns) == ("vector",))
        assert index.num_unindexed_rows == 0  # the folds took every row in
        found = MemoryTools(memory).search_nodes(videos[-1].captions[3].text)
        assert found.hits and found.hits[0].video_id == videos[-1].video_id
    with Memory.open(tmp_path / "memory") as memory:
        assert checker.check(memory).ok


def test_a_fold_after_a_killed_write_recovers_that_write_first(tmp_path):
    path = tmp_path / "memory"
    with Memory.create(path, TestEmbedder(64)) as memory:
        memory.write_videos([kitchen_graph("k1")])
        before = memory.vectors.count()
        # another process writes k2 and is killed once its lance rows are in, its graph COMMIT not yet run
        env = {k: v for k, v in os.environ.items() if k != "MEMTOOLS_FAULT_POINT"}
        env.update(PYTHONPATH=str(SRC), MEMTOOLS_FAULT_POINT="nodes-written:1")
        code = textwrap.dedent("""
            import sys
            from memtools.embed.testing import TestEmbedder
            from memtools.store import Memory
            from memtools.testing import kitchen_graph
            with Memory.open(sys.argv[1], TestEmbedder(64)) as memory:
                memory.write_videos([kitchen_graph("k2")])
        """)
        killed = subprocess.run([sys.executable, "-c", code, str(path)], env=env, capture_output=True, timeout=180)
        assert killed.returncode == -9, killed.stderr.decode()[-2000:]
        assert checker.JOURNAL_FILE in checker.writer_leftovers(path, memory.graph_file.name)
        memory.finish_indexes()
        assert memory._recovered and "rolled back" in memory._recovered  # noqa: SLF001
        assert checker.writer_leftovers(path, memory.graph_file.name) == []
        assert memory.vectors.count() == before and "k2" not in memory.manifest.videos
    with Memory.open(path) as memory:
        assert checker.check(memory).ok
