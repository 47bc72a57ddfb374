"""A bulk import folds its rows into the lance indexes as it goes, but builds the vector (ANN)
index once, over the whole table, at its end (issue 34, item 5: an IVF-PQ build at every fold was
most of a 50 MB caption import's peak memory). What it writes is found either way."""

from __future__ import annotations

import random

from memtools.embed.testing import TestEmbedder
from memtools.importers import bulk
from memtools.importers.captions import Caption, CaptionedVideo, graph_from_captions
from memtools.store import Memory
from memtools.store.tables import vectors
from memtools.tools import MemoryTools

WORDS = "man woman dog pan knife onion guitar ball car kitchen chops plays throws pours cuts runs".split()


def captioned(n: int) -> list[CaptionedVideo]:
    rng = random.Random(5)
    out = []
    for v in range(n):
        caps = [Caption(10.0 * i, 10.0 * i + 8, " ".join(rng.choice(WORDS) for _ in range(6))) for i in range(12)]
        out.append(CaptionedVideo(f"v{v:03d}", caps, duration=130, title=f"video {v}"))
    return out


def test_the_ann_index_is_built_once_at_the_end_of_a_bulk_import(tmp_path, monkeypatch):
    monkeypatch.setattr(vectors, "ANN_MIN_ROWS", 300)    # a small table gets an IVF-PQ index
    monkeypatch.setattr(bulk, "INDEX_EVERY_NODES", 150)  # and the import folds many times
    builds: list[int] = []
    folds: list[int] = []
    original = vectors.LanceIndex.finish_write

    def finish_write(index, *args, **kwargs):
        table = index.nodes()
        before = {tuple(ix.columns) for ix in table.list_indices()} if table is not None else set()
        original(index, *args, **kwargs)
        folds.append(table.count_rows() if table is not None else 0)
        after = index.nodes()
        if after is not None and ("vector",) in {tuple(ix.columns) for ix in after.list_indices()} - before:
            builds.append(after.count_rows())

    monkeypatch.setattr(vectors.LanceIndex, "finish_write", finish_write)
    videos = captioned(60)
    with Memory.create(tmp_path / "memory", TestEmbedder(32)) as memory:
        bulk.bulk_write(memory, (graph_from_captions(v) for v in videos), batch_size=5, show_progress=False)
        rows = memory.vectors.nodes().count_rows()
        assert len(folds) > 3 and max(folds[:-1]) >= 300  # folds past ANN_MIN_ROWS before the last one
        assert builds == [rows]  # built once, over every row
        assert ("vector",) in {tuple(ix.columns) for ix in memory.vectors.nodes().list_indices()}
        found = MemoryTools(memory).search_nodes(videos[-1].captions[3].text, video_id=videos[-1].video_id)
        assert found.hits and found.hits[0].video_id == videos[-1].video_id
