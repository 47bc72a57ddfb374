"""Fakes and a guard for tests; they ship with memtools because users test with them too.

``FunctionVLM(fn)`` behaves like a real backend (async, concurrent, counts usage, honours
the ``VLM`` protocol) but answers with ``fn(request)``. ``block_model_requests()`` makes
every real model request fail, so a test that forgot to inject a fake fails loudly
instead of spending money; a suite can do the same for all tests by setting
``MEMTOOLS_ALLOW_MODEL_REQUESTS=0``.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

from memtools.perception.base import (
    ALLOW_MODEL_REQUESTS_ENV,
    BaseVLM,
    PerceptionRequest,
    PerceptionResponse,
    Usage,
    _set_blocked,
)

TOKENS_PER_IMAGE = 85
"""What ``FunctionVLM`` counts per frame (OpenAI's cost of a low-detail image)."""

Answer = str | PerceptionResponse
AnswerFn = Callable[[PerceptionRequest], Answer | Awaitable[Answer]]


class FunctionVLM(BaseVLM):
    """A VLM whose answers come from ``fn(request)`` (sync or async; return text or a whole
    ``PerceptionResponse``). Token usage is estimated (words, plus ``TOKENS_PER_IMAGE`` per
    frame) unless ``fn`` returns a response with its own. Every request is kept in
    ``requests`` for assertions."""

    def __init__(self, fn: AnswerFn, *, model_name: str = "function") -> None:
        super().__init__()
        self.fn = fn
        self.model_name = model_name
        self.requests: list[PerceptionRequest] = []

    async def _complete(self, request: PerceptionRequest) -> PerceptionResponse:
        self.requests.append(request)
        answer = self.fn(request)
        if inspect.isawaitable(answer):
            answer = await answer
        else:
            await asyncio.sleep(0)  # yield like real I/O, so concurrency bugs show up in tests
        if isinstance(answer, PerceptionResponse):
            return answer
        if not isinstance(answer, str):
            raise TypeError("FunctionVLM's function must return str or PerceptionResponse, "
                            f"not {type(answer).__name__}")
        prompt_words = len(request.prompt.split()) + len((request.system or "").split())
        return PerceptionResponse(
            text=answer,
            usage=Usage(
                prompt_tokens=prompt_words + TOKENS_PER_IMAGE * len(request.frames),
                completion_tokens=len(answer.split()),
            ),
            model=self.model_name,
            finish_reason="stop",
        )


@contextmanager
def block_model_requests() -> Iterator[None]:
    """Within this block every real model request raises ``PerceptionError``.

    Blocks HTTP backends that talk to a real network (an injected ``transport`` or
    ``client`` counts as fake) and loading local models by name."""
    _set_blocked(+1)
    try:
        yield
    finally:
        _set_blocked(-1)


__all__ = ["ALLOW_MODEL_REQUESTS_ENV", "TOKENS_PER_IMAGE", "FunctionVLM", "block_model_requests"]
