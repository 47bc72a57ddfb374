"""The ORA loop end to end over a real (small) memory, driven by scripted chat models:
the tool-calling and JSON paths, budget exhaustion, tool errors, malformed replies, scope,
images, usage accounting, and custom wiring of the importable nodes."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.graph import END, START, StateGraph

from agent_helpers import OPTIONS, QUESTION, kitchen_memory
from memtools.agent import (
    ORAContext,
    ORAState,
    act,
    answer,
    build_ora_graph,
    format_trace,
    observe,
    reason,
    route_after_observe,
    route_after_reason,
    trajectory,
)
from memtools.agent.testing import ScriptedChatModel, prompt_text, text_reply, tool_call
from memtools.tools import MemoryTools

M2 = "kitchen/macro_0002"


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    mem = kitchen_memory(tmp_path_factory.mktemp("ora") / "mem")
    yield mem
    mem.close()


def ask(memory, model, **settings):
    graph = build_ora_graph(memory, model, **settings)
    return graph.invoke({"question": QUESTION, "options": OPTIONS, "scope": ["kitchen"]})


def human(prompt) -> str:
    return prompt_text([m for m in prompt if isinstance(m, HumanMessage)])


def json_step(clue, tool=None, answer=None, **args):
    need = {"tool": tool, "args": args, "reason": "look"} if tool else None
    return text_reply({"reasoning": "r", "can_answer": answer is not None, "answer": answer, "useful_info": clue,
                       "information_need": need})


# --- the happy path, both protocols ---------------------------------------------------------

def test_tool_calling_search_subgraph_answer(memory):
    model = ScriptedChatModel(responses=[
        tool_call("search_nodes", usage=(900, 40), useful_info="fire phase is kitchen/super_01",
                  query="flames rise from the frying pan"),
        tool_call("get_subgraph", usage=(1000, 30), useful_info=f"pan fire evt_001 at 0:04:05 in {M2}",
                  macro_id=M2),
        tool_call("answer", usage=(800, 20), useful_info="evt_002: cook covers the pan with a metal lid",
                  answer="B", reasoning="evt_002 says the lid smothers the fire"),
    ])
    out = ask(memory, model)

    assert out["answer"] == "B" and out["status"] == "answered" and out["round"] == 2
    assert [c["source"] for c in out["useful_info"]] == [
        "overview", "search_nodes(query='flames rise from the frying pan')", f"get_subgraph(macro_id='{M2}')"]
    assert out["exploration"]["macros_opened"] == [M2]
    assert M2 in out["exploration"]["macros_found"]
    # the model got every tool but inspect_frames (text-only) plus `answer`, and must call one
    bound = model.call_kwargs[0]
    assert [t["function"]["name"] for t in bound["tools"]] == [
        "list_videos", "get_summary", "get_super_events", "get_macro_events", "get_subgraph", "search_nodes",
        "search_graph", "search_entities", "get_entity_timeline", "get_event_chain", "search_by_time", "get_transcript",
        "get_relations", "answer"]
    assert bound["tool_choice"] == "any"
    # round 0 sees the root + super events; the scoped video id was filled in for search
    first = human(model.prompts[0])
    assert "Frying and the pan fire" in first and "kitchen/super_01" in first
    acts = [s for s in out["trace"] if s["kind"] == "act"]
    assert acts[0]["ok"] and "match(es)" in acts[0]["observation"]
    # raw observations are not carried: round 2 sees round 1's clue, not round 1's search result
    third = human(model.prompts[2])
    assert "fire phase is kitchen/super_01" in third and "pan fire evt_001" in third
    assert "match(es) for" not in third and "Macro event kitchen/macro_0002" in third
    # usage per round and in total
    reasons = [s for s in out["trace"] if s["kind"] == "reason"]
    assert [s["usage"]["input_tokens"] for s in reasons] == [900, 1000, 800]
    assert trajectory(out)["usage"] == {"input_tokens": 2700, "output_tokens": 90, "total_tokens": 2790}
    text = format_trace(out)
    assert "search_nodes(query='flames rise from the frying pan')" in text and "answer: B" in text


def test_json_protocol_for_models_without_tool_calling(memory):
    model = ScriptedChatModel(supports_tools=False, responses=[
        json_step("fire is in super_01", "search_nodes", query="the pan catches fire", top_k=5),
        json_step(f"fire in {M2}", "get_subgraph", macro_id=M2),
        json_step("lid smothers the fire (evt_002)", answer="B"),
    ])
    out = ask(memory, model)
    assert out["answer"] == "B" and out["status"] == "answered"
    assert all(s["protocol"] == "json" for s in out["trace"] if s["kind"] == "reason")
    assert all("tools" not in kw for kw in model.call_kwargs)
    system = model.prompts[0][0]
    assert isinstance(system, SystemMessage) and '"information_need"' in system.content
    assert "search_nodes(query, top_k?=10" in system.content  # the toolkit, as signatures
    acts = [s for s in out["trace"] if s["kind"] == "act"]
    assert acts[0]["args"] == {"query": "the pan catches fire", "top_k": 5}
    assert acts[0]["observation"].startswith("5 match(es)")


# --- budget, errors, malformed output -----------------------------------------------------

def test_budget_exhaustion_forces_an_answer(memory):
    model = ScriptedChatModel(responses=[
        tool_call("search_nodes", useful_info="nothing yet", query="a cook in a blue apron"),
        tool_call("search_by_time", useful_info="cook seen", start_sec=240, end_sec=300),
        text_reply({"reasoning": "the lid macro", "answer": "B"}),  # the forced answer, tools unbound
    ])
    out = ask(memory, model, max_rounds=2)
    assert out["answer"] == "B" and out["status"] == "forced" and out["round"] == 2
    assert len(model.prompts) == 3
    assert "tools" not in model.call_kwargs[2]
    forced = human(model.prompts[2])
    assert "The tool budget is spent" in forced and "cook seen" in forced
    assert "Putting out the pan fire" in forced  # the last, undigested observation is shown too
    assert "1 tool call(s) left. This is your last tool call" in human(model.prompts[1])
    assert out["trace"][-1]["kind"] == "answer" and out["trace"][-1]["forced"] is True


def test_forced_answer_that_never_parses_is_reported_not_raised(memory):
    model = ScriptedChatModel(responses=[
        tool_call("list_videos", useful_info="two videos"),
        AIMessage(content="I cannot decide."), AIMessage(content="Still unsure."), AIMessage(content="No idea."),
    ])
    out = ask(memory, model, max_rounds=1)
    assert out["answer"] is None and out["status"] == "no_answer"
    assert out["trace"][-1]["attempts"] == 3 and len(out["trace"][-1]["errors"]) == 3


def test_forced_answer_falls_back_to_a_letter_in_free_text(memory):
    model = ScriptedChatModel(responses=[
        tool_call("list_videos", useful_info="two videos"),
        AIMessage(content="Hmm."), AIMessage(content="The answer is (B)."), AIMessage(content="B it is."),
    ])
    out = ask(memory, model, max_rounds=1)
    assert out["answer"] == "B" and out["status"] == "forced"


def test_tool_error_becomes_the_observation_and_the_model_recovers(memory):
    model = ScriptedChatModel(responses=[
        tool_call("get_subgraph", useful_info="guessing an id", macro_id="kitchen/macro_0099"),
        tool_call("search_nodes", useful_info="macro_0099 does not exist", query="the cook covers the pan"),
        tool_call("answer", useful_info="evt_002 lid", answer="covers the pan with a metal lid"),
    ])
    out = ask(memory, model)
    act_steps = [s for s in out["trace"] if s["kind"] == "act"]
    assert act_steps[0]["ok"] is False and "does not exist" in act_steps[0]["observation"]
    second = human(model.prompts[1])
    assert "Tool error from get_subgraph" in second and "get_macro_events" in second  # the hint says what to call
    assert out["exploration"]["macros_opened"] == []  # a failed open does not count
    assert out["answer"] == "B"  # the option text was mapped to its letter


def test_malformed_json_is_retried_with_the_error_fed_back(memory):
    model = ScriptedChatModel(supports_tools=False, responses=[
        AIMessage(content="Let me think about the video first."),
        AIMessage(content='```json\n{"reasoning": "x", "can_answer": true, "answer": "Q"}\n```'),
        json_step("overview read", "search_nodes", query="a metal lid on the pan"),
        json_step("lid found", answer="B"),
    ])
    out = ask(memory, model)
    assert out["answer"] == "B"
    first = next(s for s in out["trace"] if s["kind"] == "reason")
    assert first["attempts"] == 3
    assert "no JSON object" in first["errors"][0] and "not one of the option letters" in first["errors"][1]
    retry = model.prompts[1]
    assert isinstance(retry[-2], AIMessage) and "could not be used: no JSON object" in retry[-1].content
    assert len(model.prompts[1]) == 4 and len(model.prompts[2]) == 6  # the feedback accumulates within a round
    assert len(model.prompts[3]) == 2  # and is gone in the next round


def test_bad_tool_calls_are_retried_with_tool_messages(memory):
    model = ScriptedChatModel(responses=[
        tool_call("get_everything", useful_info="?"),
        tool_call("search_nodes", useful_info="?", query="lid", top_k=500),
        tool_call("search_nodes", useful_info="overview read", query="a lid on the pan", top_k=3),
        tool_call("answer", useful_info="lid", answer="B"),
    ])
    out = ask(memory, model)
    first = next(s for s in out["trace"] if s["kind"] == "reason")
    assert first["attempts"] == 3
    assert "unknown tool 'get_everything'" in first["errors"][0] and "top_k" in first["errors"][1]
    retry = model.prompts[1]
    assert isinstance(retry[-1], ToolMessage) and retry[-1].tool_call_id == retry[-2].tool_calls[0]["id"]
    assert out["answer"] == "B"


def test_a_round_that_stays_malformed_is_a_failed_round_not_a_crash(memory):
    model = ScriptedChatModel(supports_tools=False, responses=[
        AIMessage(content="garbage"), AIMessage(content="{not json"),
        json_step("overview: fire in super_01", answer="B"),
    ])
    out = ask(memory, model, max_retries=1)
    assert out["answer"] == "B" and out["round"] == 1
    failed = out["trace"][0]
    assert failed["kind"] == "reason" and failed["attempts"] == 2 and "failure" in failed
    again = human(model.prompts[2])
    assert "No tool ran in round 1" in again and "The previous observation, again" in again
    assert "Frying and the pan fire" in again


# --- scope, images, context, custom wiring ----------------------------------------------------

def test_scope_fills_video_id_and_rejects_other_videos(memory):
    model = ScriptedChatModel(responses=[
        tool_call("search_by_time", useful_info="o", start_sec=240, end_sec=260),
        tool_call("get_summary", useful_info="macro_0002 at 4:00", video_id="garage"),
        tool_call("answer", useful_info="x", answer="B"),
    ])
    out = ask(memory, model)
    acts = [s for s in out["trace"] if s["kind"] == "act"]
    assert acts[0]["ok"] and "kitchen/macro_0002" in acts[0]["observation"]  # video_id defaulted to the scope
    assert not acts[1]["ok"] and "outside this question's scope" in acts[1]["observation"]


def test_unscoped_question_over_many_videos_starts_from_the_video_list(memory):
    model = ScriptedChatModel(responses=[tool_call("answer", useful_info="two videos", answer="B")])
    out = build_ora_graph(memory, model).invoke({"question": QUESTION, "options": OPTIONS})
    assert out["scope"] == [] and "2 video(s)" in human(model.prompts[0])


def test_images_reach_a_multimodal_model(memory):
    model = ScriptedChatModel(responses=[
        tool_call("inspect_frames", useful_info="look", video_id="kitchen", start_sec=240, end_sec=300),
        tool_call("answer", useful_info="a lid is visible", answer="B"),
    ])
    out = ask(memory, model, images=True)
    assert "inspect_frames" in [t["function"]["name"] for t in model.call_kwargs[0]["tools"]]
    content = model.prompts[1][1].content
    assert isinstance(content, list) and [b["type"] for b in content] == ["text", "image", "image"]
    assert content[1]["mime_type"] == "image/jpeg" and content[1]["base64"]
    assert out["answer"] == "B"
    json.dumps(out)  # the state stays JSON-able (checkpointers store it)


def test_run_context_overrides_the_default(memory):
    unused = ScriptedChatModel(responses=[])
    graph = build_ora_graph(memory, unused)
    model = ScriptedChatModel(responses=[tool_call("answer", useful_info="x", answer="D")])
    out = graph.invoke({"question": QUESTION, "options": OPTIONS, "scope": ["kitchen"]},
                       context=ORAContext(tools=MemoryTools(memory), model=model, max_rounds=3))
    assert out["answer"] == "D" and unused.prompts == []


def test_gold_cannot_enter_through_the_input(memory):
    model = ScriptedChatModel(responses=[tool_call("answer", useful_info="x", answer="A")])
    graph = build_ora_graph(memory, model)
    out = graph.invoke({"question": QUESTION, "options": OPTIONS, "scope": ["kitchen"], "answer": "ZGOLDZ"})
    assert out["answer"] == "A"
    assert "ZGOLDZ" not in prompt_text(model.prompts[0])


def test_nodes_rewire_into_a_user_graph(memory):
    g = StateGraph(ORAState, context_schema=ORAContext)
    for name, fn in (("observe", observe), ("reason", reason), ("act", act), ("answer", answer)):
        g.add_node(name, fn)
    g.add_edge(START, "observe")
    g.add_conditional_edges("observe", route_after_observe, ["reason", "answer"])
    g.add_conditional_edges("reason", route_after_reason, ["act", "answer"])
    g.add_edge("act", "observe")
    g.add_edge("answer", END)
    model = ScriptedChatModel(responses=[
        tool_call("get_macro_events", useful_info="fire in super_01", super_id="kitchen/super_01"),
        tool_call("answer", useful_info="lid", answer="B"),
    ])
    out = g.compile().invoke({"question": QUESTION, "options": OPTIONS, "scope": ["kitchen"]},
                             context=ORAContext(tools=MemoryTools(memory), model=model))
    assert out["answer"] == "B" and out["status"] == "answered"


def test_open_question_without_options(memory):
    model = ScriptedChatModel(supports_tools=False, responses=[
        json_step("the caption says HIGH HEAT", answer="HIGH HEAT")])
    out = build_ora_graph(memory, model).invoke({"question": "What caption appears?", "scope": ["kitchen"]})
    assert out["answer"] == "HIGH HEAT" and "# Options" not in human(model.prompts[0])


def test_a_thread_with_a_checkpointer_takes_one_question_after_another(memory):
    from langgraph.checkpoint.memory import InMemorySaver

    from memtools.agent import ora_state_graph

    model = ScriptedChatModel(responses=[
        tool_call("search_nodes", useful_info="o", query="a metal lid"),
        tool_call("answer", useful_info="lid", answer="B"),
        tool_call("answer", useful_info="caption", answer="HIGH HEAT"),
    ])
    context = ORAContext(tools=MemoryTools(memory), model=model)
    graph = ora_state_graph(context).compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    first = graph.invoke({"question": QUESTION, "options": OPTIONS, "scope": ["kitchen"]}, config)
    second = graph.invoke({"question": "What caption appears?", "options": {}, "scope": ["kitchen"]}, config)
    assert first["answer"] == "B" and first["round"] == 1
    assert second["answer"] == "HIGH HEAT" and second["round"] == 0 and second["options"] == {}
    assert [s["kind"] for s in second["trace"]] == ["reason", "answer"]
    assert [c["source"] for c in second["useful_info"]] == ["overview"]
