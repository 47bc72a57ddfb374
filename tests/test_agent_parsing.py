"""Reading model replies and building bounded prompts: no memory, no model."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage

from memtools.agent.parsing import (
    ReplyError,
    extract_json,
    last_resort_letter,
    normalize_answer,
    parse_json_reply,
    parse_tool_reply,
    split_options,
)
from memtools.agent.prompts import (
    ora_tool_schemas,
    render_call,
    render_notes,
    round_prompt,
    system_prompt,
)
from memtools.tools import TOOL_SPECS

OPTIONS = {"A": "water", "B": "a metal lid", "C": "a towel", "D": "sand"}
ALLOWED = tuple(n for n in TOOL_SPECS if n != "inspect_frames")


@pytest.mark.parametrize("text", [
    '{"a": 1}', '```json\n{"a": 1}\n```', 'Sure! Here it is: {"a": 1} hope it helps', '{"b": } then {"a": 1}',
])
def test_extract_json_tolerates_fences_and_chatter(text):
    assert extract_json(text)["a"] == 1


@pytest.mark.parametrize("text, error", [("", "empty"), ("no braces", "no JSON"), ('{"a": 1', "invalid JSON")])
def test_extract_json_errors_say_what_is_wrong(text, error):
    with pytest.raises(ReplyError, match=error):
        extract_json(text)


@pytest.mark.parametrize("raw", ["B", "b", "(B)", "B.", "B) a metal lid", "Option B", "answer: B", "a metal lid"])
def test_normalize_answer(raw):
    assert normalize_answer(raw, OPTIONS) == "B"


@pytest.mark.parametrize("raw", ["E", "", None, "the lid", "Banana"])
def test_normalize_answer_rejects(raw):
    with pytest.raises(ReplyError):
        normalize_answer(raw, OPTIONS)


def test_open_questions_take_free_text():
    assert normalize_answer("  HIGH HEAT ", {}) == "HIGH HEAT"


def test_last_resort_letter():
    assert last_resort_letter("I think the answer is (C), maybe", OPTIONS) == "C"
    assert last_resort_letter("Answer: d", OPTIONS) == "D"
    assert last_resort_letter("no letters here", OPTIONS) is None


def test_split_options_lvbench_layout():
    stem, opts = split_options("What does the cook use?\n(A) water\n(B) a metal\nlid\n(C) a towel\n(D) sand")
    assert stem == "What does the cook use?"
    assert opts == {"A": "water", "B": "a metal lid", "C": "a towel", "D": "sand"}


def test_split_options_inline_and_none():
    stem, opts = split_options("Which color? (A) red (B) blue (C) green (D) white")
    assert stem == "Which color?" and opts["B"] == "blue" and opts["D"] == "white"
    assert split_options("An open question?") == ("An open question?", {})


def test_parse_json_reply_tool_and_answer():
    d = parse_json_reply('{"can_answer": false, "useful_info": "c", "information_need": '
                         '{"name": "get_subgraph", "arguments": {"macro_id": "v/macro_0001"}}}', ALLOWED, OPTIONS)
    assert (d.tool, d.args, d.clue) == ("get_subgraph", {"macro_id": "v/macro_0001"}, "c")
    d = parse_json_reply('{"can_answer": "true", "answer": "(d)"}', ALLOWED, OPTIONS)
    assert d.answer == "D" and d.tool is None


@pytest.mark.parametrize("text, error", [
    ('{"can_answer": false}', "information_need is null"),
    ('{"can_answer": false, "information_need": {"tool": "inspect_frames", "args": {}}}', "unknown tool"),
    ('{"can_answer": false, "information_need": {"tool": "get_subgraph", "args": {}}}', "macro_id"),
    ('{"answer": "B"}', "can_answer"),
])
def test_parse_json_reply_errors(text, error):
    with pytest.raises(ReplyError, match=error):
        parse_json_reply(text, ALLOWED, OPTIONS)


def test_scope_defaults_make_video_id_optional():
    reply = AIMessage(content="", tool_calls=[
        {"name": "search_by_time", "args": {"useful_info": "x", "start_sec": 1, "end_sec": 2}, "id": "1"}])
    d = parse_tool_reply(reply, ALLOWED, OPTIONS, {"video_id": "kitchen", "top_k": 10})
    assert d.args == {"start_sec": 1, "end_sec": 2}  # the model's own args; defaults are added when run


def test_parse_tool_reply_uses_the_first_call_and_notes_the_rest():
    reply = AIMessage(content="thinking aloud", tool_calls=[
        {"name": "get_summary", "args": {"useful_info": "u"}, "id": "1"},
        {"name": "list_videos", "args": {}, "id": "2"}])
    d = parse_tool_reply(reply, ALLOWED, OPTIONS)
    assert d.tool == "get_summary" and d.clue == "u" and d.reasoning == "thinking aloud"
    assert "ignored: list_videos" in d.notes[0]


def test_parse_tool_reply_without_calls():
    with pytest.raises(ReplyError, match="no function was called"):
        parse_tool_reply(AIMessage(content="The answer is B"), ALLOWED, OPTIONS)
    d = parse_tool_reply(AIMessage(content='{"can_answer": true, "answer": "B"}'), ALLOWED, OPTIONS)
    assert d.answer == "B"


def test_tool_schemas_carry_useful_info_and_stay_compact():
    schemas = ora_tool_schemas(ALLOWED)
    assert [s["function"]["name"] for s in schemas][-1] == "answer"
    for s in schemas:
        params = s["function"]["parameters"]
        assert params["required"][0] == "useful_info" and "title" not in str(params)
    search = next(s for s in schemas if s["function"]["name"] == "search_nodes")["function"]["parameters"]
    assert search["properties"]["node_types"]["type"] == "array"  # anyOf [array, null] collapsed


def test_system_prompts():
    tools = system_prompt("tools", ALLOWED)
    assert "useful_info" in tools and "information_need" not in tools
    json_ = system_prompt("json", ALLOWED)
    assert '"information_need"' in json_ and "get_relations(node_id, direction?: out|in|both=both" in json_


def test_render_call_clips_long_values():
    call = render_call("search_nodes", {"query": "x" * 300, "top_k": 5, "video_id": None})
    assert call.startswith("search_nodes(query='xxx") and call.endswith("top_k=5)") and len(call) < 130


def test_notes_stay_within_budget_newest_kept_whole():
    clues = [{"round": i, "source": f"search_nodes(query='q{i}')", "text": f"clue {i} " + "z" * 700}
             for i in range(12)]
    text = render_notes(clues, 3000)
    assert len(text) < 3200
    assert f"clue 11 {'z' * 700}" in text  # the newest whole
    assert "\nR0 search_nodes(query='q0'): clue 0 z" in text and "dropped" not in text  # shortened, still there
    assert f"clue 0 {'z' * 700}" not in text
    tight = render_notes(clues, 1500)  # shortening is not enough: the oldest go
    assert len(tight) < 1600 and f"clue 11 {'z' * 700}" in tight
    assert "oldest notes dropped)" in tight and "\nR0 " not in tight


def test_round_prompt_is_bounded_whatever_the_history():
    clues = [{"round": i, "source": "get_subgraph(macro_id='v/macro_0001')", "text": "k" * 800} for i in range(40)]
    state = {"question": "Q?", "options": OPTIONS, "scope": ["v"], "round": 11, "useful_info": clues,
             "exploration": {"queries": ["'q'"] * 50, "calls": [],
                             "macros_opened": [f"v/macro_{i:04d}" for i in range(60)],
                             "macros_found": [f"v/macro_{i:04d}" for i in range(200)]},
             "observation": "line\n" * 5000, "observation_source": "search_nodes(query='q')"}
    prompt = round_prompt(state, 12, observation_chars=6000, notes_chars=4500)
    assert len(prompt) < 6000 + 4500 + 2500
    assert "more characters cut" in prompt and "(+" in prompt
