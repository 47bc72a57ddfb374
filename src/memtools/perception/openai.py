"""Any OpenAI-compatible chat-completions server, over httpx.

Works with OpenAI, vLLM, Ollama (``http://localhost:11434/v1``), LM Studio
(``http://localhost:1234/v1``), OpenRouter (``https://openrouter.ai/api/v1``) and Gemini's
compatible endpoint (``https://generativelanguage.googleapis.com/v1beta/openai``, key in
``GEMINI_API_KEY``). Each frame becomes a text label with its time followed by an
``image_url`` part holding a base64 data URL; the prompt comes last.

Retries: 408, 425, 429 and 5xx answers, timeouts and connection errors are retried with
exponential backoff and jitter, waiting what ``Retry-After`` asks for when the server says
(seconds or an HTTP date); other 4xx answers fail at once with the server's message.
At most ``concurrency`` requests are in flight per client.
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import os
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timezone
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field

from memtools.costs import tokens_from_usage
from memtools.errors import PerceptionError
from memtools.perception.base import (
    BaseVLM,
    PerceptionRequest,
    PerceptionResponse,
    PerLoop,
    Usage,
    check_model_requests_allowed,
    frame_label,
    image_mime,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class RetryPolicy(BaseModel):
    """When and how long to wait before trying a failed request again."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_attempts: int = Field(5, ge=1, description="Tries in all, the first included.")
    backoff_base: float = Field(1.0, ge=0, description="Seconds before the first retry; doubles each time.")
    backoff_max: float = Field(30.0, ge=0, description="Longest backoff between two tries.")
    jitter: float = Field(0.5, ge=0, le=1, description="Up to this fraction of each backoff is random.")
    max_retry_after: float = Field(120.0, ge=0, description="Give up at once if Retry-After asks for longer.")

    def backoff(self, attempt: int, rand: float) -> float:
        """Wait after failed try number ``attempt`` (1-based); ``rand`` is uniform in [0, 1)."""
        delay = min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1))
        return delay * (1.0 - self.jitter * rand)


def parse_retry_after(headers: httpx.Headers, now: Callable[[], float] = time.time) -> float | None:
    """Seconds the server asks to wait: ``retry-after-ms``, or ``Retry-After`` in seconds or as an HTTP date."""
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - now())


@dataclass
class _LoopState:
    client: httpx.AsyncClient
    semaphore: asyncio.Semaphore


class OpenAIVLM(BaseVLM):
    """A chat-completions client for one model on one server.

    ``transport`` (an ``httpx.AsyncBaseTransport``) or ``client`` (an ``httpx.AsyncClient``
    you own and close) replace the network, e.g. for tests; ``sleep`` replaces
    ``asyncio.sleep`` between retries. The API key comes from ``api_key`` or the
    environment variable ``api_key_env``; without one no ``Authorization`` header is sent
    (fine for local servers).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 120.0,
        concurrency: int = 4,
        retry: RetryPolicy | None = None,
        image_detail: Literal["auto", "low", "high"] | None = None,
        max_tokens_field: str = "max_tokens",
        extra_body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        client: httpx.AsyncClient | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        super().__init__()
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, not {concurrency}")
        self.model_name = model
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.concurrency = concurrency
        self.retry = retry or RetryPolicy()
        self.image_detail = image_detail
        self.max_tokens_field = max_tokens_field
        self.extra_body = dict(extra_body or {})
        key = api_key if api_key is not None else os.environ.get(api_key_env)
        self._headers = {"Content-Type": "application/json", **(headers or {})}
        if key:
            self._headers["Authorization"] = f"Bearer {key}"
        self._transport = transport
        self._client = client
        self._sleep = sleep
        self._random = random.Random()
        self._state = PerLoop(self._new_state)

    def __repr__(self) -> str:
        return f"OpenAIVLM(model={self.model_name!r}, base_url={self.base_url!r})"

    # --- lifecycle ---------------------------------------------------------------------------

    def _new_state(self) -> _LoopState:
        client = self._client or httpx.AsyncClient(transport=self._transport, timeout=self.timeout)
        return _LoopState(client=client, semaphore=asyncio.Semaphore(self.concurrency))

    async def aclose(self) -> None:
        """Close the connection pool this client opened on the running loop."""
        state = self._state.pop_current()
        if state is not None and self._client is None:
            await state.client.aclose()

    async def __aenter__(self) -> OpenAIVLM:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # --- the request ---------------------------------------------------------------------------

    def build_body(self, request: PerceptionRequest) -> dict[str, Any]:
        """The JSON body sent for ``request``."""
        content: list[dict[str, Any]] = []
        for t, data in request.frames:
            image_url: dict[str, Any] = {"url": f"data:{image_mime(data)};base64,{base64.b64encode(data).decode()}"}
            if self.image_detail:
                image_url["detail"] = self.image_detail
            content.append({"type": "text", "text": frame_label(t)})
            content.append({"type": "image_url", "image_url": image_url})
        content.append({"type": "text", "text": request.prompt})
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.append({"role": "user", "content": content})
        body: dict[str, Any] = {"model": self.model_name, "messages": messages,
                                self.max_tokens_field: request.max_tokens}
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.json_schema is not None:
            name = str(request.json_schema.get("title") or "response")
            safe = "".join(c if c.isalnum() or c in "_-" else "_" for c in name)[:64]
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": safe, "schema": request.json_schema}}
        elif request.json_mode:
            body["response_format"] = {"type": "json_object"}
        body.update(self.extra_body)
        return body

    async def _complete(self, request: PerceptionRequest) -> PerceptionResponse:
        if self._transport is None and self._client is None:
            check_model_requests_allowed(f"{self.model_name} at {self.url}")
        body = self.build_body(request)
        state = self._state.get()
        async with state.semaphore:
            response = await send_with_retries(
                lambda: state.client.post(self.url, json=body, headers=self._headers), policy=self.retry,
                what=f"{self.model_name} at {self.url}", timeout=self.timeout, hint=self._hint,
                sleep=self._sleep, rand=self._random.random, error=PerceptionError, base_url=self.base_url)
        return self._parse(response, request)

    def _parse(self, response: httpx.Response, request: PerceptionRequest) -> PerceptionResponse:
        try:
            data = response.json()
            choice = data["choices"][0]
            message = choice.get("message") or {}
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            preview = response.text[:300]
            raise PerceptionError(
                f"{self.model_name} at {self.url} answered something that is not a chat completion: {preview!r}"
            ) from exc
        content = message.get("content")
        if isinstance(content, list):  # some servers answer with content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        tokens_in, tokens_out, estimated = tokens_from_usage(
            data.get("usage") or None, (request.system or "") + request.prompt, content or "", len(request.frames))
        return PerceptionResponse(
            text=content or "",
            usage=Usage(prompt_tokens=tokens_in, completion_tokens=tokens_out, estimated=estimated),
            model=str(data.get("model") or self.model_name),
            finish_reason=choice.get("finish_reason"),
        )

    def _hint(self, status: int) -> str:
        if status in (401, 403):
            return f"; check the API key in ${self.api_key_env}"
        if status == 404:
            return f"; check the model name {self.model_name!r} and base_url (most servers end in /v1)"
        if status in (400, 413, 422):
            return "; the server rejected the request body (too many or too large images, or an unsupported option?)"
        return ""


async def send_with_retries(send: Callable[[], Awaitable[httpx.Response]], *, policy: RetryPolicy, what: str,
                            timeout: float, error: type[Exception], hint: Callable[[int], str] = lambda s: "",
                            sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                            rand: Callable[[], float] = random.random, base_url: str = "") -> httpx.Response:
    """The first successful answer of ``send()``, retrying 408/425/429/5xx, timeouts and
    connection errors as ``policy`` says (``Retry-After`` honoured); any other failure raises
    ``error`` with the server's message and ``hint(status)``. Shared by every HTTP model client."""
    for attempt in range(1, policy.max_attempts + 1):
        wait: float | None = None
        cause: BaseException | None = None
        try:
            response = await send()
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            raise error(f"bad base_url {base_url!r} for {what}: {exc}") from exc
        except httpx.TimeoutException as exc:
            problem, cause = f"no answer within {timeout}s ({type(exc).__name__})", exc
        except httpx.TransportError as exc:
            problem, cause = f"connection failed ({type(exc).__name__}: {exc})", exc
        else:
            if response.is_success:
                return response
            status = response.status_code
            message = _server_message(response)
            if not _retryable(status):
                raise error(f"{what} refused the request (HTTP {status}): {message}{hint(status)}")
            problem = f"HTTP {status}: {message}"
            wait = parse_retry_after(response.headers)
            if wait is not None and wait > policy.max_retry_after:
                raise error(f"{what} is rate limited and asks to wait {wait:.0f}s,"
                            f" more than max_retry_after={policy.max_retry_after:.0f}s: {message}")
        if attempt == policy.max_attempts:
            break
        if wait is None:
            wait = policy.backoff(attempt, rand())
        await sleep(wait)
    raise error(f"{what} failed {policy.max_attempts} times; last: {problem}") from cause


def _retryable(status: int) -> bool:
    return status in (408, 425, 429) or status >= 500


def _server_message(response: httpx.Response) -> str:
    """The error text a server put in its answer (OpenAI, Gemini and plain-text shapes)."""
    try:
        data: Any = response.json()
    except ValueError:
        text = response.text.strip()
        return text[:500] or response.reason_phrase
    if isinstance(data, list) and data:
        data = data[0]
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict):
            for key in ("message", "detail", "error"):
                if isinstance(error.get(key), str):
                    return error[key]
        elif isinstance(error, str):
            return error
        if isinstance(data.get("detail"), str):
            return data["detail"]
    return str(data)[:500]
