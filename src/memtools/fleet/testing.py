"""A picklable stand-in for a model endpoint, for fleet tests and benchmarks.

``ScriptedEndpoint(...)`` is a factory (``make_vlm``): every Ray task calls it and gets a
``FunctionVLM`` answering like ``ScriptedPerception`` after ``latency`` seconds. It can
append one JSON line per answered call to ``log`` (a file every worker can reach), and kill
its own worker process on the first request of stage ``die_at`` (``segment``, ``extract`` or
``aggregate``), once per ``die_marker`` file: a worker lost mid-video, for retry tests.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass
from pathlib import Path

from memtools.builder.prompts import AGGREGATE_SYSTEM, EXTRACT_SYSTEM, SEGMENT_SYSTEM
from memtools.builder.testing import ScriptedPerception
from memtools.perception import FunctionVLM, PerceptionRequest, request_key


@dataclass(frozen=True)
class ScriptedEndpoint:
    latency: float = 0.0
    episode_sec: float = 30.0
    per_super: int = 3
    log: str | None = None
    die_at: str | None = None
    die_marker: str | None = None
    base_url: str = "http://scripted.invalid/v1"  # what the endpoint limit is keyed by

    def __call__(self) -> FunctionVLM:
        script = ScriptedPerception(episode_sec=self.episode_sec, per_super=self.per_super)
        stages = {SEGMENT_SYSTEM: "segment", EXTRACT_SYSTEM: "extract", AGGREGATE_SYSTEM: "aggregate"}

        async def answer(request: PerceptionRequest) -> str:
            if self.die_at and self.die_marker and stages.get(request.system or "") == self.die_at:
                marker = Path(self.die_marker)
                if not marker.exists():
                    marker.write_text(str(os.getpid()))
                    os._exit(1)  # the worker dies with calls in flight, as on a lost node
            if self.latency:
                await asyncio.sleep(self.latency)
            text = script(request)
            if self.log:
                with open(self.log, "a", encoding="utf-8") as handle:
                    handle.write(json.dumps({"pid": os.getpid(), "key": request_key(request)}) + "\n")
            return text

        vlm = FunctionVLM(answer, model_name="scripted")
        vlm.base_url = self.base_url  # type: ignore[attr-defined]  # the fleet keys its endpoint limits by base_url
        return vlm
