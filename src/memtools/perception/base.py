"""The perception seam: frames and a prompt in, text out.

Every vision-language backend (HTTP, LangChain, local transformers, replay, test fakes)
satisfies ``VLM``: one ``async complete(request) -> response``. ``BaseVLM`` is the small
shared core of the built-in backends: usage counting and the sync wrapper, written once.

A request carries frames as ``(t seconds, JPEG bytes)``; every backend puts a text label
with the frame's time (``frame_label``) before each image, so the model can answer with
timestamps. ``request_key`` is the stable identity of a request, used to record and
replay responses.

What a local model computed in floating point is never part of that identity: recognised
speech quoted in a prompt (``PerceptionRequest.speech``) differs between CPUs (faster-whisper's
kernels follow the instruction set), so the key stands a placeholder in for it and
``ReplayVLM`` compares the speech itself, by word error rate. Nor are the names a prompt offers
from the memory's library (``PerceptionRequest.vocabulary``), which an embedder chose from what
the library held: the key leaves them out.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from memtools.errors import PerceptionError

T = TypeVar("T")

ALLOW_MODEL_REQUESTS_ENV = "MEMTOOLS_ALLOW_MODEL_REQUESTS"
"""Set to ``0`` (e.g. in a test suite's conftest) to make every real model request fail."""


class PerceptionRequest(BaseModel):
    """What a vision-language model is asked: frames in time order, then the prompt."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt: str
    frames: list[tuple[float, bytes]] = Field(
        default_factory=list, description="(seconds from the video start, JPEG bytes), in the order shown."
    )
    system: str | None = None
    json_schema: dict[str, Any] | None = Field(
        default=None, description="Ask for JSON matching this schema (backends that can enforce it do)."
    )
    json_mode: bool = Field(default=False, description="Ask for a JSON object without a schema.")
    max_tokens: int = Field(default=2048, ge=1)
    temperature: float | None = Field(default=None, ge=0, description="None leaves the server's default.")
    speech: str = Field(default="", description=(
        "Recognised speech quoted verbatim in ``prompt`` (a transcript from a local recogniser, whose words and times "
        "vary with the CPU's numerics). ``request_key`` leaves it out; ``ReplayVLM`` compares it by word error rate."))
    vocabulary: str = Field(default="", description=(
        "The names of the memory's library offered in ``prompt`` (its section verbatim, ``memtools.builder.vocabulary``"
        "), chosen by an embedder from what the library holds. ``request_key`` leaves it out, so a recording replays "
        "into any library."))

    @field_validator("frames")
    @classmethod
    def _valid_frames(cls, frames: list[tuple[float, bytes]]) -> list[tuple[float, bytes]]:
        for t, data in frames:
            if not t >= 0:
                raise ValueError(f"frame time {t} must be seconds >= 0")
            if not data:
                raise ValueError(f"the frame at {t}s has no image bytes")
        return frames

    @model_validator(mode="after")
    def _speech_in_prompt(self) -> PerceptionRequest:
        if self.speech and self.speech not in self.prompt:
            raise ValueError("speech must be quoted verbatim in the prompt (it stands for that part of it)")
        if self.vocabulary and self.vocabulary not in self.prompt:
            raise ValueError("vocabulary must be quoted verbatim in the prompt (it stands for that part of it)")
        return self

    @property
    def wants_json(self) -> bool:
        return self.json_mode or self.json_schema is not None


class Usage(BaseModel):
    """Tokens one call used."""

    model_config = ConfigDict(frozen=True)

    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    estimated: bool = Field(default=False, description="the server sent no usage; tokens estimated from the text")

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class PerceptionResponse(BaseModel):
    """What the model answered. ``finish_reason == "length"`` means the answer was cut."""

    model_config = ConfigDict(frozen=True)

    text: str
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    finish_reason: str | None = None

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


@runtime_checkable
class VLM(Protocol):
    """A vision-language model. Implementations must allow concurrent ``complete`` calls."""

    async def complete(self, request: PerceptionRequest) -> PerceptionResponse:
        """Answer one request; raise ``PerceptionError`` when it cannot, after any retries."""
        ...


@dataclass(frozen=True)
class UsageTotals:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class UsageCounter:
    """Calls and tokens summed over a backend's life; safe from any thread or task."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._totals = UsageTotals()

    def add(self, usage: Usage) -> None:
        with self._lock:
            t = self._totals
            self._totals = UsageTotals(
                t.calls + 1, t.prompt_tokens + usage.prompt_tokens, t.completion_tokens + usage.completion_tokens
            )

    def totals(self) -> UsageTotals:
        with self._lock:
            return self._totals

    @property
    def calls(self) -> int:
        return self.totals().calls

    @property
    def prompt_tokens(self) -> int:
        return self.totals().prompt_tokens

    @property
    def completion_tokens(self) -> int:
        return self.totals().completion_tokens


class BaseVLM(ABC):
    """Shared core of the built-in backends: ``complete`` counts usage of every answered
    call in ``self.usage``; ``complete_sync`` is the blocking wrapper."""

    model_name: str = ""

    def __init__(self) -> None:
        self.usage = UsageCounter()

    async def complete(self, request: PerceptionRequest) -> PerceptionResponse:
        response = await self._complete(request)
        self.usage.add(response.usage)
        return response

    def complete_sync(self, request: PerceptionRequest) -> PerceptionResponse:
        return complete_sync(self, request)

    @abstractmethod
    async def _complete(self, request: PerceptionRequest) -> PerceptionResponse: ...


def complete_sync(vlm: VLM, request: PerceptionRequest) -> PerceptionResponse:
    """Call any ``VLM`` from blocking code, also from inside a running event loop (a notebook)."""
    return run_sync(lambda: vlm.complete(request))


def run_sync(make: Callable[[], Awaitable[T]]) -> T:
    async def main() -> T:
        return await make()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    with ThreadPoolExecutor(max_workers=1) as pool:  # a loop runs here: use a fresh one elsewhere
        return pool.submit(asyncio.run, main()).result()


class PerLoop(Generic[T]):
    """One ``T`` per running event loop: asyncio primitives and httpx clients belong to the
    loop they were first used on, and ``complete_sync`` runs each call on a new loop."""

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._items: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, T] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def get(self) -> T:
        loop = asyncio.get_running_loop()
        with self._lock:
            item = self._items.get(loop)
            if item is None:
                item = self._items[loop] = self._factory()
            return item

    def pop_current(self) -> T | None:
        with self._lock:
            return self._items.pop(asyncio.get_running_loop(), None)


# --- shared helpers -------------------------------------------------------------------------


def format_time(t: float) -> str:
    """``H:MM:SS``, the form every memtools text uses for times."""
    whole = int(t)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def frame_label(t: float) -> str:
    """The text put before each image: ``frame at 0:01:23 (83.0 s)``."""
    return f"frame at {format_time(t)} ({t:.1f} s)"


def image_mime(data: bytes) -> str:
    """``image/png`` for PNG bytes, ``image/jpeg`` otherwise (the contract is JPEG)."""
    return "image/png" if data.startswith(b"\x89PNG") else "image/jpeg"


SPEECH_PLACEHOLDER = "<recognised speech>"
"""What ``request_key`` hashes in place of ``PerceptionRequest.speech``."""


def request_key(request: PerceptionRequest, *, with_speech: bool = False) -> str:
    """A stable sha256 of what determines the answer: system, prompt, frames (time to the
    millisecond and image hash), JSON schema and mode. Not ``max_tokens`` nor
    ``temperature``, so a recording survives tuning them, and not the recognised speech
    (``request.speech``, replaced by a placeholder in the prompt), so a recording replays on
    any CPU. ``with_speech=True`` hashes the prompt as it is (the key recordings made before
    the speech was left out carry; the same key when a request quotes no speech). The library's
    names (``request.vocabulary``) are cut out of the prompt: the key is the key of the same
    request without them, so a recording replays into a memory whose library differs."""
    prompt = request.prompt.replace(request.vocabulary, "") if request.vocabulary else request.prompt
    if request.speech and not with_speech:
        prompt = prompt.replace(request.speech, SPEECH_PLACEHOLDER)
    canonical = {
        "v": 1,
        "system": request.system,
        "prompt": prompt,
        "frames": [[f"{t:.3f}", hashlib.sha256(data).hexdigest()] for t, data in request.frames],
        "json_schema": request.json_schema,
        "json_mode": request.json_mode,
    }
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def frames_key(request: PerceptionRequest) -> str:
    """A sha256 of the frames alone (times and images): which stretch of which video a request shows."""
    canonical = [[f"{t:.3f}", hashlib.sha256(data).hexdigest()] for t, data in request.frames]
    return hashlib.sha256(json.dumps(canonical, separators=(",", ":")).encode()).hexdigest()


def request_preview(request: PerceptionRequest, width: int = 80) -> str:
    """One short human-readable line about a request, for logs and recordings."""
    prompt = " ".join(request.prompt.split())
    prompt = prompt if len(prompt) <= width else prompt[: width - 3] + "..."
    if not request.frames:
        return f"no frames | {prompt}"
    first, last = request.frames[0][0], request.frames[-1][0]
    frames = f"{len(request.frames)} frame" + ("s" if len(request.frames) > 1 else "")
    return f"{frames} {format_time(first)}-{format_time(last)} | {prompt}"


# --- the guard against real model calls in tests ---------------------------------------------

_blocked_depth = 0
_blocked_lock = threading.Lock()


def _set_blocked(delta: int) -> None:
    global _blocked_depth
    with _blocked_lock:
        _blocked_depth += delta


def check_model_requests_allowed(what: str) -> None:
    """Raise ``PerceptionError`` when real model requests are blocked (see ``testing``)."""
    env = os.environ.get(ALLOW_MODEL_REQUESTS_ENV, "").strip().lower()
    if _blocked_depth > 0 or env in ("0", "false", "no"):
        raise PerceptionError(
            f"real model request blocked: {what}. Tests must use memtools.perception.testing.FunctionVLM,"
            " ReplayVLM, or an HTTP backend with a fake transport"
            f" (unset {ALLOW_MODEL_REQUESTS_ENV} or leave block_model_requests() to allow real calls)"
        )
