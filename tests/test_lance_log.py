"""A caption import that trains a vector index prints nothing of lance's own log unless the user asks
for it (``LANCE_LOG``): lance's native module warns once for each product-quantizer sub-vector whenever
memtools trains the codebook on its smaller sample, which filled a 50 MB import's terminal with ~150
lines across the progress bar (memtools.store.tables.lance_import)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmark_support import benchmarks

# an import small enough for a test that still trains an IVF-PQ index at its folds (ANN_MIN_ROWS lowered)
IMPORT = """
import sys
from memtools.importers import bulk
from memtools.store.tables import lance_fold
lance_fold.ANN_MIN_ROWS = 600
bulk.INDEX_EVERY_NODES = 150
from memtools.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture(scope="module")
def captions(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("captions") / "captions.json"
    with benchmarks("import_bounded") as (import_bounded,):
        import_bounded.write_file(path, 0.15)
    return path


def _import(captions: Path, memory: Path, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k not in ("LANCE_LOG", "LANCEDB_LOG")}
    done = subprocess.run([sys.executable, "-c", IMPORT, "import-captions", str(captions), "--memory", str(memory),
                           "--embedder", "test:384", "--no-progress"], capture_output=True, text=True,
                          env={**environ, **env}, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Imported" in done.stdout
    return done.stderr


def test_an_import_that_trains_the_vector_index_prints_no_lance_log(captions, tmp_path):
    err = _import(captions, tmp_path / "memory")
    assert err == ""
    from memtools.store import Memory

    with Memory.open(tmp_path / "memory") as memory:  # the index was trained, so the warnings had a cause
        assert any("vector" in ix.columns for ix in memory._vectors.nodes().list_indices())


def test_the_user_gets_lance_warnings_back_with_lance_log(captions, tmp_path):
    err = _import(captions, tmp_path / "memory", LANCE_LOG="warn")
    assert "KMeans" in err and "WARN" in err
