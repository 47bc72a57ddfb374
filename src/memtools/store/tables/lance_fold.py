"""Folding new rows into a lance table's files and indexes, with memory bounded by the rows folded.

After a write, a table's new rows sit in small fragments (one or a few per write) that its indexes
do not cover yet. lancedb's ``optimize()`` folds them in, but with lance's defaults: compaction
merges every fragment under 1M rows, so a fold rewrites the whole table until it reaches that size,
and its cost grows with the table (+628 MiB at 600k rows in a 50 MB caption import, docs/scaling.md,
eighth round). Here the same three steps run through lance's own Python package (``pylance``,
``memtools[bulk]``, whose options lancedb does not pass through; without it, through lancedb's
``optimize()`` as before, and the vector index is then rebuilt past ``ANN_MAX_SEGMENTS``):

* **compaction** with a fragment target of ``FRAGMENT_ROWS``: fragments that reached it are left
  alone, so a fold rewrites only what was written since the last one, and it copies their pages
  rather than decoding and encoding them again (``COMPACTION_MODE``);
* **the scalar indexes** on a column with one value a video (``video_id``) are BTrees: a Bitmap keeps
  one bitmap a value, and folding new rows into it rewrote all of them (14 s a fold at 100,000 videos,
  against 0.1 s for the BTree); a table made before gets its Bitmap rebuilt as a BTree at its next
  fold (``rebuild_as_btree``);
* **the indexes** take the new rows into their newest segment (``num_indices_to_merge=1``); the
  vector index assigns them to the partitions it was trained with, so one IVF-PQ segment holds the
  table and no full rebuild is needed to keep it whole;
* **old versions** are pruned as before (``KEEP_VERSIONS_FOR``).

A vector index is trained once (``build_indexes``), when the table passes ``ANN_MIN_ROWS``, with
a partition for every ``PARTITION_ROWS`` rows (lance's own rule) of the rows it holds or, in a bulk
import, of the rows the whole import will hold (``expected_rows``); with pylance, its product
quantizer on a smaller sample than lance's default (``PQ_SAMPLE_RATE``). It is trained again only once
its partitions hold ``RETRAIN_GROWTH`` times that on average: such a rebuild reads the whole table,
like every build, but it comes at 4x, 16x... the rows it was sized for.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import warnings
from collections.abc import Callable, Sequence
from datetime import timedelta

from memtools.errors import StoreError
from memtools.heap import give_back

log = logging.getLogger(__name__)

ANN_MIN_ROWS = 50_000      # below this, exact search is fast enough (benchmarks/tool_latency.py)
ANN_MAX_SEGMENTS = 4       # an index in more segments is rebuilt (lancedb's optimize() adds one a fold)
PARTITION_ROWS = 8192      # rows an IVF partition is sized for (lance's default, rows / 8192)
IVF_SAMPLE_RATE = 256      # rows sampled a partition to train it (lance's default): lance makes no more
                           # partitions than the rows hold samples for
PQ_SAMPLE_RATE = 64        # rows sampled a PQ centroid to train the codebook (lance's 256 held +365 MiB
                           # over 66k rows of which it sampled all; 64: +85 MiB, docs/scaling.md, ninth round)
RETRAIN_GROWTH = 4         # the vector index is trained again once its partitions hold 4x that
FRAGMENT_ROWS = 50_000     # compaction's target: a bulk import's fold (INDEX_EVERY_NODES new rows) makes one
                           # fragment that later folds leave alone; at 200,000 each fold rewrote the partial
                           # fragment too: +270-289 MiB and 17-22 s a fold at 900k rows, against +35 MiB and
                           # 0.15 s (docs/scaling.md, eleventh round)
COMPACTION_THREADS = 1     # one fragment written at a time (each thread holds its own batches)
COMPACTION_MODE = "try_binary_copy"  # pages copied as written, not decoded and encoded again (lance
                           # falls back to that where it must): 133k rows +41 MiB in 0.6 s, against +233 in 1.6 s
KEEP_VERSIONS_FOR = timedelta(minutes=1)  # readers re-check the manifest before every search


@functools.cache
def has_pylance() -> bool:
    """Whether lance's own package (``memtools[bulk]``) is installed."""
    return importlib.util.find_spec("lance") is not None


def fold(table, *, release: bool = False) -> None:
    """Compact ``table``'s new fragments, take its new rows into every index, prune old versions;
    ``table`` (a lancedb table) then reads the newest version. ``release`` (a bulk import's fold,
    thousands of rows): what the compaction freed goes back to the system before the indexes
    allocate their own (``memtools.heap``; a small write's fold does not pay for it)."""
    if not has_pylance():
        table.optimize(cleanup_older_than=KEEP_VERSIONS_FOR)  # compacts to 1M-row fragments: grows with the table
        return
    dataset = table.to_lance()
    dataset.optimize.compact_files(target_rows_per_fragment=FRAGMENT_ROWS, num_threads=COMPACTION_THREADS,
                                   compaction_mode=COMPACTION_MODE)
    dataset = dataset.checkout_version(dataset.latest_version)
    if dataset.list_indices():
        if release:
            give_back()
        dataset.optimize.optimize_indices(num_indices_to_merge=1)
        dataset = dataset.checkout_version(dataset.latest_version)
    dataset.cleanup_old_versions(older_than=KEEP_VERSIONS_FOR)
    del dataset
    table.checkout_latest()


def vector_index_outgrown(table) -> bool:
    """Whether ``table``'s vector index should be trained again: its partitions hold ``RETRAIN_GROWTH``
    times the rows they were sized for, or it is in more than ``ANN_MAX_SEGMENTS`` segments.
    False when it has no vector index."""
    for index in table.list_indices():
        if tuple(index.columns) == ("vector",):
            if int(getattr(index, "num_segments", 1) or 1) > ANN_MAX_SEGMENTS:
                return True
            if table.count_rows() < RETRAIN_GROWTH * PARTITION_ROWS:
                return False  # too few rows to outgrow even one partition: no stats read
            partitions = vector_partitions(table)
            return partitions > 0 and table.count_rows() >= RETRAIN_GROWTH * PARTITION_ROWS * partitions
    return False


def vector_partitions(table) -> int:
    """The IVF partitions of ``table``'s vector index (its largest segment's); 0 without one, or
    without pylance to read them."""
    if not has_pylance():
        return 0
    for index in table.list_indices():
        if tuple(index.columns) == ("vector",):
            os.environ.setdefault("LANCE_INCLUDE_VECTOR_CENTROIDS", "false")  # stats without the centroids
            stats = table.to_lance().stats.index_stats(index.name)
            return max((int(seg.get("num_partitions", 0)) for seg in stats.get("indices") or ()), default=0)
    return 0


def bitmaps_to_rebuild(indexes: Sequence, scalar: Sequence[tuple[str, object]]) -> list:
    """Those of ``indexes`` that are Bitmaps on a column ``scalar`` now indexes with a BTree (``video_id``)."""
    from lancedb.index import BTree

    wanted = {(column,) for column, config in scalar if isinstance(config, BTree)}
    return [ix for ix in indexes
            if str(getattr(ix, "index_type", "")).lower() == "bitmap" and tuple(ix.columns) in wanted]


def rebuild_as_btree(table, bitmaps: Sequence) -> None:
    """The Bitmap indexes of a table made before the eleventh round, on a column with one value a
    video, built again as BTrees under the same name, each in one lance commit (a kill leaves the
    Bitmap, and the next fold tries again): a Bitmap's fold rewrote every value's bitmap. Needs
    pylance (lancedb's ``create_index`` adds a second index beside the first); without it they stay."""
    if not bitmaps or not has_pylance():
        return
    dataset = table.to_lance()
    for index in bitmaps:
        log.info("rebuilding the %s index on %s as a BTree", index.name, index.columns[0])
        dataset.create_scalar_index(index.columns[0], "BTREE", name=index.name, replace=True)
    del dataset
    table.checkout_latest()


def build_indexes(table, scalar: Sequence[tuple[str, object]], *, ann_due: Callable[[set], bool], what: str,
                  expected_rows: int | None = None, release: bool = False) -> None:
    """Create the missing scalar indexes of ``table``, fold new rows into every index and prune old
    versions (``release``: see ``fold``); (re)build the ANN index once the table is large enough and
    ``ann_due(existing)`` says so, with its partitions sized for ``expected_rows`` where the writer
    knows the table will grow to that."""
    try:
        indexes = table.list_indices()
        have = {tuple(ix.columns) for ix in indexes}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for column, config in scalar:
                if (column,) not in have:
                    table.create_index(column, config=config)
            rebuild_as_btree(table, bitmaps_to_rebuild(indexes, scalar))
            fold(table, release=release)
            rows = table.count_rows()
            if rows >= ANN_MIN_ROWS and ann_due(have):
                partitions = max(1, min(max(rows, expected_rows or 0) // PARTITION_ROWS, rows // IVF_SAMPLE_RATE))
                log.info("building the ANN index over %d rows (%d partitions)", rows, partitions)
                # what the compaction freed goes back before the build allocates its own, and what the
                # build freed before the prune after it (docs/scaling.md, seventh round)
                give_back()
                create_vector_index(table, partitions)
                give_back()
                fold(table, release=release)
    except Exception as exc:
        raise StoreError(f"{what} indexing failed: {exc}") from exc


def create_vector_index(table, partitions: int) -> None:
    """Train ``table``'s IVF-PQ index (cosine) with ``partitions`` partitions. With pylance, in lance's
    three steps, so that the product quantizer is trained on ``PQ_SAMPLE_RATE`` rows a centroid
    rather than lance's 256 (every row of a table trained near ``ANN_MIN_ROWS``): the IVF centroids,
    the PQ codebook, then the index from both. A table too small for that sample (or no pylance):
    lancedb's ``create_index``, which samples what there is."""
    from lancedb.index import IvfPq

    pq_rate = min(PQ_SAMPLE_RATE, table.count_rows() // 256)  # 8-bit PQ: 256 centroids, pq_rate rows each
    if not has_pylance() or pq_rate < 2:
        table.create_index("vector", config=IvfPq(distance_type="cosine", num_partitions=partitions,
                                                         sample_rate=IVF_SAMPLE_RATE), replace=True)
        return
    from lance.indices import IndicesBuilder

    dataset = table.to_lance()
    builder = IndicesBuilder(dataset, "vector")
    ivf = builder.train_ivf(partitions, distance_type="cosine", sample_rate=IVF_SAMPLE_RATE)
    pq = builder.train_pq(ivf, sample_rate=pq_rate)  # lance's subvectors: dim / 16 (or / 8)
    dataset.create_index("vector", "IVF_PQ", metric="cosine", num_partitions=partitions,
                         ivf_centroids=ivf.centroids, pq_codebook=pq.codebook, num_sub_vectors=pq.num_subvectors,
                         replace=True)
    del dataset, builder
    table.checkout_latest()
