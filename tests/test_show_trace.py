"""An answer's path: ``memtools ask --trace`` and ``memtools eval --trace`` draw the ORA rounds."""

from __future__ import annotations

import pytest
import respx

from memtools.cli import main
from memtools.show.trace import node_ids, steps
from show_support import HAVE_CHROMIUM, NO_CHROMIUM, chromium, console_errors, page_data
from test_cli_ask_eval import BASE, FakeLLM, ask_argv, calls, completion, run_eval_cli, write_questions

pytest.importorskip("langchain_openai")

SCRIPT = [
    completion(calls("search_nodes", useful_info="fire phase: kitchen/super_01",
                     query="the cook covers the burning pan")),
    completion(calls("get_subgraph", useful_info="evt_002 in kitchen/macro_0002 covers the pan",
                     macro_id="kitchen/macro_0002")),
    completion(calls("answer", useful_info="kitchen/macro_0002/evt_002: the cook smothers the fire with a lid",
                     answer="B", reasoning="kitchen/macro_0002/evt_002 shows the lid")),
]


@pytest.fixture(scope="module")
def memory_dir(tmp_path_factory):
    from agent_helpers import kitchen_memory

    folder = tmp_path_factory.mktemp("trace") / "mem"
    kitchen_memory(folder).close()
    return folder


@pytest.fixture(scope="module")
def trace_file(memory_dir, tmp_path_factory):
    path = tmp_path_factory.mktemp("trace-out") / "trace.html"
    with respx.mock(assert_all_called=True) as mock:
        mock.post(f"{BASE}/chat/completions").mock(side_effect=list(SCRIPT))
        assert main(ask_argv(memory_dir, "--trace", str(path))) == 0
    return path


def test_ask_trace_draws_every_round_clue_call_and_the_cited_ids(trace_file, capsys):
    data = page_data(trace_file.read_text(encoding="utf-8"))
    run = data["run"]
    assert run["answer"] == "B" and run["status"] == "answered" and run["options"]["B"]
    assert [s.get("call") for s in run["steps"]] == [
        "search_nodes(query='the cook covers the burning pan')", "get_subgraph(macro_id='kitchen/macro_0002')", None]
    assert [s["clue"] for s in run["steps"]][:2] == ["fire phase: kitchen/super_01",
                                                     "evt_002 in kitchen/macro_0002 covers the pan"]
    opened = run["steps"][1]
    assert opened["ok"] and opened["summary"].startswith("Macro event kitchen/macro_0002")
    assert "kitchen/macro_0002/evt_002" in opened["ids"]  # the subgraph's nodes, with full ids
    assert data["visited"]["kitchen/macro_0002"] == 0  # the search of round 0 brought it up
    assert data["visited"]["kitchen/macro_0002/ent_002"] == 1  # the lid: named only by the subgraph of round 1
    assert data["opened"] == {"kitchen/macro_0002": 1}  # the one node a call asked for
    assert run["cited"][:1] == ["kitchen/macro_0002/evt_002"] and "kitchen/super_01" in run["cited"]
    assert [v["video"]["id"] for v in data["videos"]] == ["kitchen"]  # the timeline of the question's video


def test_node_ids_are_found_in_rendered_tool_text():
    text = "1. [event] kitchen/macro_0002/evt_002 [0:04:22-0:04:35] covers\n   in kitchen/macro_0002: fire (x/super_01)"
    assert node_ids(text) == ["kitchen/macro_0002/evt_002", "kitchen/macro_0002", "x/super_01"]
    forced = [{"kind": "answer", "round": 12, "forced": True, "answer": "C", "reasoning": "from the notes"}]
    assert steps(forced)[0][0]["answer"] == "C"


def test_eval_trace_writes_one_page_per_question(memory_dir, tmp_path):
    out = tmp_path / "run"
    code, _ = run_eval_cli(memory_dir, tmp_path, write_questions(tmp_path / "q.jsonl"), out, FakeLLM(), "--trace", "-q")
    assert code == 0
    pages = sorted(out.glob("traces/*/*.html"))
    trajectories = sorted(out.glob("trajectories/*/*.json"))
    assert len(pages) == len(trajectories) >= 3
    assert [p.stem for p in pages] == [t.stem for t in trajectories]
    data = page_data(pages[0].read_text(encoding="utf-8"))
    assert data["run"]["steps"][0]["call"].startswith("search_nodes(") and data["videos"]


@pytest.mark.skipif(not HAVE_CHROMIUM, reason=NO_CHROMIUM)
def test_the_trace_page_renders_in_chromium(trace_file):
    from selenium.webdriver.common.by import By

    driver = chromium()
    try:
        driver.get(trace_file.as_uri())
        assert driver.find_elements(By.CSS_SELECTOR, 'rect.macro.visited[data-id="kitchen/macro_0002"]')
        assert not driver.find_elements(By.CSS_SELECTOR, 'rect.macro.visited[data-id="kitchen/macro_0000"]')
        assert driver.find_elements(By.CSS_SELECTOR, 'rect.macro.opened[data-id="kitchen/macro_0002"]')
        text = driver.find_element(By.ID, "app").text
        assert "Answer: B" in text and "Clue kept: fire phase: kitchen/super_01" in text and "Round 1" in text
        assert console_errors(driver) == []
    finally:
        driver.quit()
