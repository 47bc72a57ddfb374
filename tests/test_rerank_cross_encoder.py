"""CrossEncoderReranker on tiny randomly initialised BERT classifiers built here, offline: the
scores are the model's own (compared with a forward pass run by hand, never with numbers)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from memtools.errors import RerankError  # noqa: E402
from memtools.rerank import reranker_from_spec  # noqa: E402
from memtools.rerank.cross_encoder import CrossEncoderReranker  # noqa: E402

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"a man slices onions on the board car drives pan fire".split()]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """One-layer BERT sequence classifiers with one output (a relevance logit) and two (irrelevant, relevant)."""
    root = tmp_path_factory.mktemp("cross")
    vocab = root / "vocab.txt"
    vocab.write_text("\n".join(WORDS + [f"w{i}" for i in range(64 - len(WORDS))]) + "\n")
    tokenizer = transformers.BertTokenizerFast(vocab_file=str(vocab))
    paths = {}
    for labels in (1, 2):
        torch.manual_seed(labels)
        config = transformers.BertConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                         num_attention_heads=2, num_labels=labels)
        model = transformers.BertForSequenceClassification(config)
        paths[labels] = root / f"labels-{labels}"
        model.save_pretrained(paths[labels])
        tokenizer.save_pretrained(paths[labels])
    return paths


def by_hand(path, query: str, documents: list[str]) -> torch.Tensor:
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(path).eval()
    with torch.inference_mode():
        return model(**tokenizer([query] * len(documents), documents, padding=True, return_tensors="pt")).logits


DOCS = ["a man slices onions on the board", "a car drives", "the pan fire", "onions"]


def test_one_logit_heads_score_by_their_logit(tiny):
    reranker = CrossEncoderReranker(tiny[1], device="cpu", batch_size=3)  # two batches, one of them padded
    scores = reranker.rerank("man slices onions", DOCS)
    expected = by_hand(tiny[1], "man slices onions", DOCS)[:, 0]
    assert len(scores) == len(DOCS)
    torch.testing.assert_close(torch.tensor(scores), expected, rtol=1e-4, atol=1e-5)


def test_two_class_heads_score_by_the_relevant_class_margin(tiny):
    scores = CrossEncoderReranker(tiny[2], device="cpu").rerank("car drives", DOCS)
    logits = by_hand(tiny[2], "car drives", DOCS)
    torch.testing.assert_close(torch.tensor(scores), logits[:, 1] - logits[:, 0], rtol=1e-4, atol=1e-5)


def test_the_query_is_read_with_each_document(tiny):
    reranker = CrossEncoderReranker(tiny[1], device="cpu")
    assert reranker.rerank("man slices onions", DOCS) != reranker.rerank("pan fire", DOCS)


def test_a_missing_folder_is_a_rerank_error(tmp_path):
    with pytest.raises(RerankError, match="no cross-encoder model folder"):
        CrossEncoderReranker(tmp_path / "nothing-here").rerank("q", ["d"])


def test_the_spec_names_a_folder_and_loads_nothing_until_used(tiny):
    reranker = reranker_from_spec(f"cross-encoder:{tiny[1]}")
    assert isinstance(reranker, CrossEncoderReranker)
    assert reranker.name == f"cross-encoder:{tiny[1]}"
    assert reranker._loaded is None
    assert reranker.rerank("q", []) == []
