"""The reranker seam: spec parsing, the honest fake, and the stage that bounds a reranker in
time and falls back to the first-stage order on any failure."""

from __future__ import annotations

import threading

import pytest

from memtools.errors import ConfigError, RerankError
from memtools.rerank import (
    Reranker,
    WordOverlapReranker,
    check_reranker_spec,
    checked_scores,
    reranker_from_env,
    reranker_from_spec,
    reranker_name,
)
from memtools.rerank.stage import rerank_order
from rerank_support import ScriptedReranker


def test_the_fake_is_a_reranker_and_prefers_candidates_that_say_what_the_query_asks():
    fake = WordOverlapReranker()
    assert isinstance(fake, Reranker)
    docs = ["a car drives by", "the man slices onions on a board", "onions onions onions", "he slices bread"]
    scores = fake.rerank("man slicing onions", docs)
    assert len(scores) == 4 and all(isinstance(s, float) for s in scores)
    assert max(range(4), key=scores.__getitem__) == 1  # covers the query, not just one word of it
    assert scores[0] < scores[3] < scores[1]
    assert fake.calls == [("man slicing onions", docs)]
    assert fake.rerank("", docs) == [0.0] * 4


def test_checked_scores_refuses_what_a_sort_cannot_use():
    assert checked_scores((1, 2.5), 2, "x") == [1.0, 2.5]
    for bad, problem in [([1.0], "1 score"), ("12", "not a list"), ([1, float("nan")], "non-finite"),
                         ([1, "2"], "non-number"), ([True, 1], "non-number"), (None, "not a list")]:
        with pytest.raises(RerankError, match=problem):
            checked_scores(bad, 2, "x")


def test_reranked_order_is_by_score_with_ties_in_first_stage_order():
    outcome = rerank_order(ScriptedReranker([0.1, 0.9, 0.1, 0.5]), "q", list("abcd"), timeout=5)
    assert outcome.ok and outcome.order == [1, 3, 0, 2] and outcome.scores == [0.9, 0.5, 0.1, 0.1]


@pytest.mark.parametrize(("reranker", "said"), [
    (ScriptedReranker([0.3]), "returned 1 score(s) for 3"),
    (ScriptedReranker([0.3, float("nan"), 0.1]), "non-finite"),
    (ScriptedReranker(["a", "b", "c"]), "non-number"),
    (ScriptedReranker(None), "NoneType"),
    (ScriptedReranker(error=RerankError("server said no\ntraceback...")), "failed: server said no"),
    (ScriptedReranker(error=KeyError("internal detail")), "failed (KeyError)"),
])
def test_any_failure_keeps_the_first_stage_order_and_says_why(reranker, said):
    outcome = rerank_order(reranker, "q", ["a", "b", "c"], timeout=5)
    assert not outcome.ok and outcome.order == [0, 1, 2] and outcome.scores is None
    assert said in outcome.warning and "traceback" not in outcome.warning and "internal detail" not in outcome.warning


def test_a_reranker_past_its_timeout_is_not_waited_for():
    release = threading.Event()
    try:
        outcome = rerank_order(ScriptedReranker([1, 2], release=release), "q", ["a", "b"], timeout=0.05)
    finally:
        release.set()
    assert outcome.order == [0, 1] and "no answer within 0.05 s" in outcome.warning


def test_specs():
    assert reranker_from_spec("none") is None
    assert isinstance(reranker_from_spec("test"), WordOverlapReranker)
    assert reranker_name("http:m@http://h:1/") == "http:m@http://h:1"
    assert reranker_name("llm:openai:gpt-4o-mini@http://h/v1") == "llm:gpt-4o-mini"
    assert reranker_name("tei:http://h:8080") == "tei@http://h:8080"
    assert check_reranker_spec(" test ") == "test"
    for bad in ("http:model", "cohere:x", "llm:gpt-4o", "cross-encoder:", "tei:"):
        with pytest.raises(ConfigError, match="unknown reranker spec"):
            check_reranker_spec(bad)


def test_the_environment_names_the_reranker(monkeypatch):
    monkeypatch.delenv("MEMTOOLS_RERANKER", raising=False)
    assert reranker_from_env() is None
    monkeypatch.setenv("MEMTOOLS_RERANKER", "test")
    assert isinstance(reranker_from_env(), WordOverlapReranker)
    monkeypatch.setenv("MEMTOOLS_RERANKER", "bogus")
    with pytest.raises(ConfigError, match="MEMTOOLS_RERANKER: unknown reranker spec"):
        reranker_from_env()
