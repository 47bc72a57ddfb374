"""Embeddings from any OpenAI-compatible ``POST {base_url}/embeddings`` endpoint, over httpx.

Works with OpenAI itself and with servers that copy its API (vLLM, TEI, Ollama, LiteLLM).
The HTTP seam is ``transport=`` (or a whole ``client=``), so tests fake the server with
respx or an ``httpx.MockTransport`` instead of patching anything.
"""

from __future__ import annotations

import email.utils
import os
import random
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import numpy as np

from memtools.costs import Tally, tokens_from_usage
from memtools.embed.base import normalize
from memtools.errors import ConfigError, EmbeddingError

# Dimensions of well-known models, so that ``dim`` needs no request for them.
KNOWN_DIMS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
_RETRY_STATUS = frozenset({408, 429})  # plus every 5xx
_MAX_BACKOFF_S = 8.0
_MAX_RETRY_AFTER_S = 60.0


class OpenAIEmbedder:
    """Embeds through an OpenAI-compatible embeddings API.

    The API key is read from the environment variable ``api_key_env`` when the embedder is
    built; when it is unset (or ``api_key_env=None``) no ``Authorization`` header is sent,
    which suits local servers. ``dim`` may be given; otherwise it comes from ``KNOWN_DIMS``
    or from the first response, so reading ``.dim`` first may cost one small request.
    ``dim`` is only checked against responses, never sent as ``dimensions``.

    Requests carry at most ``batch_size`` texts. Timeouts, network errors, 408, 429 and 5xx
    are retried up to ``max_retries`` times with exponential backoff, or after the server's
    ``Retry-After``. Pass ``transport=`` to swap the HTTP layer, or ``client=`` to use your
    own ``httpx.Client`` (then ``timeout`` and ``transport`` are yours to set, and closing it
    is up to you). ``sleep`` waits between retries (tests pass one that records the waits).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key_env: str | None = "OPENAI_API_KEY",
        dim: int | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        client: httpx.Client | None = None,
        max_retries: int = 3,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if client is not None and transport is not None:
            raise ConfigError("pass either client= or transport= to OpenAIEmbedder, not both")
        if batch_size < 1 or max_retries < 0:
            raise ConfigError("batch_size must be positive and max_retries not negative")
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base_url must be an http(s) URL such as https://api.openai.com/v1, not {base_url!r}")
        self.model = model
        self.url = base_url.rstrip("/") + "/embeddings"
        self.api_key_env = api_key_env
        self._api_key = os.environ.get(api_key_env) if api_key_env else None
        self._dim = dim if dim is not None else KNOWN_DIMS.get(model)
        self.batch_size = batch_size
        self.max_retries = max_retries
        self._timeout = timeout
        self._transport = transport
        self._client = client
        self._owns_client = client is None
        self._sleep = sleep
        self._lock = threading.Lock()
        self.usage = Tally()  # tokens of every request so far (estimated when the server sends no usage)

    def __repr__(self) -> str:
        return f"OpenAIEmbedder({self.model!r}, url={self.url!r})"

    @property
    def name(self) -> str:
        return f"openai:{self.model}"

    @property
    def dim(self) -> int:
        """The vector dimension; when neither given nor known, one tiny request finds it."""
        if self._dim is None:
            self.embed_documents(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("embed_documents takes a list of strings, not one string")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # The API rejects empty strings; a lone space embeds "nothing" just as well.
        texts = [text if text.strip() else " " for text in texts]
        parts = [self._embed_batch(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        return np.concatenate(parts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    def close(self) -> None:
        """Close the HTTP client if this embedder created it."""
        with self._lock:
            if self._owns_client and self._client is not None:
                self._client.close()
                self._client = None

    def __enter__(self) -> OpenAIEmbedder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _embed_batch(self, texts: list[str] | list[dict[str, str]]) -> np.ndarray:
        body = {"model": self.model, "input": texts, "encoding_format": "float"}
        response = self._post(body)
        try:
            data = sorted(response.json()["data"], key=lambda item: item["index"])
            vectors = np.asarray([item["embedding"] for item in data], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError(f"{self.url} returned an unreadable embeddings response: {exc}") from exc
        if vectors.ndim != 2 or len(vectors) != len(texts):
            raise EmbeddingError(f"{self.url} returned {len(data)} vectors for {len(texts)} texts")
        usage = response.json().get("usage")
        words = " ".join(t for t in texts if isinstance(t, str))  # image items (multimodal servers) count as images
        tokens_in, _, estimated = tokens_from_usage(usage if isinstance(usage, dict) else None, words,
                                                    images=sum(not isinstance(t, str) for t in texts))
        with self._lock:
            self.usage.add(tokens_in, 0, estimated)
            if self._dim is None:
                self._dim = vectors.shape[1]
        if vectors.shape[1] != self._dim:
            raise EmbeddingError(f"{self.name} returned {vectors.shape[1]}-d vectors, expected {self._dim}")
        return normalize(vectors)

    def _post(self, body: dict[str, Any]) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        client = self._http()
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                response = client.post(self.url, json=body, headers=headers)
            except httpx.TransportError as exc:  # timeouts, refused connections, ...
                if last:
                    raise EmbeddingError(f"{self.url} unreachable after {attempt + 1} tries: {exc!r}") from exc
                self._sleep(_backoff(attempt))
                continue
            except httpx.HTTPError as exc:  # not worth retrying: a malformed URL or response
                raise EmbeddingError(f"{self.name}: request to {self.url} failed: {exc!r}") from exc
            retryable = response.status_code in _RETRY_STATUS or response.status_code >= 500
            if retryable and not last:
                wait = _retry_after(response)
                self._sleep(_backoff(attempt) if wait is None else wait)
                continue
            if response.is_error:
                raise EmbeddingError(self._error_message(response, tries=attempt + 1))
            return response
        raise AssertionError("unreachable")

    def _error_message(self, response: httpx.Response, *, tries: int) -> str:
        message = _server_message(response)
        text = f"{self.name}: HTTP {response.status_code} from {self.url}"
        text += f" after {tries} tries" if tries > 1 else ""
        text += f": {message}"
        if response.status_code in (401, 403) and self.api_key_env and not self._api_key:
            text += f" (is {self.api_key_env} set?)"
        return text

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._client is None:
                self._client = httpx.Client(timeout=self._timeout, transport=self._transport)
            return self._client


def _server_message(response: httpx.Response) -> str:
    """The ``error.message`` of an OpenAI-style error body, else the start of the body."""
    try:
        payload = response.json()
    except ValueError:
        return response.text[:500] or response.reason_phrase
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(error, str):
        return error
    if isinstance(payload, dict) and payload.get("detail"):
        return str(payload["detail"])
    return response.text[:500]


def _retry_after(response: httpx.Response) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms`` or ``Retry-After``), capped."""
    seconds: float | None = None
    if "retry-after-ms" in response.headers:
        seconds = _float(response.headers["retry-after-ms"])
        seconds = None if seconds is None else seconds / 1000
    if seconds is None and "retry-after" in response.headers:
        value = response.headers["retry-after"]
        seconds = _float(value)
        if seconds is None:  # an HTTP date
            try:
                seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
            except (TypeError, ValueError):
                return None
    return None if seconds is None else min(max(seconds, 0.0), _MAX_RETRY_AFTER_S)


def _float(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def _backoff(attempt: int) -> float:
    """0.5 s, 1 s, 2 s, ... up to 8 s, with up to 25 % jitter taken off."""
    return min(0.5 * 2**attempt, _MAX_BACKOFF_S) * (1 - 0.25 * random.random())
