"""Asking the model: checkpointed, bounded in concurrency, retried with the error.

``ModelCalls.ask(step, prompt, frames)`` returns the validated answer (or None when every
attempt was unusable) and the issues met on the way. Each attempt's raw answer is saved as
``calls/<step>-a<attempt>.json`` before it is parsed, so a resumed build never asks the model
again for an answer it already has, and parses it exactly as the first run did.

Frames are produced lazily (``frames`` is an async callable) and only when a call is
really made; the frames of the next calls are fetched while the current ones wait for the
model.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from memtools.builder.budget import current_budget
from memtools.builder.checkpoint import Checkpoints
from memtools.builder.prompts import Prompt
from memtools.builder.repair import AnswerError, parse_answer
from memtools.builder.report import Issue, Usage
from memtools.perception import VLM, PerceptionRequest, request_key

FramesFn = Callable[[], Awaitable[list[tuple[float, bytes]]]]


class PrioritySlots:
    """A semaphore whose waiters are served lowest ``priority`` first (then first come).

    ``reserved`` slots are kept for priority 0 (the segmentation window, which the rest of the
    build waits for), so it never queues behind a round of extraction calls.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.reserved = 0
        self._busy = 0
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def _can(self, priority: int) -> bool:
        return self._busy < self.size - (self.reserved if priority > 0 else 0)

    def reserve(self, n: int) -> None:
        self.reserved = max(0, min(n, self.size - 1))
        self._dispatch()

    @contextlib.asynccontextmanager
    async def take(self, priority: int) -> AsyncIterator[None]:
        if not self._waiting and self._can(priority):
            self._busy += 1
        else:
            future = asyncio.get_running_loop().create_future()
            entry = (priority, next(self._seq), future)
            heapq.heappush(self._waiting, entry)
            self._dispatch()  # it may outrank everyone waiting
            try:
                await future
            except BaseException:
                if future.done() and not future.cancelled():
                    self._release()  # granted a slot while being cancelled: hand it on
                else:
                    self._waiting.remove(entry)
                    heapq.heapify(self._waiting)
                raise
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        self._busy -= 1
        self._dispatch()

    def _dispatch(self) -> None:
        while self._waiting and self._can(self._waiting[0][0]):
            _, _, future = heapq.heappop(self._waiting)
            if not future.done():
                self._busy += 1
                future.set_result(None)


PRIORITY = {"segment": 0, "aggregate": 1, "extract": 2}


class ModelCalls:
    """The one place the pipeline talks to the perception model."""

    def __init__(self, vlm: VLM, checkpoints: Checkpoints, *, concurrency: int, max_retries: int,
                 usage: Usage, on_change: Callable[[], None] | None = None) -> None:
        self.vlm = vlm
        self.checkpoints = checkpoints
        self.max_retries = max_retries
        self.usage = usage
        self._slots = PrioritySlots(concurrency)
        # frames for the next calls are decoded while the current ones wait for the model
        self._prefetch = PrioritySlots(2 * concurrency)
        self._on_change = on_change or (lambda: None)

    def segmenting(self, active: bool) -> None:
        """While windows are being segmented, keep one model slot free for them (from 4 slots up)."""
        self._slots.reserve(1 if active and self._slots.size >= 4 else 0)

    async def ask(self, stage: str, step: str, prompt: Prompt, frames: FramesFn, *,
                  max_tokens: int) -> tuple[Any, list[Issue]]:
        """The stage's parsed answer (its prompt's response model; None when unusable) and what went wrong."""
        issues: list[Issue] = []
        current = prompt
        shown: list[tuple[float, bytes]] | None = None
        error = ""
        for attempt in range(self.max_retries + 1):
            name = f"calls/{step}-a{attempt}"
            record = self.checkpoints.load(name)
            if record is None:
                priority = PRIORITY.get(stage, 9)
                # the critical path (priority 0) skips the prefetch bound: one window at a time
                async with contextlib.nullcontext() if priority == 0 else self._prefetch.take(priority):
                    if shown is None:
                        shown = await frames()
                    request = PerceptionRequest(prompt=current.text, system=current.system, frames=shown,
                                                json_mode=True, max_tokens=max_tokens, speech=current.speech,
                                                vocabulary=current.vocabulary)
                    async with self._slots.take(priority):
                        budget = current_budget()  # --max-tokens / --max-cost: stop before passing it
                        held = budget.admit((current.system or "") + current.text, len(shown), max_tokens) \
                            if budget is not None else None
                        try:
                            response = await self.vlm.complete(request)
                        finally:
                            if budget is not None and held is not None:
                                budget.release(held)
                        if budget is not None:
                            budget.spent.add(response.usage.prompt_tokens, response.usage.completion_tokens,
                                             response.usage.estimated, calls=1)
                record = {"key": request_key(request), "text": response.text, "model": response.model,
                          "finish_reason": response.finish_reason,
                          "usage": {"prompt_tokens": response.usage.prompt_tokens,
                                    "completion_tokens": response.usage.completion_tokens},
                          "estimated": response.usage.estimated, "stage": stage}
                self.checkpoints.save(name, record)
                self.usage.calls += 1
                self.usage.input_tokens += response.usage.prompt_tokens
                self.usage.output_tokens += response.usage.completion_tokens
            else:
                self.usage.cached_calls += 1
            if attempt:
                self.usage.retries += 1
            self._on_change()
            if record.get("finish_reason") == "length":
                issues.append(Issue(stage=stage, step=step, severity="repaired",
                                    detail="the answer hit the output token limit and was cut off"))
            try:
                answer, notes = parse_answer(record.get("text") or "", current.response_model)
            except AnswerError as exc:
                error = str(exc)
                issues.append(Issue(stage=stage, step=step, severity="repaired" if attempt < self.max_retries
                                    else "fallback", detail=f"attempt {attempt + 1} unusable: {error}"))
                current = prompt.with_error(error)
                continue
            for note in notes:
                severity = "dropped" if note.startswith("dropped") else "repaired"
                issues.append(Issue(stage=stage, step=step, severity=severity, detail=note))
            return answer, issues
        return None, issues
