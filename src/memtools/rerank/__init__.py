"""Rerankers: the ``Reranker`` seam and its backends, a second stage that reads the query and
each candidate together.

    HTTPReranker          a /rerank server: TEI, Infinity, vLLM, Jina, Cohere (memtools.rerank.http)
    CrossEncoderReranker  a local sequence-classification model (memtools.rerank.cross_encoder)
    LLMReranker           listwise ranking by a LangChain chat model (memtools.rerank.llm)
    WordOverlapReranker   an honest fake for tests (memtools.rerank.testing)

Backends are imported on first use. Search uses a reranker when one is given
(``MemoryTools(memory, reranker=...)``) or named by ``$MEMTOOLS_RERANKER`` (a spec below);
with neither, search does no reranking work at all.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from memtools.errors import ConfigError
from memtools.rerank.base import Reranker, checked_scores
from memtools.rerank.testing import WordOverlapReranker

if TYPE_CHECKING:
    from memtools.rerank.cross_encoder import CrossEncoderReranker
    from memtools.rerank.http import HTTPReranker
    from memtools.rerank.llm import LLMReranker

RERANKER_ENV = "MEMTOOLS_RERANKER"
SPEC_FORMS = (
    "'http:MODEL@URL' (a /rerank server: Cohere, Jina, Infinity, vLLM; key in $MEMTOOLS_RERANKER_API_KEY)",
    "'tei:URL' (text-embeddings-inference)",
    "'cross-encoder:PATH_OR_HUB_ID'",
    "'llm:openai:MODEL' or 'llm:openai:MODEL@URL' (listwise, through a chat model; key in $OPENAI_API_KEY)",
    "'test' (word overlap, for tests)",
    "'none'",
)


def _parse(spec: str) -> tuple[str, str, str]:
    """(kind, model or path, url) of a spec; ``ConfigError`` when it has none of the forms."""
    spec = spec.strip()
    kind, _, arg = spec.partition(":")
    if spec in ("", "none"):
        return "none", "", ""
    if spec == "test":
        return "test", "", ""
    if kind == "http" and "@" in arg:
        model, _, url = arg.partition("@")
        if url:
            return kind, model, url
    if kind == "tei" and arg:
        return kind, "", arg
    if kind == "cross-encoder" and arg:
        return kind, arg, ""
    if kind == "llm" and arg.startswith("openai:") and arg != "openai:":
        model, _, url = arg.partition("@")
        return kind, model, url
    raise ConfigError(f"unknown reranker spec {spec!r}; use one of: {', '.join(SPEC_FORMS)}")


def check_reranker_spec(spec: str) -> str:
    """``spec`` when it has one of the forms (nothing is built or imported); ``ConfigError`` otherwise."""
    _parse(spec)
    return spec.strip()


def reranker_name(spec: str) -> str:
    """The name the reranker of ``spec`` will have, without building it (``''`` for none)."""
    kind, model, url = _parse(spec)
    if kind == "none":
        return ""
    if kind == "test":
        return WordOverlapReranker().name
    if kind == "http":
        return f"http:{model}@{url.rstrip('/')}"
    if kind == "tei":
        return f"tei@{url.rstrip('/')}"
    if kind == "cross-encoder":
        return f"cross-encoder:{model}"
    return f"llm:{model.partition(':')[2]}"


def reranker_from_spec(spec: str, *, memory_path: str | os.PathLike | None = None) -> Reranker | None:
    """The reranker a spec names (``None`` for ``none``). ``memory_path`` is where an LLM
    reranker records its tokens."""
    kind, model, url = _parse(spec)
    if kind == "none":
        return None
    if kind == "test":
        return WordOverlapReranker()
    if kind in ("http", "tei"):
        from memtools.rerank.http import HTTPReranker

        return HTTPReranker(model, base_url=url, api="tei" if kind == "tei" else "rerank")
    if kind == "cross-encoder":
        from memtools.rerank.cross_encoder import CrossEncoderReranker

        return CrossEncoderReranker(model)
    from memtools.chat_models import chat_model_from_spec
    from memtools.rerank.llm import LLMReranker

    chat = chat_model_from_spec(model, base_url=url or None, timeout=30.0)
    return LLMReranker(chat, name=reranker_name(spec), memory_path=memory_path)


def reranker_from_env(memory_path: str | os.PathLike | None = None) -> Reranker | None:
    """The reranker ``$MEMTOOLS_RERANKER`` names, or ``None`` when it is unset or ``none``."""
    spec = os.environ.get(RERANKER_ENV, "").strip()
    if not spec:
        return None
    try:
        return reranker_from_spec(spec, memory_path=memory_path)
    except ConfigError as exc:
        raise ConfigError(f"{RERANKER_ENV}: {exc}") from None


__all__ = [
    "RERANKER_ENV",
    "SPEC_FORMS",
    "CrossEncoderReranker",
    "HTTPReranker",
    "LLMReranker",
    "Reranker",
    "WordOverlapReranker",
    "check_reranker_spec",
    "checked_scores",
    "reranker_from_env",
    "reranker_from_spec",
    "reranker_name",
]


def __getattr__(name: str) -> Any:
    if name == "HTTPReranker":  # imported on first use: only a configured backend loads its dependencies
        from memtools.rerank.http import HTTPReranker

        return HTTPReranker
    if name == "CrossEncoderReranker":
        from memtools.rerank.cross_encoder import CrossEncoderReranker

        return CrossEncoderReranker
    if name == "LLMReranker":
        from memtools.rerank.llm import LLMReranker

        return LLMReranker
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
