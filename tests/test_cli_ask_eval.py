"""``memtools ask`` and ``memtools eval`` against an OpenAI-compatible endpoint faked with respx
at the HTTP transport: the real ChatOpenAI client, real memory, scripted completions."""

from __future__ import annotations

import json
import re
import threading

import httpx
import pytest
import respx

from agent_helpers import OPTIONS, QUESTION, kitchen_memory
from memtools.cli import main

pytest.importorskip("langchain_openai")

BASE = "http://llm.test/v1"
MODEL_ARGS = ["--model", "openai:test-model", "--base-url", BASE]


@pytest.fixture(scope="module")
def memory_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli") / "mem"
    kitchen_memory(folder).close()
    return folder


def completion(message: dict, usage: tuple[int, int] = (1200, 60)) -> httpx.Response:
    return httpx.Response(200, json={
        "id": "chatcmpl-test", "object": "chat.completion", "created": 0, "model": "test-model",
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "tool_calls" if "tool_calls" in message else "stop"}],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}})


_n = iter(range(10**6))


def calls(name: str, **args) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"call_{next(_n)}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]}


# --- ask -----------------------------------------------------------------------------------

def ask_argv(memory_dir, *extra):
    options = [f"--option={k}={v}" for k, v in OPTIONS.items()]
    return ["ask", "--memory", str(memory_dir), QUESTION, *options, "--video", "kitchen", *MODEL_ARGS, *extra]


def test_ask_answers_and_prints_the_trace(memory_dir, capsys):
    with respx.mock(assert_all_called=True) as mock:
        route = mock.post(f"{BASE}/chat/completions").mock(side_effect=[
            completion(calls("search_nodes", useful_info="fire phase: kitchen/super_01",
                             query="the cook covers the burning pan")),
            completion(calls("get_subgraph", useful_info="evt_002 in kitchen/macro_0002 covers the pan",
                             macro_id="kitchen/macro_0002")),
            completion(calls("answer", useful_info="evt_002: cook smothers the fire with a metal lid", answer="B",
                             reasoning="evt_002")),
        ])
        assert main(ask_argv(memory_dir)) == 0
    out = capsys.readouterr().out
    assert "Answer: B (covers the pan with a metal lid)" in out
    assert "call: search_nodes(query='the cook covers the burning pan')" in out
    assert "call: get_subgraph(macro_id='kitchen/macro_0002')" in out
    assert "clue: evt_002: cook smothers the fire with a metal lid" in out
    assert out.count("tokens: 1,200 in, 60 out") == 3  # one line per round, from each response's usage
    assert "Tokens of this question: 3,600 in, 180 out" in out
    first = json.loads(route.calls[0].request.content)
    assert first["model"] == "test-model" and first["tool_choice"] == "required"
    assert {t["function"]["name"] for t in first["tools"]} >= {"search_nodes", "get_subgraph", "answer"}
    second = json.loads(route.calls[1].request.content)
    assert "fire phase: kitchen/super_01" in second["messages"][1]["content"]
    assert len(second["messages"]) == 2  # system + this round's prompt: nothing accumulates


def test_ask_json_prints_the_trajectory(memory_dir, capsys):
    with respx.mock() as mock:
        mock.post(f"{BASE}/chat/completions").mock(side_effect=[
            completion(calls("search_by_time", useful_info="o", start_sec=240, end_sec=300), usage=(1000, 50)),
            completion(calls("answer", useful_info="lid", answer="B"), usage=(900, 20)),
        ])
        assert main(ask_argv(memory_dir, "--json")) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["answer"] == "B" and data["status"] == "answered" and data["rounds"] == 1
    assert data["usage"] == {"input_tokens": 1900, "output_tokens": 70, "total_tokens": 1970}
    assert [(r["in"], r["out"], r["estimated"]) for r in data["tokens_per_round"]] == [(1000, 50, False),
                                                                                       (900, 20, False)]
    assert data["tokens"] == {"in": 1900, "out": 70, "estimated": False}
    assert [s["kind"] for s in data["trace"]] == ["reason", "act", "reason", "answer"]
    assert "kitchen/macro_0002" in data["trace"][1]["observation"]


def test_ask_json_protocol_and_options_inside_the_question(memory_dir, capsys):
    reply = {"role": "assistant", "content": json.dumps(
        {"reasoning": "r", "can_answer": True, "answer": "B", "useful_info": "caption HIGH HEAT"})}
    with respx.mock() as mock:
        route = mock.post(f"{BASE}/chat/completions").mock(return_value=completion(reply))
        code = main(["ask", "--memory", str(memory_dir), "What caption appears?\n(A) LOW HEAT\n(B) HIGH HEAT",
                     "--video", "kitchen", *MODEL_ARGS, "--protocol", "json"])
    assert code == 0 and "Answer: B (HIGH HEAT)" in capsys.readouterr().out
    body = json.loads(route.calls[0].request.content)
    assert "tools" not in body and "(B) HIGH HEAT" in body["messages"][1]["content"]


def test_ask_reports_a_missing_extra_or_key_clearly(memory_dir, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["ask", "--memory", str(memory_dir), "q?", "--model", "openai:m"]) == 1
    assert "no API key: set OPENAI_API_KEY" in capsys.readouterr().err


# --- eval ----------------------------------------------------------------------------------

QUESTIONS = [
    {"key": "kitchen", "qa": [
        {"uid": "q1", "question": "How does the cook put out the pan fire?\n(A) pours water on it\n(B) covers the pan "
                                  "with a metal lid\n(C) uses a fire extinguisher\n(D) throws a towel over it",
         "answer": "B", "question_type": ["event understanding", "reasoning"]},
        {"uid": "q2", "question": "What caption appears while the oil heats?\n(A) LOW HEAT\n(B) HIGH HEAT\n(C) DANGER"
                                  "\n(D) DONE", "answer": "B", "question_type": ["key information retrieval"]}]},
    {"key": "vid-garage", "qa": [
        {"uid": "q3", "question": "What does the cook slice?\n(A) onions\n(B) carrots\n(C) bread\n(D) fish",
         "answer": "A", "question_type": ["entity recognition"]}]},
]
PICKS = {"put out the pan fire": "B", "caption appears": "B", "cook slice": "D"}  # the fake model's answers


class FakeLLM:
    """A stateless OpenAI-compatible endpoint: round 0 searches, round 1 answers. Thread-safe."""

    def __init__(self):
        self.bodies: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        raw = request.content.decode()
        with self.lock:
            self.bodies.append(raw)
        prompt = json.loads(raw)["messages"][-1]["content"]
        if "# Round 0:" in prompt:
            return completion(calls("search_nodes", useful_info="overview read", query="the cook in the kitchen"))
        pick = next(v for k, v in PICKS.items() if k in prompt)
        return completion(calls("answer", useful_info="found it", answer=pick))


def write_questions(path, gold: dict[str, str] | None = None):
    rows = json.loads(json.dumps(QUESTIONS))
    for row in rows:
        for qa in row["qa"]:
            qa["answer"] = (gold or {}).get(qa["uid"], qa["answer"])
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def run_eval_cli(memory_dir, tmp_path, questions, out, llm, *extra):
    vmap = tmp_path / "map.json"
    vmap.write_text(json.dumps({"vid-garage": "garage"}))
    with respx.mock(assert_all_called=False) as mock:
        route = mock.post(f"{BASE}/chat/completions").mock(side_effect=llm)
        code = main(["eval", "--memory", str(memory_dir), "--questions", str(questions), "--out", str(out),
                     "--video-map", str(vmap), *MODEL_ARGS, *extra])
    return code, route.call_count


def test_eval_reports_accuracy_writes_trajectories_and_resumes(memory_dir, tmp_path, capsys):
    questions = write_questions(tmp_path / "lvbench.jsonl")
    out = tmp_path / "run"
    code, n = run_eval_cli(memory_dir, tmp_path, questions, out, FakeLLM(), "--concurrency", "3")
    text = capsys.readouterr().out
    assert code == 0 and n == 6
    assert "Accuracy:  66.7% (2/3)" in text
    assert re.search(r"entity recognition\s+0\.0% \(0/1\)", text)
    assert re.search(r"event understanding\s+100\.0% \(1/1\)", text)
    q3 = json.loads((out / "trajectories" / "vid-garage" / "q3.json").read_text())
    assert q3["video_id"] == "garage" and q3["answer"] == "D" and q3["gold"] == "A" and q3["correct"] is False
    assert q3["scope"] == ["garage"] and q3["rounds"] == 1 and q3["trace"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n"] == 3 and summary["correct"] == 2 and summary["per_type"]["reasoning"]["accuracy"] == 1.0

    code, n = run_eval_cli(memory_dir, tmp_path, questions, out, FakeLLM())  # resume: nothing left to ask
    assert code == 0 and n == 0 and "resumed 3" in capsys.readouterr().out


def test_no_prompt_ever_contains_the_gold(memory_dir, tmp_path):
    """The reference runner puts the gold letter into every reasoner prompt. Here the model's
    input must not depend on the gold at all: a distinctive gold never appears in any request,
    and swapping every gold letter leaves every request byte-identical."""
    marker = {"q1": "GOLD-7f3a9-Q1", "q2": "GOLD-7f3a9-Q2", "q3": "GOLD-7f3a9-Q3"}
    llm = FakeLLM()
    run_eval_cli(memory_dir, tmp_path, write_questions(tmp_path / "m.jsonl", marker), tmp_path / "m", llm)
    assert len(llm.bodies) == 6 and not any("GOLD-7f3a9" in b for b in llm.bodies)

    seen = []
    for name, gold in (("a", {"q1": "A", "q2": "A", "q3": "A"}), ("d", {"q1": "D", "q2": "D", "q3": "D"})):
        llm = FakeLLM()
        run_eval_cli(memory_dir, tmp_path, write_questions(tmp_path / f"{name}.jsonl", gold), tmp_path / name, llm,
                     "--concurrency", "1")
        seen.append(llm.bodies)
    assert len(seen[0]) == len(seen[1]) == 6
    strip_ids = re.compile(r'"(?:tool_call_id|id)": ?"[^"]*"')  # the fake's tool-call ids differ per run
    assert [strip_ids.sub("", b) for b in seen[0]] == [strip_ids.sub("", b) for b in seen[1]]


def test_eval_skips_videos_the_memory_lacks(memory_dir, tmp_path, capsys):
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"key": "nowhere", "qa": [{"uid": "z", "question": "Q?\n(A) a\n(B) b",
                                                                "answer": "A"}]}) + "\n")
    code, n = run_eval_cli(memory_dir, tmp_path, questions, tmp_path / "s", FakeLLM())
    captured = capsys.readouterr()
    assert code == 0 and n == 0 and "skipped 1" in captured.out and "'nowhere' is not in the memory" in captured.err


def test_eval_rejects_a_malformed_question_file(memory_dir, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"key": "kitchen"}\n')
    assert main(["eval", "--memory", str(memory_dir), "--questions", str(bad), *MODEL_ARGS]) == 1
    assert "bad.jsonl:1: expected an object with 'key' and 'qa'" in capsys.readouterr().err


def test_ask_without_usage_reports_estimated_tokens(memory_dir, capsys):
    bare = [completion(calls("answer", useful_info="lid", answer="B"))]
    body = json.loads(bare[0].content)
    del body["usage"]
    with respx.mock() as mock:
        mock.post(f"{BASE}/chat/completions").mock(side_effect=[httpx.Response(200, json=body)])
        assert main(ask_argv(memory_dir, "--json")) == 0
    data = json.loads(capsys.readouterr().out)
    (only,) = data["tokens_per_round"]
    assert only["estimated"] and only["in"] == data["prompt_tokens_est"][0] > 0
    assert data["tokens"]["estimated"] is True
