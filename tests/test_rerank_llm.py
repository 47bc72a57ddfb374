"""LLMReranker with the project's scripted chat models: what the model is shown, how its JSON
ranking becomes scores, the bounds on candidates and tokens, and its cost in the accounting."""

from __future__ import annotations

import pytest

from memtools.agent.testing import FunctionChatModel, ScriptedChatModel, prompt_text, text_reply
from memtools.costs import collect
from memtools.errors import RerankError
from memtools.rerank.llm import LLMReranker, parse_ranking

DOCS = ["a man slices onions", "a car drives by", "onions sizzle in a pan", "the cook washes a knife"]


def ranked(scores: list[float]) -> list[int]:
    return sorted(range(len(scores)), key=lambda i: -scores[i])


def test_the_models_ranking_orders_the_candidates_and_the_unranked_follow_in_order():
    model = ScriptedChatModel(responses=[text_reply('{"ranking": [3, 1]}', usage=(120, 9))])
    scores = LLMReranker(model).rerank("onions in a pan", DOCS)
    assert ranked(scores) == [2, 0, 1, 3]
    prompt = prompt_text(model.prompts[0])
    assert "Query: onions in a pan" in prompt
    assert "[1] a man slices onions" in prompt and "[4] the cook washes a knife" in prompt
    assert '"ranking"' in prompt  # it is asked for JSON


def test_candidates_and_tokens_are_bounded():
    model = ScriptedChatModel(responses=[text_reply({"ranking": [2, 1]})])
    long = ["word " * 200, "short one", "never shown", "nor this"]
    scores = LLMReranker(model, max_candidates=2, max_document_chars=50, max_output_tokens=64).rerank("q", long)
    prompt = prompt_text(model.prompts[0])
    assert "never shown" not in prompt and "[3]" not in prompt
    assert max(len(line) for line in prompt.splitlines() if line.startswith("[1]")) <= len("[1] ") + 50
    assert model.call_kwargs[0]["max_tokens"] == 64
    assert ranked(scores) == [1, 0, 2, 3]  # past max_candidates: first-stage order, after the ranked


def test_a_fenced_reply_with_prose_around_it_is_read():
    assert parse_ranking('Sure!\n```json\n{"ranking": ["2", 1, 1, 9]}\n```', 3) == [1, 0]


@pytest.mark.parametrize("reply", ["I think the second one.", '{"order": [1, 2]}', '{"ranking": "1, 2"}',
                                   '{"ranking": [7, 8]}'])
def test_a_reply_without_a_usable_ranking_is_a_rerank_error(reply):
    model = ScriptedChatModel(responses=[text_reply(reply)])
    with pytest.raises(RerankError):
        LLMReranker(model).rerank("q", DOCS)


def test_tokens_are_counted_and_recorded_as_the_rerank_stage(tmp_path):
    model = FunctionChatModel(func=lambda messages, tools: text_reply('{"ranking": [1]}', usage=(250, 12)))
    reranker = LLMReranker(model, memory_path=tmp_path, name="llm:scripted")
    reranker.rerank("q", DOCS)
    reranker.rerank("q", DOCS[:2])
    assert (reranker.usage.calls, reranker.usage.tokens_in, reranker.usage.tokens_out) == (2, 500, 24)
    rows = [(r.stage, r.tally.tokens_in, r.tally.tokens_out, r.tally.estimated) for r in collect(tmp_path)]
    assert rows == [("rerank", 500, 24, False)]


def test_no_usage_from_the_model_is_estimated():
    model = ScriptedChatModel(responses=[text_reply('{"ranking": [1]}')])
    model.responses[0].usage_metadata = None
    reranker = LLMReranker(model)
    reranker.rerank("q", DOCS)
    assert reranker.usage.estimated and reranker.usage.tokens_in > 0


def test_a_memory_folder_it_cannot_write_loses_the_record_not_the_ranking(tmp_path):
    blocked = tmp_path / "memory"
    blocked.write_text("a file where the memory folder should be")
    model = ScriptedChatModel(responses=[text_reply('{"ranking": [2]}', usage=(10, 2))])
    reranker = LLMReranker(model, memory_path=blocked)
    assert ranked(reranker.rerank("q", DOCS[:3])) == [1, 0, 2]
    assert reranker.usage.tokens_in == 10
