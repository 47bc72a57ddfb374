"""OpenAIEmbedder against an OpenAI-compatible /embeddings endpoint faked at the transport."""

from __future__ import annotations

import json

import httpx
import numpy as np
import pytest
import respx

from memtools.embed import OpenAIEmbedder, TestEmbedder
from memtools.errors import ConfigError, EmbeddingError
from test_embed import ONIONS, PARAPHRASE, UNRELATED, assert_unit_rows

# --- OpenAIEmbedder over a faked transport ------------------------------------------------


class FakeEmbeddingsServer:
    """An OpenAI-style ``/embeddings`` endpoint: vectors from the TestEmbedder, ``data``
    returned in reverse order (the client must sort by ``index``)."""

    def __init__(self, dim: int = 8) -> None:
        self.router = respx.MockRouter(base_url="https://api.test/v1", assert_all_called=False)
        self.route = self.router.post("/embeddings")
        self.route.side_effect = self.embeddings
        self.hashing = TestEmbedder(dim)
        self.bodies: list[dict] = []

    def embeddings(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        vectors = self.hashing.embed_documents(body["input"]) * 3.0  # unnormalised on purpose
        data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]
        return httpx.Response(200, json={"object": "list", "data": data[::-1], "model": body["model"]})

    def embedder(self, **kwargs) -> OpenAIEmbedder:
        kwargs.setdefault("base_url", "https://api.test/v1")
        return OpenAIEmbedder("tiny-embed", transport=httpx.MockTransport(self.router.handler), **kwargs)


@pytest.fixture
def server():
    return FakeEmbeddingsServer()


@pytest.fixture
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def test_openai_batches_orders_and_normalises(server, api_key):
    texts = [ONIONS, PARAPHRASE, UNRELATED, "a dog", "the board"]
    embedder = server.embedder(batch_size=2)
    vectors = embedder.embed_documents(texts)
    assert [len(b["input"]) for b in server.bodies] == [2, 2, 1]
    assert server.bodies[0] == {"model": "tiny-embed", "input": texts[:2], "encoding_format": "float"}
    request = server.route.calls[0].request
    assert request.headers["Authorization"] == "Bearer sk-test"
    assert request.url == "https://api.test/v1/embeddings"
    np.testing.assert_allclose(vectors, TestEmbedder(8).embed_documents(texts), atol=1e-6)
    assert embedder.name == "openai:tiny-embed" and embedder.dim == 8
    assert_unit_rows(embedder.embed_query(ONIONS), 8)


def test_openai_dim_comes_from_the_first_response(server):
    embedder = server.embedder()
    assert embedder.dim == 8 and server.route.call_count == 1
    assert embedder.embed_documents([]).shape == (0, 8) and server.route.call_count == 1
    assert OpenAIEmbedder("text-embedding-3-small").dim == 1536  # known: no request
    with pytest.raises(EmbeddingError, match="8-d vectors, expected 4"):
        server.embedder(dim=4).embed_query("a car")


def test_openai_retries_429_honouring_retry_after(server):
    server.route.side_effect = [httpx.Response(429, headers={"Retry-After": "1"}), server.embeddings]
    waits: list[float] = []
    vector = server.embedder(sleep=waits.append).embed_query("a car")
    assert waits == [1.0]  # waited Retry-After (1 s), not the first backoff (<= 0.5 s)
    assert server.route.call_count == 2
    assert_unit_rows(vector, 8)


def test_openai_retries_timeouts(server):
    server.route.side_effect = [httpx.ReadTimeout("slow"), server.embeddings]
    waits: list[float] = []
    assert_unit_rows(server.embedder(sleep=waits.append).embed_query("a car"), 8)
    assert len(waits) == 1 and 0.375 <= waits[0] <= 0.5  # the first backoff, with its jitter


def test_openai_gives_up_on_persistent_5xx_with_the_server_message(server):
    failure = {"error": {"message": "The server had an error", "type": "server_error"}}
    server.route.side_effect = lambda request: httpx.Response(500, json=failure, headers={"Retry-After": "0"})
    with pytest.raises(EmbeddingError, match="HTTP 500 .* after 3 tries: The server had an error"):
        server.embedder(max_retries=2).embed_query("a car")
    assert server.route.call_count == 3


def test_openai_client_errors_fail_at_once(server):
    server.route.side_effect = lambda request: httpx.Response(401, json={"error": {"message": "Incorrect API key"}})
    with pytest.raises(EmbeddingError, match="Incorrect API key.*is OPENAI_API_KEY set"):
        server.embedder().embed_documents(["a car"])
    assert server.route.call_count == 1
    assert "Authorization" not in server.route.calls[0].request.headers


def test_openai_unreadable_response_is_an_embedding_error(server):
    server.route.side_effect = lambda request: httpx.Response(200, json={"data": [{"index": 0}]})
    with pytest.raises(EmbeddingError, match="unreadable"):
        server.embedder().embed_query("a car")


def test_openai_sends_no_empty_strings(server):
    server.embedder().embed_documents(["", "a car"])
    assert server.bodies[0]["input"] == [" ", "a car"]


def test_openai_uses_and_leaves_open_a_given_client(server):
    client = httpx.Client(transport=httpx.MockTransport(server.router.handler))
    with OpenAIEmbedder("tiny-embed", base_url="https://api.test/v1", client=client) as embedder:
        assert_unit_rows(embedder.embed_query("a car"), 8)
    assert not client.is_closed and server.route.call_count == 1


def test_openai_rejects_bad_settings():
    with pytest.raises(ConfigError):
        OpenAIEmbedder("m", client=httpx.Client(), transport=httpx.MockTransport(lambda r: httpx.Response(200)))
    with pytest.raises(ConfigError, match="http"):
        OpenAIEmbedder("m", base_url="api.openai.com/v1")
