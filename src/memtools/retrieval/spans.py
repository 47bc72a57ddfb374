"""Merge adjacent hits of one video into one span.

Annotators and perception models cut a moment differently: what one calls "he mixes the batter
and pours it into the pan" may be two micro-events in the memory. When the best hit of a video
has neighbours in time that match almost as well, the span that answers is their union.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from memtools.retrieval.moments import Moment

# Only leaf moments merge; super/macro events already are spans of their own.
MERGEABLE = frozenset({"event", "ocr", "speech"})


def merge_adjacent(moments: Sequence[Moment], margin: float, gap_sec: float) -> list[Moment]:
    """Moments in score order, where each video's best leaf absorbs adjacent leaves scoring
    within ``margin`` of it (repeatedly, so a chain of neighbours grows one span)."""
    out: list[Moment] = []
    used: set[str] = set()
    best_by_video: set[str] = set()
    for m in moments:
        if m.id in used:
            continue
        if m.kind not in MERGEABLE or m.video_id in best_by_video:
            out.append(m)
            used.add(m.id)
            continue
        best_by_video.add(m.video_id)
        start, end, members = m.t_start, m.t_end, [m]
        pool = [n for n in moments if n.video_id == m.video_id and n.kind in MERGEABLE and n.id != m.id
                and n.id not in used and n.score >= m.score - margin]
        grew = True
        while grew:
            grew = False
            for n in pool:
                if n in members:
                    continue
                if n.t_start <= end + gap_sec and n.t_end >= start - gap_sec and not (
                        n.t_start >= start and n.t_end <= end):
                    start, end = min(start, n.t_start), max(end, n.t_end)
                    members.append(n)
                    grew = True
        used.update(n.id for n in members)
        if len(members) == 1:
            out.append(m)
            continue
        ordered = sorted(members, key=lambda n: n.t_start)
        out.append(replace(m, t_start=start, t_end=end, members=tuple(n.id for n in ordered),
                           text=" … ".join(n.text for n in ordered)))
    return out
