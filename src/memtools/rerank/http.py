"""Reranking through a ``POST {base_url}/rerank`` server, over httpx.

Two request shapes, chosen by ``api``:

* ``"rerank"`` (default): ``{"model", "query", "documents": [...], "top_n"}``, what Cohere,
  Jina, Infinity and vLLM share;
* ``"tei"``: ``{"query", "texts": [...], "truncate": true}``, text-embeddings-inference's own
  (it has no ``documents`` field and serves one model, so no ``model``).

The answer's shape is read from the JSON itself, whichever request was sent: an object with
``results`` is the Cohere family's (``[{"index", "relevance_score"}]``), a bare list is TEI's
(``[{"index", "score"}]``); either key is accepted in either shape. Anything else (a missing
or repeated index, a non-number or non-finite score, too few results) is a ``RerankError``.

Retries are the shared HTTP model clients' (``memtools.perception.openai.send_with_retries``):
408/425/429/5xx, timeouts and connection errors, honouring ``Retry-After``. ``transport=`` is
the seam tests fake with respx.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

import httpx

from memtools.errors import ConfigError, RerankError
from memtools.perception.base import check_model_requests_allowed
from memtools.perception.openai import RetryPolicy, send_with_retries
from memtools.rerank.base import checked_scores

API_KEY_ENV = "MEMTOOLS_RERANKER_API_KEY"
DEFAULT_RETRY = RetryPolicy(max_attempts=3, backoff_base=0.5, backoff_max=4.0, max_retry_after=30.0)


class HTTPReranker:
    """A rerank server. ``base_url`` is the API root (``/rerank`` is added): ``http://host:8080``
    for TEI or Infinity, ``http://host:8000/v1`` for vLLM, ``https://api.cohere.com/v2``,
    ``https://api.jina.ai/v1``. The key is read from ``api_key_env`` when the reranker is
    built (no ``Authorization`` header when unset). ``rerank`` is a blocking wrapper of
    ``arerank``: call ``arerank`` from async code."""

    def __init__(self, model: str = "", *, base_url: str, api: Literal["rerank", "tei"] = "rerank",
                 api_key_env: str | None = API_KEY_ENV, timeout: float = 10.0, retry: RetryPolicy | None = None,
                 transport: httpx.AsyncBaseTransport | None = None,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"reranker base_url must be an http(s) URL such as http://localhost:8080, "
                              f"not {base_url!r}")
        if api not in ("rerank", "tei"):
            raise ConfigError(f"reranker api must be 'rerank' (Cohere, Jina, Infinity, vLLM) or 'tei', not {api!r}")
        if api == "rerank" and not model:
            raise ConfigError("the 'rerank' API needs a model name (e.g. BAAI/bge-reranker-v2-m3); "
                              "a text-embeddings-inference server takes api='tei' and no model")
        self.model = model
        self.api = api
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/rerank"
        self.api_key_env = api_key_env
        self._api_key = os.environ.get(api_key_env) if api_key_env else None
        self.timeout = timeout
        self.retry = retry or DEFAULT_RETRY
        self._transport = transport
        self._sleep = sleep

    def __repr__(self) -> str:
        return f"HTTPReranker({self.model!r}, url={self.url!r}, api={self.api!r})"

    @property
    def name(self) -> str:
        return f"tei@{self.base_url}" if self.api == "tei" else f"http:{self.model}@{self.base_url}"

    def body(self, query: str, documents: Sequence[str]) -> dict[str, Any]:
        """The JSON request for one call."""
        if self.api == "tei":
            return {"query": query, "texts": list(documents), "truncate": True}
        return {"model": self.model, "query": query, "documents": list(documents), "top_n": len(documents)}

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        return asyncio.run(self.arerank(query, documents))

    async def arerank(self, query: str, documents: Sequence[str]) -> list[float]:
        if not documents:
            return []
        if self._transport is None:
            check_model_requests_allowed(f"reranker {self.name}")
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        body = self.body(query, documents)
        async with httpx.AsyncClient(timeout=self.timeout, transport=self._transport) as client:
            response = await send_with_retries(
                lambda: client.post(self.url, json=body, headers=headers), policy=self.retry,
                what=f"reranker {self.name}", timeout=self.timeout, error=RerankError, hint=self._hint,
                sleep=self._sleep, base_url=self.base_url)
        try:
            payload = response.json()
        except ValueError as exc:
            raise RerankError(f"reranker {self.name} answered something other than JSON: "
                              f"{response.text[:200]!r}") from exc
        return parse_scores(payload, len(documents), self.name)

    def _hint(self, status: int) -> str:
        if status in (401, 403):
            return f" (is {self.api_key_env} set?)" if self.api_key_env and not self._api_key else ""
        if status == 422 and self.api == "rerank":
            return " (a text-embeddings-inference server wants api='tei', spec tei:URL)"
        if status == 404:
            return f" (is {self.base_url} the API root? /rerank is added to it)"
        return ""


def parse_scores(payload: object, expected: int, name: str) -> list[float]:
    """Scores in document order from a Cohere-family (``{"results": [...]}``) or TEI (``[...]``) answer."""
    if isinstance(payload, dict) and isinstance(payload.get("results"), list):
        items: list = payload["results"]
    elif isinstance(payload, list):
        items = payload
    else:
        raise RerankError(f"reranker {name} answered neither {{'results': [...]}} nor a list: {str(payload)[:200]}")
    scores: list[object] = [None] * expected
    for item in items:
        index = item.get("index") if isinstance(item, dict) else None
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < expected:
            raise RerankError(f"reranker {name} answered a result without a valid index: {str(item)[:200]}")
        if scores[index] is not None:
            raise RerankError(f"reranker {name} scored document {index} twice")
        score = item.get("relevance_score", item.get("score"))
        scores[index] = "missing" if score is None else score
    missing = [i for i, s in enumerate(scores) if s is None]
    if missing:
        raise RerankError(f"reranker {name} scored {expected - len(missing)} of {expected} documents")
    return checked_scores(scores, expected, f"reranker {name}")


__all__ = ["API_KEY_ENV", "HTTPReranker", "parse_scores"]
