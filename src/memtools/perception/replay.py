"""Recorded perception: ``RecordingVLM`` writes what a real model answered, ``ReplayVLM``
serves it back, keyed by ``request_key``. Tests and the bundled sample build memories
from recordings without a model.

The file is JSON Lines, one answered request per line::

    {"key": "…", "model": "…", "text": "…", "usage": {"prompt_tokens": 812, "completion_tokens": 95},
     "finish_reason": "stop", "preview": "4 frames 0:00:00-0:00:30 | Segment this window …"}

A key recorded twice is served from its last line, so re-recording appends.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from memtools.errors import ConfigError, PerceptionError
from memtools.perception.base import (
    VLM,
    BaseVLM,
    PerceptionRequest,
    PerceptionResponse,
    Usage,
    request_key,
    request_preview,
)


class ReplayVLM(BaseVLM):
    """Answers only requests recorded in ``path``; anything else raises ``PerceptionError``."""

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = Path(path)
        if not self.path.is_file():
            raise ConfigError(
                f"no perception recording at {self.path}; make one by building with a real model"
                f" and --record {self.path}"
            )
        self._records: dict[str, PerceptionResponse] = {}
        with self.path.open(encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    self._records[record["key"]] = PerceptionResponse(
                        text=record["text"],
                        usage=Usage(**record.get("usage", {})),
                        model=record.get("model", ""),
                        finish_reason=record.get("finish_reason"),
                    )
                except (ValueError, KeyError, TypeError) as exc:
                    raise ConfigError(f"{self.path}:{number} is not a perception record: {exc}") from exc
        self.model_name = f"replay:{self.path.name}"

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, request: object) -> bool:
        return isinstance(request, PerceptionRequest) and request_key(request) in self._records

    async def _complete(self, request: PerceptionRequest) -> PerceptionResponse:
        key = request_key(request)
        try:
            return self._records[key]
        except KeyError:
            raise PerceptionError(
                f"request {key[:12]} ({request_preview(request)}) was not recorded in {self.path}"
                f" ({len(self._records)} recorded); prompts, frames or the schema changed since."
                f" Record again by running the same build with a real model and --record {self.path}"
            ) from None


class RecordingVLM(BaseVLM):
    """Calls ``inner`` and appends every answer to ``path`` (one line each, flushed at once;
    safe with concurrent calls in threads and tasks)."""

    def __init__(self, inner: VLM, path: str | Path) -> None:
        super().__init__()
        self.inner = inner
        self.path = Path(path)
        self.model_name = getattr(inner, "model_name", "") or type(inner).__name__
        self._lock = threading.Lock()

    async def _complete(self, request: PerceptionRequest) -> PerceptionResponse:
        response = await self.inner.complete(request)
        record = {
            "key": request_key(request),
            "model": response.model,
            "text": response.text,
            "usage": response.usage.model_dump(),
            "finish_reason": response.finish_reason,
            "preview": request_preview(request),
        }
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(line)
                f.flush()
        return response
