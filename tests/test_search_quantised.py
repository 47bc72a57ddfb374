"""Held search rows keep int8 vectors and re-score exactly every row that can reach the top
``limit`` (``memtools.store.tables.resident_quant``): the error bound holds, and the rows and their
order equal an exact float32 search over every row, with and without filters (issue 24). A small
table keeps its float32 vectors in memory and scores every row exactly: both ways are tested."""

from __future__ import annotations

import gc
import logging
import os
import tempfile

import numpy as np
import pyarrow as pa
import pytest

from memtools.store.base import SearchFilter, SearchQuery
from memtools.store.tables import resident_quant
from memtools.store.tables.resident import ResidentRows, held_bytes, row_bytes
from memtools.store.tables.resident_quant import HEAD, ExactVectors, RowFile, candidates, quantise
from memtools.store.tables.vectors import LanceIndex
from test_search_resident import DIM, make


@pytest.fixture(params=["file", "memory"])
def storage(request, monkeypatch):
    """Where the held rows' float32 vectors are: a temporary file (any table past 16 MiB of them),
    or memory (the small tables of these tests, as shipped)."""
    if request.param == "file":
        monkeypatch.setattr(resident_quant, "IN_MEMORY_BYTES", 0)
    return request.param


def unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    x = rng.standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("dim", [8, 64, 384])
def test_error_bound_holds_for_any_unit_query(dim):
    rng = np.random.default_rng(dim)
    rows = unit(rng, 2000, dim)
    rows[0] = 0.0                     # a zero vector stays zero
    rows[1] = 0.0
    rows[1, 3] = 1.0                  # one large component: the coarsest scale
    rows[2] = np.float32(1 / np.sqrt(dim))  # all equal: quantised exactly
    codes, scales, bounds = quantise(rows)
    assert codes.dtype == np.int8 and np.abs(codes.astype(int)).max() <= 127
    queries = unit(rng, 200, dim)
    queries[0] = rows[5]              # a row's own vector
    exact = rows @ queries.T
    approx = (codes.astype(np.float32) @ queries.T) * scales[:, None]
    assert np.all(np.abs(exact - approx) <= bounds[:, None])
    assert bounds[0] == pytest.approx(1e-4) and approx[0].max() == 0.0
    # the bound is tight enough to prune: a few thousandths at MiniLM's 384 dimensions
    assert np.median(bounds) < (0.02 if dim >= 64 else 0.05)


def test_candidates_keep_every_row_that_can_reach_the_top():
    rng = np.random.default_rng(3)
    for trial in range(300):
        n = int(rng.integers(1, 3000))
        limit = int(rng.integers(1, 120))
        bounds = rng.uniform(0.0, 0.02, n).astype(np.float32)
        quantised = rng.uniform(-1, 1, n).astype(np.float32)
        if trial % 3 == 0:            # many near-ties around the cut
            quantised = np.round(quantised, 2)
        exact = quantised + rng.uniform(-1, 1, n).astype(np.float32) * bounds  # anything the bound allows
        kept = candidates(quantised, bounds, limit)
        assert np.all(np.diff(kept) > 0)  # in row order (a video's rows stay one run)
        cut = np.sort(exact)[::-1][min(limit, n) - 1]
        assert set(np.flatnonzero(exact > cut)) <= set(kept.tolist())
        assert len(kept) >= min(n, max(4 * limit, HEAD))
        if n > 4 * max(4 * limit, HEAD):
            assert len(kept) < n      # it prunes


def exact_best(held: ResidentRows, rows: np.ndarray, vector: np.ndarray, limit: int):
    """Every row scored in float32 (what held rows did before quantisation), best first."""
    query = vector / np.linalg.norm(vector)
    scores = held.exact_scores(rows, query.astype(np.float32))
    order = np.argsort(-scores, kind="stable")[:limit]
    return rows[order], scores[order]


def same_answer(got, want, what):
    """The same rows in the same order (rows whose float32 scores tie to 1e-6 may swap: the
    embedder gives repeated texts one vector). Returns how many rows swapped without an exact tie."""
    (rows, scores), (want_rows, want_scores) = got, want
    assert len(rows) == len(want_rows), what
    np.testing.assert_allclose(scores, want_scores, atol=1e-6, err_msg=str(what))
    swapped = np.flatnonzero(rows != want_rows)
    for at in swapped:
        assert abs(float(want_scores[at]) - float(scores[at])) <= 1e-6, (what, at)
    return int(np.sum(want_scores[swapped] != scores[swapped]))


def test_quantised_search_equals_exact_search_on_a_real_memory(tmp_path, monkeypatch, storage):
    path = make(tmp_path / "m", monkeypatch, ann=False)
    index = LanceIndex(path / "vectors", DIM)
    held = index.hold_rows()
    assert held is not None and held.codes.dtype == np.int8
    assert (held.exact.matrix is not None) == (storage == "memory")
    # the exact vectors in the file are lance's, normalised
    table = index._reading_table()
    data = table.search().select(["vector"]).with_row_id(True).limit(None).to_arrow()
    lance = np.asarray(data.column("vector").to_pylist(), dtype=np.float32)
    at = held.positions(data.column("_rowid").to_pylist())
    np.testing.assert_allclose(held.exact.take(at), lance / np.linalg.norm(lance, axis=1, keepdims=True), atol=1e-6)

    rng = np.random.default_rng(7)
    videos = sorted(held.videos)
    filters = [SearchFilter(), SearchFilter(kinds=("event",)), SearchFilter(kinds=("macro", "event")),
               SearchFilter(start=100.0, end=400.0), SearchFilter(as_of=300.0),
               SearchFilter(video_ids=tuple(videos[:8])), SearchFilter(video_ids=(videos[3],), kinds=("event",))]
    pruned = swapped = 0
    for q in range(120):
        vector = lance[rng.integers(len(lance))] + rng.normal(0, 0.3, DIM).astype(np.float32) if q % 2 \
            else rng.standard_normal(DIM).astype(np.float32)
        f = filters[q % len(filters)]
        rows = held.select(f)
        for limit in (1, 5, 10, 50, len(rows) + 16):
            got = held.best(rows, vector, limit)
            swapped += same_answer(got, exact_best(held, rows, vector, limit), (q, f, limit))
            if limit < len(rows):
                scored = candidates(held.quantised_scores(rows, vector / np.linalg.norm(vector)),
                                    held.bounds[rows], limit)
                pruned += len(scored) < len(rows)
    assert pruned > 100  # most library-wide queries re-scored only part of their rows
    assert swapped <= 2


def test_held_search_through_the_index_equals_lance(tmp_path, monkeypatch, storage):
    """Top-k ids and order of ``search_columns`` from the quantised held rows equal lance's own flat
    search, with and without filters, and the payloads of the shown rows are lance's."""
    path = make(tmp_path / "m", monkeypatch, ann=False)
    held, plain = LanceIndex(path / "vectors", DIM), LanceIndex(path / "vectors", DIM, resident_bytes=0)
    rows = held.hold_rows()
    assert rows is not None
    rng = np.random.default_rng(11)
    videos = sorted(rows.videos)
    for q in range(40):
        vector = rng.standard_normal(DIM).astype(np.float32)
        f = [SearchFilter(), SearchFilter(kinds=("event",)), SearchFilter(video_ids=tuple(videos[:5]))][q % 3]
        query = SearchQuery("vector", 10, vector, filter=f)
        got, want = held.search_columns(query).hits(), plain.search_columns(query).hits()
        assert [h.id for h in got] == [h.id for h in want] or all(
            abs(a.score - b.score) <= 1e-5 for a, b in zip(got, want, strict=True)), q
        for a, b in zip(got, want, strict=True):
            assert a.score == pytest.approx(b.score, abs=1e-5)
        full = {h.id: (h.text, h.display, h.macro_label, h.context) for h in held.complete(got)}
        lance_full = {h.id: (h.text, h.display, h.macro_label, h.context) for h in plain.complete(want)}
        both = full.keys() & lance_full.keys()
        assert len(both) >= len(got) - 1 and {i: full[i] for i in both} == {i: lance_full[i] for i in both}


def test_rows_of_a_video_scanned_out_of_order_are_grouped(tmp_path):
    """Rows whose videos come interleaved in the scan are held grouped, vectors and payloads
    moved with them."""
    rng = np.random.default_rng(5)
    n = 300
    vids = [f"v{i % 7}" for i in range(n)]
    data = pa.table({"id": [f"n{i:04d}" for i in range(n)], "video_id": vids, "kind": ["event"] * n,
                     "macro_id": pa.array([None] * n, pa.string()), "t_start": np.arange(n, dtype=np.float64),
                     "t_end": np.arange(n, dtype=np.float64) + 1, "text": [f"text {i}" for i in range(n)],
                     "display": [f"display {i}" for i in range(n)], "macro_label": [""] * n,
                     "context": [f"[\"c{i}\"]" for i in range(n)], "_rowid": np.arange(n, dtype=np.uint64) * 3})
    vectors = rng.standard_normal((n, 16)).astype(np.float32)
    held = ResidentRows.from_arrow(data, vectors, version=1)
    for video, (start, end) in held.videos.items():
        assert set(held.video_ids.slice(start, end - start).to_pylist()) == {video}
    at = held.positions((np.arange(n) * 3).tolist())
    np.testing.assert_allclose(held.exact.take(at), vectors / np.linalg.norm(vectors, axis=1, keepdims=True),
                               atol=1e-6)
    assert held.payloads([3 * 17]) == {"n0017": ("text 17", "display 17", "", "[\"c17\"]")}


def test_no_room_for_the_held_files_leaves_search_to_lance(tmp_path, monkeypatch, caplog):
    path = make(tmp_path / "m", monkeypatch, ann=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))  # $TMPDIR gone
    index, plain = LanceIndex(path / "vectors", DIM), LanceIndex(path / "vectors", DIM, resident_bytes=0)
    with caplog.at_level(logging.WARNING):
        assert index.hold_rows() is None
    assert "set TMPDIR" in caplog.text
    query = SearchQuery("vector", 5, np.ones(DIM, dtype=np.float32))
    assert [h.id for h in index.search(query)] == [h.id for h in plain.search(query)]


def test_dropped_rows_give_their_files_back():
    file = RowFile()
    file.write_at(b"x" * 4096, 0)
    fd = file.fd
    os.fstat(fd)
    del file
    gc.collect()
    with pytest.raises(OSError):
        os.fstat(fd)


@pytest.mark.parametrize("dim", [4, 48])
def test_exact_scores_read_spans_in_any_order(storage, dim):
    """``ExactVectors.scores`` equals the rows' own products for runs, gaps, repeats and rows out of
    order (a filter naming videos lists their slices in its own order)."""
    rng = np.random.default_rng(dim)
    n = 500
    vectors = unit(rng, n, dim)
    exact = ExactVectors(n, dim)
    assert (exact.matrix is not None) == (storage == "memory")
    exact.put(np.arange(n)[::-1], vectors[::-1])
    query = unit(rng, 1, dim)[0]
    positions = [np.arange(n), np.arange(200, 260), np.r_[np.arange(300, 340, 3), np.arange(10, 30)],
                 np.array([499, 0, 250, 251, 251, 7]), np.flatnonzero(rng.random(n) < 0.05), np.zeros(0, int),
                 np.r_[np.arange(0, 100, 9), np.arange(400, 480, 2)]]
    for at in positions:
        np.testing.assert_allclose(exact.scores(at, query), vectors[at] @ query, atol=1e-6)
        np.testing.assert_allclose(exact.take(at), vectors[at])


def test_held_bytes_count_vectors_kept_in_memory():
    small, large = 1000, (resident_quant.IN_MEMORY_BYTES // (384 * 4)) + 1
    assert held_bytes(small, 384) == small * (row_bytes(384) + 384 * 4)
    assert held_bytes(large, 384) == large * row_bytes(384)  # past 16 MiB of vectors: they go to a file
