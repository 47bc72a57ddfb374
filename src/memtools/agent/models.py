"""Chat models from a short spec (``openai:gpt-4o-mini``), for the CLI and ``graphs/``.

Any OpenAI-compatible server (vLLM, Ollama, LM Studio, OpenRouter, Gemini's compatible
endpoint) is reached with ``openai:MODEL`` plus ``base_url``, through langchain-openai's
``ChatOpenAI`` (the ``openai`` extra: ``pip install memtools[openai]``). Library users pass any
LangChain chat model to ``build_ora_graph`` directly and need none of this.
"""

from __future__ import annotations

import os
from typing import Any

import httpx

from memtools.errors import ConfigError

INSTALL_HINT = "the openai model backend needs langchain-openai: pip install 'memtools[openai]'"


def chat_model_from_spec(spec: str, *, base_url: str | None = None, api_key: str | None = None,
                         api_key_env: str | None = None, temperature: float | None = 0.0, timeout: float = 120.0,
                         max_retries: int = 2, http_client: httpx.Client | None = None, **kwargs: Any):
    """A LangChain chat model for ``provider:model``. Only ``openai:`` is built in.

    The API key comes from ``api_key``, else the environment variable ``api_key_env``
    (default ``OPENAI_API_KEY``); a local server named by ``base_url`` may need none.
    ``http_client`` is the httpx client requests go through (default: a fresh one with
    ``timeout``), the seam tests fake at the transport.
    """
    provider, sep, name = spec.partition(":")
    if not sep or not name:
        raise ConfigError(f"model spec {spec!r} should look like 'openai:MODEL'")
    if provider != "openai":
        raise ConfigError(f"unknown model provider {provider!r} in {spec!r}; use 'openai:MODEL' with --base-url for "
                          "any OpenAI-compatible server, or pass a LangChain chat model from Python")
    try:
        from langchain_openai import ChatOpenAI
    except ImportError as exc:
        raise ConfigError(INSTALL_HINT) from exc
    env = api_key_env or "OPENAI_API_KEY"
    key = api_key or os.environ.get(env)
    if not key:
        if not base_url:
            raise ConfigError(f"no API key: set {env} (or choose another variable with --api-key-env)")
        key = "not-needed"  # local OpenAI-compatible servers accept any key
    options: dict[str, Any] = {"model": name, "api_key": key, "timeout": timeout, "max_retries": max_retries,
                               "http_client": http_client or httpx.Client(timeout=timeout), **kwargs}
    if base_url:
        options["base_url"] = base_url
    if temperature is not None:
        options["temperature"] = temperature
    return ChatOpenAI(**options)
