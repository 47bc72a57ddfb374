"""A bulk import folds its rows into the lance files and indexes as it goes, each fold's work
bounded by the rows it folds (issue 34, item 5; ``memtools.store.tables.lance_fold``): compaction
leaves fragments that reached their target alone, the vector (ANN) index is trained once, past
``ANN_MIN_ROWS``, and later folds add their rows to its one segment; it is trained again only once
the table outgrows its partitions. What it writes is found either way."""

from __future__ import annotations

import random
from datetime import timedelta

from memtools.embed.testing import TestEmbedder
from memtools.importers import bulk
from memtools.importers.captions import Caption, CaptionedVideo, graph_from_captions
from memtools.store import Memory
from memtools.store.tables import lance_fold, vectors
from memtools.tools import MemoryTools

WORDS = "man woman dog pan knife onion guitar ball car kitchen chops plays throws pours cuts runs".split()


def captioned(n: int) -> list[CaptionedVideo]:
    rng = random.Random(5)
    out = []
    for v in range(n):
        caps = [Caption(10.0 * i, 10.0 * i + 8, " ".join(rng.choice(WORDS) for _ in range(6))) for i in range(12)]
        out.append(CaptionedVideo(f"v{v:03d}", caps, duration=130, title=f"video {v}"))
    return out


partitions: list[int] = []  # the vector index's partitions after each build watched


def watch_builds(monkeypatch) -> tuple[list[int], list[int]]:
    """(rows at each vector-index build, rows at each fold) of the nodes table, from here on."""
    builds: list[int] = []
    folds: list[int] = []
    partitions.clear()
    real_create, real_finish = lance_fold.create_vector_index, vectors.LanceIndex.finish_write

    def create_vector_index(table, *args, **kwargs):
        real_create(table, *args, **kwargs)
        if table.name == "nodes":
            builds.append(table.count_rows())
            partitions.append(lance_fold.vector_partitions(table))

    def finish_write(index, *args, **kwargs):
        real_finish(index, *args, **kwargs)
        table = index.nodes()
        folds.append(table.count_rows() if table is not None else 0)

    monkeypatch.setattr(lance_fold, "create_vector_index", create_vector_index)
    monkeypatch.setattr(vectors.LanceIndex, "finish_write", finish_write)
    return builds, folds


def vector_index(table):
    return next(ix for ix in table.list_indices() if tuple(ix.columns) == ("vector",))


def test_the_ann_index_is_trained_once_and_later_folds_add_to_it(tmp_path, monkeypatch):
    from lance.indices import IndicesBuilder

    monkeypatch.setattr(lance_fold, "ANN_MIN_ROWS", 600)  # a small table gets an IVF-PQ index
    monkeypatch.setattr(bulk, "INDEX_EVERY_NODES", 150)   # and the import folds many times
    builds, folds = watch_builds(monkeypatch)
    pq_samples: list[int] = []
    real_train_pq = IndicesBuilder.train_pq

    def train_pq(builder, ivf, *args, sample_rate, **kwargs):
        pq_samples.append(sample_rate)
        return real_train_pq(builder, ivf, *args, sample_rate=sample_rate, **kwargs)

    monkeypatch.setattr(IndicesBuilder, "train_pq", train_pq)
    videos = captioned(60)
    with Memory.create(tmp_path / "memory", TestEmbedder(32)) as memory:
        bulk.bulk_write(memory, (graph_from_captions(v) for v in videos), batch_size=5, show_progress=False)
        table = memory.vectors.nodes()
        rows = table.count_rows()
        first = next(n for n in folds if n >= 600)
        assert folds[1] == first  # after the first batch's, the first fold comes at ANN_MIN_ROWS nodes
        assert len(builds) == 1 and builds[0] == first < rows  # trained at the first fold past ANN_MIN_ROWS
        assert pq_samples == [first // 256]  # the codebook trained on a sample, not lance's 256 rows a centroid
        index = vector_index(table)
        assert index.num_segments == 1 and index.num_indexed_rows == rows and index.num_unindexed_rows == 0
        found = MemoryTools(memory).search_nodes(videos[-1].captions[3].text)
        assert found.hits and found.hits[0].video_id == videos[-1].video_id  # a row added by a later fold


def test_a_vector_index_is_trained_again_once_the_table_outgrows_it(tmp_path, monkeypatch):
    monkeypatch.setattr(lance_fold, "ANN_MIN_ROWS", 300)
    monkeypatch.setattr(lance_fold, "PARTITION_ROWS", 256)  # lance trains >= 256 rows a partition
    monkeypatch.setattr(lance_fold, "RETRAIN_GROWTH", 2)    # trained again at 512 rows a partition
    monkeypatch.setattr(bulk, "INDEX_EVERY_NODES", 150)
    builds, _ = watch_builds(monkeypatch)
    with Memory.create(tmp_path / "memory", TestEmbedder(32)) as memory:
        # a generator: the import does not know how many videos will come, so nothing is sized ahead
        bulk.bulk_write(memory, (graph_from_captions(v) for v in captioned(100)), batch_size=5, show_progress=False)
        rows = memory.vectors.nodes().count_rows()
    assert len(builds) >= 2 and builds[-1] <= rows
    for (before, parts), after in zip(zip(builds, partitions, strict=True), builds[1:], strict=False):
        assert after >= 2 * 256 * parts > before  # only once the partitions hold twice what they were sized for
    assert partitions[-1] > partitions[0]


def test_a_bulk_import_that_knows_its_size_sizes_the_vector_index_for_it(tmp_path, monkeypatch):
    monkeypatch.setattr(lance_fold, "ANN_MIN_ROWS", 300)
    monkeypatch.setattr(lance_fold, "PARTITION_ROWS", 256)
    monkeypatch.setattr(lance_fold, "RETRAIN_GROWTH", 2)
    monkeypatch.setattr(lance_fold, "IVF_SAMPLE_RATE", 32)  # so that 480 rows can train 6 partitions
    monkeypatch.setattr(bulk, "INDEX_EVERY_NODES", 150)
    builds, _ = watch_builds(monkeypatch)
    with Memory.create(tmp_path / "memory", TestEmbedder(32)) as memory:
        bulk.bulk_write(memory, [graph_from_captions(v) for v in captioned(100)], batch_size=5, show_progress=False)
        rows = memory.vectors.nodes().count_rows()
        held = lance_fold.vector_partitions(memory.vectors.nodes())
    assert len(builds) == 1 and builds[0] < rows / 2  # built early, never again
    assert held == partitions[0] >= 2                  # with more partitions than its rows then asked for
    assert rows < 2 * 256 * held


def test_compaction_leaves_fragments_that_reached_their_target(tmp_path, monkeypatch):
    monkeypatch.setattr(lance_fold, "FRAGMENT_ROWS", 200)
    with Memory.create(tmp_path / "memory", TestEmbedder(32)) as memory:
        graphs = [graph_from_captions(v) for v in captioned(40)]  # ~16 rows a video
        previous: dict[int, int] = {}
        for i in range(0, 40, 10):
            memory.write_videos(graphs[i:i + 10])
            dataset = memory.vectors.nodes().to_lance()
            fragments = {f.fragment_id: f.count_rows() for f in dataset.get_fragments()}
            # what reached the target at the last fold is still there, untouched
            assert {k: v for k, v in previous.items() if v >= 200}.items() <= fragments.items()
            previous = fragments
        assert len(fragments) > 1 and sum(fragments.values()) == memory.vectors.nodes().count_rows()
        assert max(fragments.values()) <= 2 * 200
        videos = captioned(40)
        found = MemoryTools(memory).search_nodes(videos[5].captions[2].text)
        assert found.hits and found.hits[0].video_id == videos[5].video_id


def test_without_pylance_lancedb_folds_and_the_vector_index_is_rebuilt_past_its_segments(tmp_path, monkeypatch):
    """The base install (no ``memtools[bulk]``): lancedb's ``optimize()`` folds, each fold may add a
    vector-index segment, and one past ``ANN_MAX_SEGMENTS`` has it rebuilt."""
    monkeypatch.setattr(lance_fold, "has_pylance", lambda: False)
    monkeypatch.setattr(lance_fold, "KEEP_VERSIONS_FOR", timedelta(0))
    monkeypatch.setattr(lance_fold, "ANN_MIN_ROWS", 300)
    monkeypatch.setattr(bulk, "INDEX_EVERY_NODES", 150)
    builds, folds = watch_builds(monkeypatch)
    videos = captioned(60)
    with Memory.create(tmp_path / "memory", TestEmbedder(32)) as memory:
        bulk.bulk_write(memory, (graph_from_captions(v) for v in videos), batch_size=5, show_progress=False)
        table = memory.vectors.nodes()
        assert builds and len(folds) > 3
        assert vector_index(table).num_segments <= lance_fold.ANN_MAX_SEGMENTS
        assert len(table.list_versions()) <= 3  # old versions pruned
        found = MemoryTools(memory).search_nodes(videos[-1].captions[3].text)
        assert found.hits and found.hits[0].video_id == videos[-1].video_id


def _video_id_index(table) -> tuple[str, str]:
    found = [(ix.name, ix.index_type) for ix in table.list_indices() if tuple(ix.columns) == ("video_id",)]
    assert len(found) == 1, found  # one index on the column, never a second beside the first
    return found[0]


def test_video_id_is_indexed_as_a_btree_and_an_older_bitmap_is_rebuilt_at_the_next_fold(tmp_path):
    """``video_id`` has one value a video: a Bitmap index keeps a bitmap a value and its fold rewrote all of
    them (14 s a fold at 100,000 videos, against 0.1 s for a BTree). New tables index it as a BTree; a table
    made before, with a Bitmap, gets a BTree of the same name at its next fold, and answers the same."""
    from memtools.testing import kitchen_graph

    graphs = [graph_from_captions(v) for v in captioned(6)]
    with Memory.create(tmp_path / "memory", TestEmbedder(32)) as memory:
        memory.write_videos([kitchen_graph(), *graphs[:3]])  # the kitchen has entities
        nodes, entities = memory.vectors.nodes(), memory._entities.table()
        assert _video_id_index(nodes)[1] == "BTree" and _video_id_index(entities)[1] == "BTree"
        # as an earlier memtools left them: a Bitmap index on video_id
        for table in (nodes, entities):
            name = _video_id_index(table)[0]
            table.to_lance().create_scalar_index("video_id", "BITMAP", name=name, replace=True)
            table.checkout_latest()
            assert _video_id_index(table) == (name, "Bitmap")
        memory.write_videos(graphs[3:])  # its fold
        assert _video_id_index(memory.vectors.nodes()) == (_video_id_index(nodes)[0], "BTree")
        assert _video_id_index(memory._entities.table()) == (_video_id_index(entities)[0], "BTree")
        videos = captioned(6)
        for v in (1, 4):
            found = MemoryTools(memory).search_nodes(videos[v].captions[3].text, video_id=videos[v].video_id)
            assert found.hits and {h.video_id for h in found.hits} == {videos[v].video_id}
