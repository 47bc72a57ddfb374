"""Listwise reranking by a chat model (the ORA loop's, or any LangChain chat model).

The model sees the query and the first ``max_candidates`` candidates, numbered and clipped to
``max_document_chars``, and answers a JSON ranking ``{"ranking": [3, 1, 2]}`` (best first),
with at most ``max_output_tokens`` tokens. Candidates it ranks come first in its order; those it
leaves out, and those past ``max_candidates``, follow in their first-stage order. An answer with
no readable ranking is a ``RerankError`` (search then keeps the first-stage order).

Every call's tokens are added to ``usage`` and, with ``memory_path``, recorded as stage
``rerank`` by ``memtools.costs.record`` (``memtools info --cost`` shows them).
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Sequence
from typing import Any

from memtools.costs import Tally, record, tokens_from_usage
from memtools.errors import ConfigError, RerankError

log = logging.getLogger("memtools.rerank")
SYSTEM = ("You rank search results by how well each answers a search query over a video memory. "
          "Reply with JSON only, no prose: {\"ranking\": [numbers of the results, most relevant first]}. "
          "Leave out results that do not match at all.")
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def ranking_prompt(query: str, documents: Sequence[str], max_document_chars: int) -> str:
    """The user message: the query, then each candidate as ``[n] text`` (1-based)."""
    lines = [f"Query: {query}", "", "Results:"]
    for i, text in enumerate(documents, 1):
        flat = " ".join(text.split())
        lines.append(f"[{i}] {flat if len(flat) <= max_document_chars else flat[:max_document_chars - 1] + '…'}")
    return "\n".join(lines)


def parse_ranking(text: str, count: int) -> list[int]:
    """0-based candidate positions, best first, from the model's JSON (repeats and unknown numbers dropped)."""
    match = _OBJECT.search(text or "")
    try:
        data = json.loads(match.group(0)) if match else None
    except ValueError:
        data = None
    ranking = data.get("ranking") if isinstance(data, dict) else None
    if not isinstance(ranking, list):
        raise RerankError(f"the model's reply has no JSON ranking: {(text or '')[:200]!r}")
    order: list[int] = []
    for item in ranking:
        if isinstance(item, str) and item.strip().lstrip("[").rstrip("]").isdigit():
            item = int(item.strip().lstrip("[").rstrip("]"))
        if isinstance(item, int) and not isinstance(item, bool) and 1 <= item <= count and item - 1 not in order:
            order.append(item - 1)
    if not order and ranking:
        raise RerankError(f"the model's ranking names none of the {count} results: {str(ranking)[:200]}")
    return order


class LLMReranker:
    """Listwise reranking through ``model`` (a LangChain chat model). Thread-safe."""

    def __init__(self, model: Any, *, name: str | None = None, max_candidates: int = 20,
                 max_document_chars: int = 300, max_output_tokens: int | None = 200,
                 memory_path: str | os.PathLike | None = None) -> None:
        if max_candidates < 2 or max_document_chars < 20:
            raise ConfigError("max_candidates must be at least 2 and max_document_chars at least 20")
        self.model = model
        self.model_name = str(getattr(model, "model_name", None) or getattr(model, "model", None)
                              or type(model).__name__)
        self._name = name or f"llm:{self.model_name}"
        self.max_candidates = max_candidates
        self.max_document_chars = max_document_chars
        self.max_output_tokens = max_output_tokens
        self.memory_path = memory_path
        self.usage = Tally()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LLMReranker({self.model_name!r}, max_candidates={self.max_candidates})"

    @property
    def name(self) -> str:
        return self._name

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        from langchain_core.messages import HumanMessage, SystemMessage

        n = len(documents)
        if n == 0:
            return []
        shown = list(documents[: self.max_candidates])
        prompt = ranking_prompt(query, shown, self.max_document_chars)
        options = {} if self.max_output_tokens is None else {"max_tokens": self.max_output_tokens}
        reply = self.model.invoke([SystemMessage(SYSTEM), HumanMessage(prompt)], **options)
        text = reply.content if isinstance(reply.content, str) else " ".join(
            b.get("text", "") if isinstance(b, dict) else str(b) for b in reply.content)
        self._count(getattr(reply, "usage_metadata", None), SYSTEM + prompt, text)
        order = parse_ranking(text, len(shown))
        rest = [i for i in range(n) if i not in set(order)]
        scores = [0.0] * n
        for place, i in enumerate([*order, *rest]):
            scores[i] = float(n - place)  # ranked first: highest; the rest keep their first-stage order
        return scores

    def _count(self, usage: Any, prompt: str, completion: str) -> None:
        usage = dict(usage) if isinstance(usage, dict) else None
        tokens_in, tokens_out, estimated = tokens_from_usage(usage, prompt, completion)
        with self._lock:
            self.usage.add(tokens_in, tokens_out, estimated)
        if self.memory_path is not None:
            try:
                record(self.memory_path, "rerank", self.model_name, usage, prompt_text=prompt,
                       completion_text=completion)
            except OSError as exc:  # a read-only memory folder: the ranking stands, the record is lost
                log.warning("could not record the reranker's tokens in %s: %s", self.memory_path, exc)


__all__ = ["LLMReranker", "parse_ranking", "ranking_prompt"]
