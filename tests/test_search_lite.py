"""Stage 2 of coarse-to-fine search reads only the ranking columns of every row of the opened
videos (``VectorIndex.search_columns``), ranks them with numpy, and reads the text and context of
the rows that become moments alone (``VectorIndex.complete``). Its moments are those of reading
and ranking every full row (issue 10, search at 1,000 h)."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from memtools.embed.testing import TestEmbedder
from memtools.importers.captions import Caption, CaptionedVideo, graph_from_captions
from memtools.retrieval import ranking as lib
from memtools.retrieval.library import Filters, search_library
from memtools.retrieval.ranking import rank_moments
from memtools.store import Memory
from memtools.store.base import Hit, SearchFilter, SearchQuery
from memtools.tools.search import SearchConfig
from memtools.tools.searching import SEARCHABLE

WORDS = ("man woman dog cat pan knife onion carrot guitar ball car street kitchen table bowl flour "
         "chops stirs plays throws pours cuts mixes drives runs jumps holds opens").split()


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 8))) + "."


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    rng = random.Random(3)
    videos = []
    for v in range(12):
        t, caps = 0.0, []
        for _ in range(rng.randint(25, 40)):
            end = t + rng.uniform(4, 20)
            caps.append(Caption(t, end, sentence(rng)))
            t = end if rng.random() < 0.7 else t + 2  # some overlap, so spans merge
        videos.append(CaptionedVideo(f"v{v:02d}", caps, duration=t + 30, title=f"video {v}"))
    path = tmp_path_factory.mktemp("lite") / "memory"
    with Memory.create(path, TestEmbedder(64)) as created:
        created.write_videos([graph_from_captions(v) for v in videos])
    with Memory.open(path, TestEmbedder(64)) as opened:
        opened.vectors.hold_rows()  # every search here reads the same rows (not lance first, then memory)
        yield opened


def video_rows(memory):
    return lambda vid: 1 + sum(memory.manifest.videos[vid].counts.get(k, 0) for k in SEARCHABLE)


CONFIGS = {"default": SearchConfig(), "per_video=1, wide margins": SearchConfig(per_video=1, merge_margin=0.2),
           "no merging": SearchConfig(merge_spans=False), "four videos": SearchConfig(videos=4)}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_lite_stage_two_equals_reading_every_full_row(memory, name, monkeypatch):
    config, rng = CONFIGS[name], random.Random(name)
    monkeypatch.setattr(lib, "RANKED_DEPTH", 5)  # a small library: prune as 8 videos at 1,000 h do
    config = config.model_copy(update={"walk": config.walk.model_copy(update={"seeds": 5})})
    completed: list[int] = []
    pruned = 0
    index = memory.vectors
    complete = index.complete
    monkeypatch.setattr(index, "complete", lambda hits: completed.append(len(hits)) or complete(hits))
    for i in range(60):
        query = sentence(rng)
        filters = Filters(kinds=list(SEARCHABLE), video_id=f"v{i % 12:02d}" if i % 4 == 0 else None)
        vector = memory.embedder.embed_query(query)
        lite = search_library(index, vector, query, config, filters, SEARCHABLE, video_rows(memory))
        lite_reads = completed[-1]
        full = search_library(index, vector, query, config, filters, SEARCHABLE, video_rows(memory),
                              hit_payloads=True)
        assert lite.opened == full.opened and lite.video_scores == full.video_scores
        assert len(full.hits) > 4 * lib.RANKED_DEPTH  # enough rows to prune
        assert len(lite.moments) == len(full.moments) > 0
        for a, b in zip(lite.moments[:lib.RANKED_DEPTH], full.moments[:lib.RANKED_DEPTH], strict=True):
            assert (a.id, a.members, a.text, a.context, a.macro_label) == (b.id, b.members, b.text, b.context,
                                                                           b.macro_label)
            assert a.score == pytest.approx(b.score, abs=1e-6) and a.t_start == b.t_start and a.t_end == b.t_end
            assert a.text  # the payload was read
        pruned += lite_reads < len(full.hits) // 2
    assert pruned >= 30  # the payload was read for the moments' rows, not for every row of the opened videos


def test_numpy_scores_are_the_row_by_row_formula(monkeypatch):
    """Scores and order equal the per-row float arithmetic (sorted by score, then id)."""
    rng = random.Random(5)
    hits = []
    for m in range(30):
        mid = f"v{m % 3}/macro_{m:03d}"
        hits.append(Hit(mid, f"v{m % 3}", "macro", "", m, m + 1, "m", round(rng.random(), 2)))
        hits += [Hit(f"{mid}/e{n}", f"v{m % 3}", rng.choice(("event", "entity", "super")), mid, m, m + 1, "x",
                     round(rng.random(), 2)) for n in range(20)]
    videos = {"v0": 0.4, "v1": 0.55, "v2": 0.31}
    config = SearchConfig(merge_spans=False, per_video=0)
    monkeypatch.setattr(lib, "RANKED_DEPTH", 10**6)
    got = rank_moments(hits, config, ["event", "entity", "super"], videos)
    macro = {h.id: h.score for h in hits if h.kind == "macro"}
    beta, share = config.macro_context, config.video_share
    want = []
    for h in hits:
        if h.kind == "macro":
            continue
        context = macro.get(h.macro_id, h.score) if h.kind in lib.LEAF_KINDS else h.score
        want.append((share * videos[h.video_id] + (1 - share) * ((h.score + beta * context) / (1 + beta)), h.id))
    want.sort(key=lambda t: (-t[0], t[1]))
    assert [(m.score, m.id) for m in got] == want


def test_complete_reads_rows_without_or_with_stale_row_ids(memory):
    query = SearchQuery("vector", 30, memory.embedder.embed_query("a man chops an onion"),
                        filter=SearchFilter(video_ids=("v01", "v02")))
    full = memory.vectors.search(query)
    columns = memory.vectors.search_columns(query)
    lite = columns.hits()
    assert [h.id for h in lite] == [h.id for h in full] and all(h.ref is not None and not h.text for h in lite)
    assert [h.score for h in lite] == [h.score for h in full]
    assert memory.vectors.complete(lite) == full
    assert memory.vectors.complete([replace(h, ref=None) for h in lite]) == full
    stale = [replace(h, ref=r) for h, r in zip(lite, [lite[-1].ref, 10**12] + [h.ref for h in lite[2:]], strict=True)]
    assert memory.vectors.complete(stale) == full  # a row id of another row, or of none, is looked up by id
    assert memory.vectors.search(replace(query, lite=True)) == lite
