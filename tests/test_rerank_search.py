"""Reranking inside the search tools, on the kitchen memory: what the reranker reads, where its
order shows, the fallback on failure, and that without a reranker nothing of it runs."""

from __future__ import annotations

import functools
import subprocess
import sys
import threading

import pytest

from memtools.embed import TestEmbedder
from memtools.errors import RerankError
from memtools.rerank import WordOverlapReranker
from memtools.store import Memory
from memtools.tools import MemoryTools, SearchConfig
from rerank_support import ScriptedReranker
from test_tools_golden import assert_golden

Broken = functools.partial(ScriptedReranker, name="broken")  # a reranker that fails the way real ones do


class Reverse:
    """Scores candidates in the reverse of the order they came in (a reranker that disagrees)."""

    name = "reverse"

    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    def rerank(self, query, documents):
        self.seen.append(list(documents))
        return [float(i) for i in range(len(documents))]


@pytest.fixture()
def memory(kitchen_memory_path):
    with Memory.open(kitchen_memory_path, TestEmbedder(64)) as memory:
        yield memory


def ids(result) -> list[str]:
    return [h.id for h in result.hits]


def test_search_nodes_reranked_golden(memory):
    result = MemoryTools(memory, reranker=WordOverlapReranker()).search_nodes("pan catches fire", top_k=3)
    assert result.reranked_by == "test:word-overlap" and not result.rerank_warning
    assert all(h.rerank_score is not None for h in result.hits)
    assert_golden("search_nodes_reranked", result.render())


def test_search_entities_reranked_golden(memory):
    result = MemoryTools(memory, reranker=WordOverlapReranker()).search_entities("frying pan", top_k=3)
    assert result.reranked_by == "test:word-overlap"
    assert_golden("search_entities_reranked", result.render())


def test_the_reranker_orders_the_candidates_and_reads_each_in_its_episode(memory):
    plain = MemoryTools(memory, reranker=None).search_nodes("pan catches fire", top_k=10)
    reverse = Reverse()
    config = SearchConfig.default().model_copy(update={"rerank_candidates": 12})
    reranked = MemoryTools(memory, search=config, reranker=reverse).search_nodes("pan catches fire", top_k=10)
    shown = reverse.seen[0]
    assert len(shown) == 12  # rerank_candidates, more than top_k
    assert ids(reranked)[0] != ids(plain)[0]
    first_stage = ids(MemoryTools(memory, search=config).search_nodes("pan catches fire", top_k=12))
    assert set(ids(reranked)) <= set(first_stage) and set(ids(reranked)) != set(first_stage[:10])
    fire = next(d for d in shown if d.startswith("Video: Cooking stir-fry") and "pan catches fire —" in d)
    assert "Episode: Putting out the pan fire" in fire and "-> causes: covers the pan with a lid" in fire
    assert [h.rerank_score for h in reranked.hits] == sorted((h.rerank_score for h in reranked.hits), reverse=True)


def test_search_graph_is_reranked_too(memory):
    reverse = Reverse()
    result = MemoryTools(memory, reranker=reverse).search_graph("pan catches fire", top_k=4)
    plain = MemoryTools(memory).search_graph("pan catches fire", top_k=4)
    assert result.reranked_by == "reverse" and reverse.seen and ids(result) != ids(plain)
    assert "reranked by reverse" in result.render()


@pytest.mark.parametrize("reranker", [
    Broken(error=RuntimeError("CUDA out of memory")),
    Broken(error=RerankError("HTTP 503 from the server")),
    Broken(answer=[1.0]),
    Broken(answer=lambda docs: [float("nan")] * len(docs)),
    Broken(answer=lambda docs: ["high"] * len(docs)),
], ids=["raises", "rerank-error", "wrong-count", "nan", "strings"])
def test_a_failing_reranker_leaves_the_first_stage_order_and_says_so(memory, reranker):
    plain = MemoryTools(memory).search_nodes("pan catches fire", top_k=5)
    result = MemoryTools(memory, reranker=reranker).search_nodes("pan catches fire", top_k=5)
    assert ids(result) == ids(plain) and not result.reranked_by
    assert result.rerank_warning.startswith("reranker broken ")
    assert all(h.rerank_score is None for h in result.hits)
    text = result.render()
    assert "Not reranked (reranker broken " in text and "first-stage order" in text
    assert "Traceback" not in text and "CUDA" not in text


def test_a_slow_reranker_is_cut_off_by_the_configured_timeout(memory):
    release = threading.Event()
    config = SearchConfig.default().model_copy(update={"rerank_timeout": 0.05})
    try:
        result = MemoryTools(memory, search=config, reranker=Broken(answer=lambda d: [0.0] * len(d),
                                                                    release=release)).search_entities("cook")
    finally:
        release.set()
    assert result.entities and "no answer within 0.05 s" in result.rerank_warning
    assert_golden("search_entities_rerank_timeout", result.render())


def test_memorytools_takes_the_reranker_from_the_environment(memory, monkeypatch):
    monkeypatch.setenv("MEMTOOLS_RERANKER", "test")
    assert MemoryTools(memory).search_nodes("onions").reranked_by == "test:word-overlap"
    monkeypatch.setenv("MEMTOOLS_RERANKER", "none")
    assert MemoryTools(memory).reranker is None


def test_without_a_reranker_nothing_of_reranking_is_imported(kitchen_memory_path):
    code = f"""
import sys
from memtools.embed import TestEmbedder
from memtools.store import Memory
from memtools.tools import MemoryTools
with Memory.open({str(kitchen_memory_path)!r}, TestEmbedder(64)) as memory:
    tools = MemoryTools(memory)
    tools.search_nodes("pan catches fire"); tools.search_graph("fire"); tools.search_entities("cook")
print(sorted(m for m in sys.modules if m.startswith(("memtools.rerank", "memtools.retrieval.reranking"))))
"""
    env = {k: v for k, v in __import__("os").environ.items() if k != "MEMTOOLS_RERANKER"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_search_nodes_not_reranked_golden(memory):
    result = MemoryTools(memory, reranker=Broken(answer=[1.0])).search_nodes("pan catches fire", top_k=2)
    assert_golden("search_nodes_rerank_failed", result.render())
