"""``rank_moments`` makes moments only of the hits that can decide the first ones (a search in 8
opened videos at 1,000 h returns ~7k rows): the ranked head must equal ranking every hit."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from memtools.retrieval import ranking
from memtools.retrieval.ranking import RANKED_DEPTH, rank_moments
from memtools.store.base import HitColumns
from memtools.store.tables.vectors import Hit
from memtools.tools.search import SearchConfig

KINDS = ("entity", "event", "ocr", "speech", "macro", "super")


def hits(seed: int, videos: int = 8, per_video: int = 800) -> list[Hit]:
    """Rows of opened videos: macro events and their leaves, with clustered similarities and
    neighbours in time (so spans merge), like a stage-2 search returns."""
    rng = random.Random(seed)
    out = []
    for v in range(videos):
        vid = f"v{v}"
        base = rng.uniform(0.2, 0.5)
        best_macro, best_n = rng.randrange(per_video // 40), rng.randrange(30)  # a moment told by 4 leaves
        for m in range(per_video // 40):
            mid = f"{vid}/macro_{m:04d}"
            episode = base + rng.gauss(0, 0.08)
            out.append(Hit(mid, vid, "macro", "", m * 300.0, m * 300.0 + 300, mid, episode))
            for n in range(39):
                kind = rng.choice(("entity", "event", "event", "ocr", "speech"))
                t = m * 300.0 + n * 7
                kind = "event" if m == best_macro and best_n <= n < best_n + 4 else kind
                boost = 0.2 if kind == "event" and m == best_macro and best_n <= n < best_n + 4 else 0.0
                score = episode + rng.gauss(0, 0.03) + boost
                out.append(Hit(f"{mid}/{kind[:3]}_{n:03d}", vid, kind, mid, t, t + rng.uniform(3, 12), "x",
                               round(score, 3)))  # rounded: ties are common
    rng.shuffle(out)
    return out


CONFIGS = {
    "default": SearchConfig(),
    "per_video=2": SearchConfig(per_video=2),
    "no merging": SearchConfig(merge_spans=False),
    "wide margins": SearchConfig(merge_margin=0.3, diversity_margin=0.5, per_video=3),
    "walk seeds 200": SearchConfig(strategy="graph_walk").model_copy(
        update={"walk": SearchConfig().walk.model_copy(update={"seeds": 200})}),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("library_wide", [True, False])
def test_the_ranked_head_equals_ranking_every_hit(monkeypatch, name, library_wide):
    config = CONFIGS[name]
    depth = max(RANKED_DEPTH, config.walk.seeds)
    for seed in range(3):
        rows = hits(seed)
        scores = {f"v{v}": random.Random(seed + v).uniform(0.3, 0.6) for v in range(8)} if library_wide else None
        kinds = ("entity", "event", "ocr", "speech")
        fast = rank_moments(rows, config, kinds, scores)
        with monkeypatch.context() as patched:
            patched.setattr(ranking, "RANKED_DEPTH", 10**6)  # no pruning
            full = rank_moments(rows, config, kinds, scores)
        assert len(fast) < len(full)  # pruned
        assert fast[:depth] == full[:depth]
        assert any(m.members for m in full[:depth]) or not config.merge_spans  # spans were merged


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("shown", [1, 5, 10, 50])
def test_a_lite_search_showing_k_moments_gives_the_first_k_of_ranking_every_hit(monkeypatch, name, shown):
    """``shown`` (search_nodes' top_k): only the rows that can decide the first ``shown`` moments
    become moments, and only those get their payload read."""
    config = CONFIGS[name]
    completed: list[int] = []

    def complete(found):
        completed.append(len(found))
        return [replace(h, text=f"text of {h.id}") for h in found]

    for seed in range(3):
        rows = [replace(h, text="") for h in hits(seed)]
        scores = {f"v{v}": random.Random(seed + v).uniform(0.3, 0.6) for v in range(8)}
        kinds = ("entity", "event", "ocr", "speech")
        lite = rank_moments(HitColumns.of(rows), config, kinds, scores, complete=complete, shown=shown)
        with monkeypatch.context() as patched:
            patched.setattr(ranking, "RANKED_DEPTH", 10**6)  # no pruning
            full = rank_moments(rows, config, kinds, scores)
        assert len(lite) == shown
        for got, want in zip(lite, full[:shown], strict=True):
            assert (got.id, got.members, got.score, got.t_start, got.t_end) == (want.id, want.members, want.score,
                                                                                want.t_start, want.t_end)
            assert got.text == " … ".join(f"text of {i}" for i in (got.members or (got.id,)))
        assert completed[-1] == len({i for m in lite for i in (m.id, *m.members)})  # the shown rows' payload only
