"""Vision-language model backends behind one protocol.

    vlm = vlm_from_spec("openai:gpt-4o-mini")                      # or any OpenAI-compatible server
    vlm = vlm_from_spec("openai:qwen2.5-vl", base_url="http://localhost:8000/v1")
    vlm = vlm_from_spec("replay:tests/data/perception.jsonl")       # recorded answers
    vlm = LangChainVLM(ChatAnthropic(model="claude-sonnet-4-5"))    # any LangChain chat model
    answer = await vlm.complete(PerceptionRequest(prompt="What happens?", frames=[(12.0, jpeg)]))

Backends: ``OpenAIVLM`` (httpx), ``LangChainVLM``, ``LocalVLM`` (transformers), ``ReplayVLM``
/ ``RecordingVLM``; fakes for tests in ``memtools.perception.testing``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtools.errors import ConfigError
from memtools.perception.base import (
    ALLOW_MODEL_REQUESTS_ENV,
    VLM,
    BaseVLM,
    PerceptionRequest,
    PerceptionResponse,
    Usage,
    UsageCounter,
    UsageTotals,
    complete_sync,
    format_time,
    frame_label,
    request_key,
    request_preview,
)
from memtools.perception.openai import DEFAULT_BASE_URL, OpenAIVLM, RetryPolicy
from memtools.perception.replay import RecordingVLM, ReplayVLM
from memtools.perception.testing import FunctionVLM, block_model_requests

if TYPE_CHECKING:
    from memtools.perception.langchain import LangChainVLM
    from memtools.perception.local import LocalVLM

SCHEMES = ("openai", "replay", "local")


def vlm_from_spec(
    spec: str,
    *,
    base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    concurrency: int = 4,
    **options: Any,
) -> VLM:
    """A backend from a one-line spec, as given on the command line:

    - ``openai:MODEL``   an OpenAI-compatible server (``base_url``, default OpenAI's;
      ``api_key_env``; ``concurrency``; other ``options`` go to ``OpenAIVLM``)
    - ``replay:PATH``    answers recorded in a JSONL file
    - ``local:MODEL``    a transformers model id or path (``options`` go to ``LocalVLM``)
    """
    scheme, sep, rest = spec.partition(":")
    valid = ", ".join(f"'{s}:…'" for s in SCHEMES)
    if not sep or not rest.strip():
        raise ConfigError(f"perception model spec {spec!r} must look like SCHEME:VALUE, with SCHEME one of {valid}")
    scheme, rest = scheme.strip().lower(), rest.strip()
    if scheme == "openai":
        return OpenAIVLM(
            rest, base_url=base_url or DEFAULT_BASE_URL, api_key_env=api_key_env, concurrency=concurrency, **options
        )
    if scheme == "replay":
        return ReplayVLM(Path(rest))
    if scheme == "local":
        from memtools.perception.local import LocalVLM

        return LocalVLM(rest, **options)
    raise ConfigError(f"unknown perception backend {scheme!r} in {spec!r}; valid: {valid}")


def __getattr__(name: str) -> Any:
    # the LangChain and transformers backends import heavy libraries: load them on first use
    if name == "LangChainVLM":
        from memtools.perception.langchain import LangChainVLM

        return LangChainVLM
    if name == "LocalVLM":
        from memtools.perception.local import LocalVLM

        return LocalVLM
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ALLOW_MODEL_REQUESTS_ENV",
    "DEFAULT_BASE_URL",
    "SCHEMES",
    "VLM",
    "BaseVLM",
    "FunctionVLM",
    "LangChainVLM",
    "LocalVLM",
    "OpenAIVLM",
    "PerceptionRequest",
    "PerceptionResponse",
    "RecordingVLM",
    "ReplayVLM",
    "RetryPolicy",
    "Usage",
    "UsageCounter",
    "UsageTotals",
    "block_model_requests",
    "complete_sync",
    "format_time",
    "frame_label",
    "request_key",
    "request_preview",
    "vlm_from_spec",
]
