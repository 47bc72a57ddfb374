"""What a structured search returns: a moment (one node, or a span merged from several) with
the video and episode it sits in, its score and, for graph walks, the path that led there (and,
once a reranker has ordered it, the reranker's score)."""

from __future__ import annotations

from dataclasses import dataclass

from memtools.store.base import Hit


@dataclass(frozen=True)
class Moment:
    id: str
    kind: str
    video_id: str
    t_start: float
    t_end: float
    text: str
    score: float
    macro_id: str = ""
    macro_label: str = ""
    context: tuple[str, ...] = ()
    members: tuple[str, ...] = ()  # node ids a merged span was built from
    path: tuple[str, ...] = ()     # graph walk: seed -LABEL-> ... -> this node
    video_score: float = 0.0
    similarity: float = 0.0
    rerank_score: float | None = None  # the reranker's score, when a reranker ordered this moment

    @classmethod
    def from_hit(cls, hit: Hit, score: float | None = None, **extra) -> Moment:
        return cls(hit.id, hit.kind, hit.video_id, hit.t_start, hit.t_end, hit.display or hit.text,
                   hit.score if score is None else score, hit.macro_id, hit.macro_label, hit.context,
                   similarity=hit.score, **extra)
