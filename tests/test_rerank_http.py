"""HTTPReranker against faked /rerank servers (respx routes at the httpx transport): the
Cohere-family and TEI shapes, malformed answers, retries (429 with Retry-After, 5xx, timeouts)."""

from __future__ import annotations

import json

import httpx
import pytest
import respx

from memtools.errors import ConfigError, RerankError
from memtools.perception.openai import RetryPolicy
from memtools.rerank import reranker_from_spec
from memtools.rerank.http import HTTPReranker, parse_scores

BASE = "http://rerank.test/v1"
DOCS = ["a man slices onions", "a car drives by", "onions in a pan"]
FAST = RetryPolicy(max_attempts=3, backoff_base=0.5, backoff_max=4.0, jitter=0.0)


class Sleeps:
    """Records the waits instead of waiting."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def router() -> respx.Router:
    return respx.Router(base_url=BASE, assert_all_called=False)


def make(router: respx.Router, sleeps: Sleeps | None = None, **kwargs) -> HTTPReranker:
    kwargs.setdefault("retry", FAST)
    kwargs.setdefault("model", "bge-reranker")
    return HTTPReranker(base_url=BASE, transport=httpx.MockTransport(router.async_handler), sleep=sleeps or Sleeps(),
                        **kwargs)


def cohere(scores: dict[int, float]) -> httpx.Response:
    """Results sorted by relevance, as Cohere, Jina, Infinity and vLLM send them."""
    ranked = sorted(scores.items(), key=lambda kv: -kv[1])
    return httpx.Response(200, json={"id": "r1", "results": [{"index": i, "relevance_score": s} for i, s in ranked],
                                     "meta": {"billed_units": {"search_units": 1}}})


def test_cohere_shape_request_and_scores_back_in_document_order(router):
    route = router.post("/rerank").mock(return_value=cohere({0: 0.9, 1: 0.01, 2: 0.5}))
    assert make(router).rerank("onions", DOCS) == [0.9, 0.01, 0.5]
    body = json.loads(route.calls.last.request.content)
    assert body == {"model": "bge-reranker", "query": "onions", "documents": DOCS, "top_n": 3}


def test_tei_shape_request_and_bare_list_answer(router):
    route = router.post("/rerank").mock(return_value=httpx.Response(
        200, json=[{"index": 2, "score": 0.7}, {"index": 0, "score": 0.6}, {"index": 1, "score": -3.0}]))
    reranker = make(router, model="", api="tei")
    assert reranker.rerank("onions", DOCS) == [0.6, -3.0, 0.7]
    assert json.loads(route.calls.last.request.content) == {"query": "onions", "texts": DOCS, "truncate": True}
    assert reranker.name == f"tei@{BASE}"


def test_the_answer_shape_is_read_from_the_json_whichever_request_was_sent():
    assert parse_scores([{"index": 1, "relevance_score": 2}, {"index": 0, "score": 1}], 2, "x") == [1.0, 2.0]
    assert parse_scores({"results": [{"index": 0, "score": 0.5}]}, 1, "x") == [0.5]


@pytest.mark.parametrize(("payload", "problem"), [
    ({"results": [{"index": 0, "relevance_score": 0.9}, {"index": 1, "relevance_score": 0.1}]}, "scored 2 of 3"),
    ({"results": [{"index": 0, "relevance_score": "high"}, {"index": 1, "relevance_score": 0.1},
                  {"index": 2, "relevance_score": 0.2}]}, "non-number"),
    ({"results": [{"index": 0, "relevance_score": None}, {"index": 1, "relevance_score": 0.1},
                  {"index": 2, "relevance_score": 0.2}]}, "non-number"),
    ([{"index": 0, "score": 0.9}, {"index": 0, "score": 0.1}, {"index": 2, "score": 0.2}], "twice"),
    ([{"index": 7, "score": 0.9}], "valid index"),
    ([{"index": True, "score": 0.9}], "valid index"),
    ({"data": []}, "neither"),
])
def test_malformed_answers_are_rerank_errors(router, payload, problem):
    router.post("/rerank").mock(return_value=httpx.Response(200, json=payload))
    with pytest.raises(RerankError, match=problem):
        make(router).rerank("onions", DOCS)


def test_nan_scores_are_refused(router):
    router.post("/rerank").mock(return_value=httpx.Response(
        200, content=b'{"results": [{"index": 0, "relevance_score": NaN}, {"index": 1, "relevance_score": 1},'
                     b' {"index": 2, "relevance_score": 2}]}', headers={"content-type": "application/json"}))
    with pytest.raises(RerankError, match="non-finite"):
        make(router).rerank("onions", DOCS)


def test_not_json_is_a_rerank_error(router):
    router.post("/rerank").mock(return_value=httpx.Response(200, text="<html>proxy page</html>"))
    with pytest.raises(RerankError, match="other than JSON"):
        make(router).rerank("onions", DOCS)


def test_429_waits_as_retry_after_says_then_succeeds(router):
    sleeps = Sleeps()
    route = router.post("/rerank").mock(side_effect=[
        httpx.Response(429, json={"error": {"message": "slow down"}}, headers={"Retry-After": "2"}),
        cohere({0: 0.3, 1: 0.2, 2: 0.1})])
    assert make(router, sleeps).rerank("onions", DOCS) == [0.3, 0.2, 0.1]
    assert sleeps.waits == [2.0]
    assert route.call_count == 2


def test_5xx_and_timeouts_are_retried_with_backoff(router):
    sleeps = Sleeps()
    route = router.post("/rerank").mock(side_effect=[httpx.Response(503, text="warming up"),
                                                     httpx.ReadTimeout("slow"), cohere({0: 1, 1: 2, 2: 3})])
    assert make(router, sleeps).rerank("onions", DOCS) == [1.0, 2.0, 3.0]
    assert sleeps.waits == [0.5, 1.0]  # backoff_base doubling, no jitter
    assert route.call_count == 3


def test_retries_run_out_with_the_last_problem(router):
    router.post("/rerank").mock(side_effect=httpx.ReadTimeout("slow"))
    with pytest.raises(RerankError, match=r"failed 3 times; last: no answer within"):
        make(router).rerank("onions", DOCS)


def test_a_refused_request_is_not_retried_and_hints_at_the_fix(router):
    route = router.post("/rerank").mock(return_value=httpx.Response(
        422, json={"error": "Failed to deserialize the JSON body: missing field `texts`"}))
    with pytest.raises(RerankError, match=r"HTTP 422.*missing field `texts`.*api='tei'"):
        make(router).rerank("onions", DOCS)
    assert route.call_count == 1


def test_the_key_comes_from_the_environment(router, monkeypatch):
    monkeypatch.setenv("MEMTOOLS_RERANKER_API_KEY", "sekret")
    route = router.post("/rerank").mock(return_value=cohere({0: 1, 1: 2, 2: 3}))
    make(router).rerank("q", DOCS)
    assert route.calls.last.request.headers["authorization"] == "Bearer sekret"
    monkeypatch.delenv("MEMTOOLS_RERANKER_API_KEY")
    router.post("/rerank").mock(return_value=httpx.Response(401, json={"error": {"message": "no key"}}))
    with pytest.raises(RerankError, match="MEMTOOLS_RERANKER_API_KEY set"):
        make(router).rerank("q", DOCS)


def test_no_documents_no_request(router):
    route = router.post("/rerank").mock(return_value=cohere({}))
    assert make(router).rerank("q", []) == []
    assert route.call_count == 0


def test_bad_settings_are_config_errors():
    with pytest.raises(ConfigError, match="http"):
        HTTPReranker("m", base_url="localhost:8080")
    with pytest.raises(ConfigError, match="needs a model"):
        HTTPReranker(base_url=BASE)


def test_specs_build_http_rerankers():
    reranker = reranker_from_spec("http:BAAI/bge-reranker-v2-m3@http://gpu:8000/v1/")
    assert isinstance(reranker, HTTPReranker)
    assert (reranker.model, reranker.url, reranker.name) == (
        "BAAI/bge-reranker-v2-m3", "http://gpu:8000/v1/rerank", "http:BAAI/bge-reranker-v2-m3@http://gpu:8000/v1")
    tei = reranker_from_spec("tei:http://gpu:8080")
    assert isinstance(tei, HTTPReranker) and tei.api == "tei" and tei.url == "http://gpu:8080/rerank"
