"""benchmarks/query_limit.py's roofline: the lone query's limit is the longer of its arithmetic at
the measured peak and one read of its weights at the measured bandwidth (issue 34)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def query_limit():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location("query_limit", BENCHMARKS / "query_limit.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_the_limit_is_the_slower_of_arithmetic_and_reading_the_weights(query_limit):
    # 212 MFLOP at 50 GFLOP/s: 4.24 ms; 21 MB at 20 GB/s: 1.05 ms -> arithmetic bounds it
    assert query_limit.roofline_ms(212e6, 21e6, 50.0, 20e9) == pytest.approx(4.24)
    # the same weights at 2 GB/s: 10.5 ms -> the memory bounds it
    assert query_limit.roofline_ms(212e6, 21e6, 50.0, 2e9) == pytest.approx(10.5)


def test_best_keeps_the_fastest_call(query_limit):
    delays = iter([0.0, 0.02, 0.0, 0.01])  # the first call warms up and is not counted
    import time

    assert query_limit.best(lambda: time.sleep(next(delays)), 3) < 0.009


def test_the_cpu_model_is_named(query_limit):
    assert query_limit.cpu_model()  # lscpu's model name, or says it is unknown
