"""Structured search on a small real library (kuzu + lance): coarse-to-fine ranking, merged
spans, the graph walk and "as of t" (issue 8)."""

from __future__ import annotations

import math

import pytest

from memtools.embed.testing import TestEmbedder
from memtools.errors import ToolError
from memtools.importers.captions import Caption, CaptionedVideo, graph_from_captions
from memtools.retrieval.moments import Moment
from memtools.retrieval.spans import merge_adjacent
from memtools.retrieval.walk import personalized_pagerank
from memtools.store import Memory
from memtools.testing import kitchen_graph
from memtools.tools import MemoryTools
from memtools.tools.search import PRESETS, SearchConfig

BAGPIPES = CaptionedVideo("bagpipes", [
    Caption(0, 20, "A man in a kilt stands on a street holding bagpipes."),
    Caption(20, 50, "He plays the bagpipes while people walk by."),
    Caption(50, 60, "He bows and the crowd claps."),
], duration=60, title="Street bagpipe player")
# One caption of this video is word for word one of the bagpipe video's; nothing else in it is.
DISTRACTOR = CaptionedVideo("kitchen2", [
    Caption(0, 30, "A woman chops carrots in a kitchen."),
    Caption(30, 40, "He plays the bagpipes while people walk by."),
    Caption(40, 90, "She stirs a pot of soup on the stove."),
], duration=90, title="Making soup")
# Two neighbouring captions that together are one moment.
SPLIT = CaptionedVideo("cake", [
    Caption(0, 10, "A girl shows the ingredients on a table."),
    Caption(10, 25, "She mixes flour sugar and eggs in a bowl."),
    Caption(25, 40, "She mixes the flour and eggs into a batter."),
    Caption(60, 90, "The cake comes out of the oven."),
], duration=90, title="Baking a cake")


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    path = tmp_path_factory.mktemp("library") / "memory"
    with Memory.create(path, TestEmbedder(256)) as memory:
        memory.write_videos([graph_from_captions(v) for v in (BAGPIPES, DISTRACTOR, SPLIT)] + [kitchen_graph()])
    with Memory.open(path, TestEmbedder(256)) as memory:
        yield memory


def test_coarse_to_fine_breaks_ties_with_what_the_hierarchy_knows(library):
    """The same sentence is a caption of two videos: the one whose root, episodes and other
    moments are about bagpipes wins; a flat ranking sees two identical nodes."""
    query = "he plays the bagpipes while people walk by"
    flat = MemoryTools(library, search=SearchConfig.vector()).search_nodes(query, top_k=2, node_types=["event"])
    assert {h.video_id for h in flat.hits} == {"bagpipes", "kitchen2"}
    assert flat.hits[0].score == flat.hits[1].score
    structured = MemoryTools(library).search_nodes(query, top_k=2, node_types=["event"])
    assert structured.strategy == "coarse_to_fine"
    best = structured.hits[0]
    assert best.video_id == "bagpipes" and best.score > structured.hits[1].score
    assert best.video_title == "Street bagpipe player"
    assert best.macro_id.startswith("bagpipes/macro_")


def test_every_hit_names_its_video_and_episode(library):
    result = MemoryTools(library).search_nodes("flour and eggs", top_k=5)
    text = result.render()
    for hit in result.hits:
        assert f"video {hit.video_id}" in text
        if hit.kind == "event":
            assert hit.macro_id and f"episode {hit.macro_id}" in text


def test_adjacent_hits_of_one_video_merge_into_a_span(library):
    merged = MemoryTools(library).search_nodes("she mixes flour and eggs", top_k=3, video_id="cake",
                                                node_types=["event"])
    best = merged.hits[0]
    assert best.members == ["cake/macro_0000/evt_002", "cake/macro_0000/evt_003"]
    assert (best.t_start, best.t_end) == (10, 40)
    assert "span of 2" in merged.render()
    plain = MemoryTools(library, search=PRESETS["coarse-to-fine-nomerge"]).search_nodes(
        "she mixes flour and eggs", top_k=3, video_id="cake", node_types=["event"])
    assert not plain.hits[0].members and plain.hits[0].t_end - plain.hits[0].t_start == 15


def test_merge_keeps_far_or_weaker_neighbours_apart():
    def m(i, s, e, score):
        return Moment(f"v/macro_0000/evt_{i:03d}", "event", "v", s, e, f"t{i}", score)

    out = merge_adjacent([m(1, 0, 10, 0.9), m(2, 30, 40, 0.89), m(3, 10, 20, 0.5)], margin=0.05, gap_sec=2)
    assert [o.id for o in out] == ["v/macro_0000/evt_001", "v/macro_0000/evt_002", "v/macro_0000/evt_003"]
    assert all(not o.members for o in out)


def test_search_graph_reaches_causes_with_the_path(library):
    result = MemoryTools(library).search_graph("flames shoot up from the pan", top_k=8, video_id="kitchen")
    assert result.strategy == "graph_walk"
    ids = [h.id for h in result.hits]
    assert "kitchen/macro_0002/evt_001" in ids
    walked = [h for h in result.hits if len(h.path) > 1]
    assert walked, "some hit must have been reached by the walk"
    for hit in walked:
        assert hit.path[-1] == hit.id
        assert all(step.isupper() for step in hit.path[1::2])  # seed, LABEL, node, LABEL, node ...
    assert "path: " in result.render()


def test_pagerank_prefers_nodes_near_the_seed():
    # a chain 0 - 1 - 2 - 3 with the restart on 0
    rank = personalized_pagerank(4, [(0, 1, 1.0), (1, 2, 1.0), (2, 3, 1.0)], [1.0, 0, 0, 0] and
                                 __import__("numpy").array([1.0, 0, 0, 0]), damping=0.5, iterations=50)
    assert rank[0] > rank[1] > rank[2] > rank[3] > 0
    assert math.isclose(float(rank.sum()), 1.0, rel_tol=1e-6)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_answers_library_wide_and_within_a_video(library, preset):
    tools = MemoryTools(library, search=PRESETS[preset])
    assert tools.search_nodes("bagpipes", top_k=3).hits
    hits = tools.search_nodes("bagpipes", top_k=3, video_id="bagpipes").hits
    assert hits and {h.video_id for h in hits} == {"bagpipes"}


def test_unknown_preset_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown search preset 'fast'; choose one of"):
        SearchConfig.preset("fast")


# --- as of t ----------------------------------------------------------------------------


def test_as_of_returns_only_what_had_happened(library):
    tools = MemoryTools(library)
    hits = tools.search_nodes("pan fire lid", top_k=20, video_id="kitchen", as_of_sec=240).hits
    assert hits and all(h.t_end <= 240 for h in hits)
    assert tools.search_graph("pan fire", video_id="kitchen", as_of_sec=240).hits
    assert all(h.t_end <= 240 for h in tools.search_graph("pan fire", video_id="kitchen", as_of_sec=240).hits)
    summary = tools.get_summary("kitchen", as_of_sec=130)
    assert summary.description == "" and [s.id for s in summary.supers] == ["kitchen/super_00"]
    assert tools.get_summary("kitchen", as_of_sec=10_000).description  # past the end: everything
    assert [m.id for m in tools.get_macro_events(super_id="kitchen/super_01", as_of_sec=300).macros] == [
        "kitchen/macro_0001"]
    assert [t.macro.id for t in tools.search_by_time(0, 400, "kitchen", as_of_sec=240).matches] == [
        "kitchen/macro_0000", "kitchen/macro_0001"]
    supers = tools.get_super_events("kitchen", as_of_sec=300).supers
    assert [s.id for s in supers] == ["kitchen/super_00", "kitchen/super_01"]
    assert supers[1].macro_ids == ["kitchen/macro_0001"] and supers[1].description == ""


@pytest.mark.parametrize("call, message", [
    (lambda t: t.search_nodes("pan", video_id="kitchen", as_of_sec=-1), "as_of_sec must be a number of seconds >= 0"),
    (lambda t: t.search_nodes("pan", video_id="kitchen", as_of_sec=float("nan")), "as_of_sec must be"),
    (lambda t: t.get_summary("kitchen", as_of_sec=float("inf")), "as_of_sec must be"),
    (lambda t: t.get_subgraph("kitchen/macro_0002", as_of_sec=100), "it had not happened yet"),
    (lambda t: t.get_macro_events(macro_ids=["kitchen/macro_0002"], as_of_sec=100), "it had not happened yet"),
    (lambda t: t.search_by_time(300, 360, "kitchen", as_of_sec=100), "after as_of_sec"),
])
def test_as_of_errors_say_what_to_do(library, call, message):
    with pytest.raises(ToolError, match=message):
        call(MemoryTools(library))


def test_the_preset_can_be_chosen_by_environment(monkeypatch):
    from memtools.errors import ConfigError

    monkeypatch.setenv("MEMTOOLS_SEARCH_PRESET", "graph-walk")
    assert SearchConfig.default().strategy == "graph_walk"
    monkeypatch.setenv("MEMTOOLS_SEARCH_PRESET", "fastest")
    with pytest.raises(ConfigError, match="MEMTOOLS_SEARCH_PRESET: unknown search preset 'fastest'"):
        SearchConfig.default()
