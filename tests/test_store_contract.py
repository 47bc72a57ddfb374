"""The storage contract (memtools.store.base) and the engine factory: typed queries, their lance
translation, engine choice and its errors, and the public names of memtools.store."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import memtools.store
from memtools.errors import ConfigError
from memtools.store.base import GraphReads, SearchFilter, SearchQuery
from memtools.store.engines import GRAPH_ENGINES, graph_engine
from memtools.store.graph.cypher import KuzuGraph
from memtools.store.tables.vectors import filter_where


def test_store_exports_the_contract():
    assert sorted(memtools.store.__all__) == sorted([
        "EdgeRow", "GraphEngine", "GraphReads", "GraphStore", "Hit", "KuzuGraph", "LanceIndex", "Manifest", "Memory",
        "SearchFilter", "SearchMode", "SearchQuery", "VectorIndex", "VideoEntry", "VideoWrites", "payload"])
    assert issubclass(KuzuGraph, GraphReads) and issubclass(memtools.store.Memory, memtools.store.VideoWrites)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"mode": "vector", "limit": 5}, "needs a query vector"),
    ({"mode": "fulltext", "limit": 5}, "needs query text"),
    ({"mode": "hybrid", "limit": 5, "text": "dog"}, "needs a query vector"),
    ({"mode": "sql", "limit": 5, "text": "dog"}, "not one of vector, fulltext, hybrid"),
    ({"mode": "fulltext", "limit": -1, "text": "dog"}, "limit must be an int >= 0"),
])
def test_a_search_query_says_what_it_lacks(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        SearchQuery(**kwargs)


def test_a_filter_refuses_a_bare_string_or_a_non_finite_time():
    with pytest.raises(ConfigError, match="sequence of strings"):
        SearchFilter(video_ids="kitchen")
    with pytest.raises(ConfigError, match="as_of must be a finite"):
        SearchFilter(as_of=float("nan"))


def test_the_lance_translation_quotes_values_and_keeps_every_restriction():
    assert filter_where(SearchFilter()) is None
    where = filter_where(SearchFilter(video_ids=["it's", "b"], kinds=["event"], start=1, end=2.5, as_of=9))
    assert where == ("video_id IN ('it''s', 'b') AND kind IN ('event') AND t_end >= 1.0 AND t_start <= 2.5"
                     " AND t_end <= 9.0")
    assert filter_where(SearchFilter(video_ids=[])) == "video_id IN ('')"  # no video: no rows, never all of them
    assert SearchQuery("vector", 3, np.zeros(4)).filter == SearchFilter()


def test_engines_are_named_and_unknown_ones_refused():
    assert graph_engine(None).name == "kuzu" and not graph_engine("kuzu").readers_beside_writer
    assert graph_engine("ladybug").readers_beside_writer and graph_engine("ladybug").file_name == "graph.lbug"
    with pytest.raises(ConfigError, match="unknown graph engine 'neo4j'; choose one of kuzu, ladybug"):
        graph_engine("neo4j")


def test_a_second_driver_is_refused_in_a_process_that_has_one(monkeypatch):
    monkeypatch.setitem(sys.modules, "kuzu", sys.modules.get("kuzu") or object())
    with pytest.raises(ConfigError, match="already uses the kuzu graph engine.*another process"):
        GRAPH_ENGINES["ladybug"].driver()


def test_importing_the_store_loads_no_graph_driver():
    code = "import sys, memtools.store, memtools.tools; print([m for m in ('kuzu', 'ladybug') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
