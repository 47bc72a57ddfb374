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
