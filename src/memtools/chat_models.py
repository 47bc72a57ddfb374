"""Chat models from a short spec (``openai:gpt-4o-mini``), for the CLI and ``graphs/``.

Any OpenAI-compatible server (vLLM, Ollama, LM Studio, OpenRouter, Gemini's compatible
endpoint) is reached with ``openai:MODEL`` plus ``base_url``, through langchain-openai's
``ChatOpenAI`` (the ``openai`` extra: ``pip install memtools[openai]``). Library users pass any
LangChain chat model to ``build_ora_graph`` directly and need none of this.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
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


def model_problem(exc: BaseException, spec: str, base_url: str | None = None) -> ConfigError | None:
    """One line for a reasoning model that cannot be used at all (server unreachable, key refused,
    no such model), or None for any other failure. The OpenAI SDK's errors are read here, at the
    model's seam, so no front end prints its traceback."""
    try:
        import openai
    except ImportError:
        return None
    where = base_url or "the OpenAI API"
    if isinstance(exc, openai.APITimeoutError):
        return ConfigError(f"model {spec} at {where} did not answer in time; check that the server is up, or "
                           "raise its timeout")
    if isinstance(exc, openai.APIConnectionError):
        cause: BaseException | None = exc
        while isinstance(cause, openai.APIConnectionError):  # the SDK may wrap its own error: find the transport's
            cause = cause.__cause__ or cause.__context__
        detail = f" ({type(cause).__name__}: {cause})" if cause is not None and str(cause) else ""
        return ConfigError(f"cannot reach model {spec} at {where}{detail}; check --base-url and that the server "
                           "is running")
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        return ConfigError(f"model {spec} at {where} refused the API key (HTTP {exc.status_code}); set the right "
                           "key in OPENAI_API_KEY, or name its variable with --api-key-env")
    if isinstance(exc, openai.NotFoundError):
        return ConfigError(f"model {spec} is not served at {where} (HTTP 404); check the model name and --base-url")
    return None


@contextlib.contextmanager
def reaching_model(spec: str, base_url: str | None = None) -> Iterator[None]:
    """Re-raise a model that cannot be used at all as one ``ConfigError`` line (``model_problem``)."""
    try:
        yield
    except Exception as exc:
        problem = model_problem(exc, spec, base_url)
        if problem is None:
            raise
        raise problem from exc
