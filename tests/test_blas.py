"""``memtools.blas.blas_threads``: a block runs on the limit, nested blocks keep it, and the
configured threads are back when the block ends, even when it raises."""

from __future__ import annotations

import threading

import pytest

from memtools.blas import blas_threads

threadpoolctl = pytest.importorskip("threadpoolctl")


def numpy_blas_threads() -> int:
    infos = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas" and "numpy" in i["filepath"]]
    if not infos:
        pytest.skip("numpy's BLAS is not one threadpoolctl controls")
    return infos[0]["num_threads"]


def test_a_block_runs_on_the_limit_and_leaves_none_behind():
    def check():
        configured = numpy_blas_threads()
        with blas_threads(1):
            assert numpy_blas_threads() == 1
            with blas_threads(1):
                assert numpy_blas_threads() == 1
            assert numpy_blas_threads() == 1
        assert numpy_blas_threads() == configured
        with pytest.raises(ValueError), blas_threads(1):
            raise ValueError("boom")
        assert numpy_blas_threads() == configured
        with blas_threads(None):
            assert numpy_blas_threads() == configured

    # threadpoolctl lets one thread own OpenBLAS's pool; a fresh thread may not be it, so the
    # check runs on the thread that first limited it in this process
    owner = getattr(threadpoolctl.OpenBLASController, "_SHARED_STATE", None)
    thread = getattr(owner, "controlling_thread", None)
    if thread is not None and thread.is_alive() and thread is not threading.current_thread():
        pytest.skip("another thread of this test process owns OpenBLAS's thread pool")
    check()


def test_row_dots_is_the_matrix_vector_product(monkeypatch):
    import numpy as np

    from memtools.blas import row_dots

    rng = np.random.default_rng(0)
    matrix, vector = rng.standard_normal((300, 48)).astype(np.float32), rng.standard_normal(48).astype(np.float32)
    want = matrix.astype(np.float64) @ vector.astype(np.float64)
    got = row_dots(matrix, vector)
    assert got.shape == (300,) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(row_dots(matrix[::3], vector), want[::3], rtol=1e-5, atol=1e-5)  # a strided view
    assert row_dots(matrix[:0], vector).shape == (0,)
    monkeypatch.delattr(np, "vecdot", raising=False)  # numpy < 2: einsum
    np.testing.assert_allclose(row_dots(matrix, vector), want, rtol=1e-5, atol=1e-5)


LATE_BLAS = """
import threadpoolctl
import numpy as np
from memtools.blas import blas_threads

with blas_threads(1):  # the view of the BLAS libraries is made here, before scipy's is loaded
    np.ones((64, 64)) @ np.ones(64)
import scipy.linalg  # brings its own OpenBLAS beside numpy's
scipy.linalg.inv(np.eye(3))
blas = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
with blas_threads(1):
    inside = [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
print(len({i["filepath"] for i in blas}), inside)
"""


def test_a_blas_loaded_after_the_first_block_is_limited_too():
    """scipy's OpenBLAS, loaded after a first limited block (the torch engine imports it), is held to
    the limit as well (a view of the libraries kept from before it left its threads free)."""
    import subprocess
    import sys

    pytest.importorskip("scipy")
    done = subprocess.run([sys.executable, "-c", LATE_BLAS], capture_output=True, text=True, check=True)
    libraries, inside = done.stdout.split(maxsplit=1)
    if int(libraries) < 2:
        pytest.skip("scipy shares numpy's BLAS here")
    assert inside.strip() == str([1] * int(libraries))
