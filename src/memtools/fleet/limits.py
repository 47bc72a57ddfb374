"""A limit on concurrent requests per model endpoint, shared by every video of a fleet build.

Rate limits belong to an API key or a server, not to a worker: ``LimitedVLM`` wraps a
worker's VLM so that each request first takes a slot of its endpoint's limit. In one
process the slots are an ``asyncio`` semaphore (``LocalSlots``); on a Ray cluster they live
in one named actor per endpoint (``memtools.fleet.ray_runner``), which every worker on
every node asks. Both count the calls and tokens that went through them: the fleet's
progress reads them.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Protocol

from memtools.perception import PerceptionRequest, PerceptionResponse


@dataclass(frozen=True)
class SlotStats:
    """What went through one endpoint's slots so far."""

    calls: int = 0
    tokens: int = 0
    in_flight: int = 0
    peak: int = 0  # the most requests in flight at once


class Slots(Protocol):
    """An endpoint's request slots. ``acquire`` waits for one and returns a token for ``release``."""

    async def acquire(self) -> Any: ...

    async def release(self, token: Any, tokens: int) -> None: ...


class LocalSlots:
    """``size`` requests in flight at once, within one process (one event loop)."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"an endpoint limit must be >= 1, not {size}")
        self.size = size
        self._semaphore: asyncio.Semaphore | None = None
        self._calls = self._tokens = self._busy = self._peak = 0

    async def acquire(self) -> None:
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.size)
        await self._semaphore.acquire()
        self._busy += 1
        self._peak = max(self._peak, self._busy)

    async def release(self, token: Any, tokens: int) -> None:
        self._busy -= 1
        self._calls += 1
        self._tokens += tokens
        if self._semaphore is not None:  # made by the first acquire
            self._semaphore.release()

    def stats(self) -> SlotStats:
        return SlotStats(self._calls, self._tokens, self._busy, self._peak)


class LimitedVLM:
    """``vlm`` whose every request holds a slot of ``slots`` while it runs."""

    def __init__(self, vlm: Any, slots: Slots) -> None:
        self.vlm = vlm
        self.slots = slots

    def __getattr__(self, name: str) -> Any:  # model_name, base_url, usage... of the wrapped backend
        return getattr(self.vlm, name)

    async def complete(self, request: PerceptionRequest) -> PerceptionResponse:
        token = await self.slots.acquire()
        tokens = 0
        try:
            response = await self.vlm.complete(request)
            tokens = response.usage.total_tokens
            return response
        finally:
            await self.slots.release(token, tokens)


def endpoint_key(vlm: Any) -> str:
    """What one limit covers: the server's base URL, else the backend's kind and model."""
    base_url = getattr(vlm, "base_url", None)
    if base_url:
        return str(base_url).rstrip("/")
    return f"{type(vlm).__name__}:{getattr(vlm, 'model_name', '')}"
