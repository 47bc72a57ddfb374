"""The ORA graph configured from environment variables, for ``langgraph dev`` / LangGraph Server.

    MEMTOOLS_MEMORY       memory folder (required)
    MEMTOOLS_MODEL        model spec, e.g. openai:gpt-4o-mini (required)
    MEMTOOLS_BASE_URL     OpenAI-compatible API root (optional)
    MEMTOOLS_API_KEY_ENV  variable holding the API key (optional, default OPENAI_API_KEY)
    MEMTOOLS_MAX_ROUNDS   tool rounds before the answer is forced (optional, default 12)

Nothing is read at import time: the graph is built on the first request, once per distinct
configuration, and a missing variable is a ``ConfigError`` that names it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

from memtools.errors import ConfigError

ENV_VARS = ("MEMTOOLS_MEMORY", "MEMTOOLS_MODEL", "MEMTOOLS_BASE_URL", "MEMTOOLS_API_KEY_ENV", "MEMTOOLS_MAX_ROUNDS")
_cache: dict[tuple[str | None, ...], Any] = {}
_lock = threading.Lock()


def graph_from_env(environ: Mapping[str, str] | None = None):
    """The compiled ORA graph (no checkpointer: the server brings its own)."""
    env = os.environ if environ is None else environ
    key = tuple(env.get(v) for v in ENV_VARS)
    missing = [v for v in ("MEMTOOLS_MEMORY", "MEMTOOLS_MODEL") if not env.get(v)]
    if missing:
        raise ConfigError(f"set {' and '.join(missing)} to serve the memtools ORA graph "
                          "(e.g. MEMTOOLS_MEMORY=./my-memory MEMTOOLS_MODEL=openai:gpt-4o-mini)")
    try:
        max_rounds = int(env.get("MEMTOOLS_MAX_ROUNDS") or 12)
    except ValueError as exc:
        raise ConfigError(f"MEMTOOLS_MAX_ROUNDS must be an integer, not {env['MEMTOOLS_MAX_ROUNDS']!r}") from exc
    with _lock:
        if key not in _cache:
            from memtools.agent.graph import build_ora_graph
            from memtools.chat_models import chat_model_from_spec
            from memtools.store import Memory

            model = chat_model_from_spec(env["MEMTOOLS_MODEL"], base_url=env.get("MEMTOOLS_BASE_URL") or None,
                                         api_key_env=env.get("MEMTOOLS_API_KEY_ENV") or None)
            _cache[key] = build_ora_graph(Memory.open(env["MEMTOOLS_MEMORY"]), model, max_rounds=max_rounds)
        return _cache[key]
