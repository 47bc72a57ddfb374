"""The second stage of search: a ``Reranker`` reorders the first moments of the first stage.

What the reranker reads for a moment is the moment in its episode: the video's title (when it
has one), the macro event it sits in, its own text, and its context lines (the typed edges to
its neighbours, e.g. what happened before and after), clipped to ``MAX_DOCUMENT_CHARS``. A
sentence such as "he pours it into the pan" is then judged with the episode that says what
"it" is. Moments past the candidates keep their first-stage order after the reranked ones.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from memtools.rerank.base import Reranker
from memtools.rerank.stage import Reranked, rerank_order
from memtools.retrieval.moments import Moment

MAX_DOCUMENT_CHARS = 1200
_EDGE_ID = re.compile(r"^(->|<-) ([A-Z_]+) [^:]+: ")  # "-> BEFORE evt_003: text" (store.payload's context)


def moment_document(moment: Moment, title: str = "") -> str:
    """The text a reranker reads for ``moment``."""
    lines = [f"Video: {title}"] if title else []
    if moment.macro_label and moment.macro_id != moment.id:
        lines.append(f"Episode: {moment.macro_label}")
    lines.append(moment.text)
    for line in moment.context:
        match = _EDGE_ID.match(line)
        lines.append(f"{match.group(1)} {match.group(2).lower().replace('_', ' ')}: {line[match.end():]}"
                     if match else line)
    text = "\n".join(lines)
    return text if len(text) <= MAX_DOCUMENT_CHARS else text[: MAX_DOCUMENT_CHARS - 1] + "…"


def rerank_moments(reranker: Reranker, query: str, moments: Sequence[Moment], candidates: int, timeout: float,
                   titles: Mapping[str, str] | None = None) -> tuple[list[Moment], Reranked]:
    """``moments`` with their first ``candidates`` in the reranker's order (its scores in
    ``rerank_score``; ``score`` stays the first stage's), the rest after them; on any reranker
    failure, ``moments`` as they were."""
    head = list(moments[:candidates])
    titles = titles or {}
    outcome = rerank_order(reranker, query, [moment_document(m, titles.get(m.video_id, "")) for m in head], timeout)
    if not outcome.ok or outcome.scores is None:
        return list(moments), outcome
    ranked = [replace(head[i], rerank_score=score) for i, score in zip(outcome.order, outcome.scores, strict=True)]
    return ranked + list(moments[candidates:]), outcome


__all__ = ["MAX_DOCUMENT_CHARS", "moment_document", "rerank_moments"]
