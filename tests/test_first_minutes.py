"""The first ten minutes: a model that cannot be reached, a failed build, a mistyped flag each
end in one clear line that says what to do, never a traceback."""

from __future__ import annotations

import json

import httpx
import pytest
import respx

from agent_helpers import OPTIONS, QUESTION, kitchen_memory
from build_helpers import scenes_video
from memtools.cli import main
from memtools.embed import TestEmbedder
from memtools.errors import ToolError
from memtools.store import Memory
from memtools.store.catalog.failures import failed_videos
from memtools.tools import MemoryTools

pytest.importorskip("langchain_openai")

BASE = "http://llm.test/v1"
MODEL_ARGS = ["--model", "openai:test-model", "--base-url", BASE]


@pytest.fixture(scope="module")
def memory_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("first") / "mem"
    kitchen_memory(folder).close()
    return folder


def _ask(memory_dir, response) -> tuple[int, int]:
    with respx.mock() as mock:
        route = mock.post(f"{BASE}/chat/completions").mock(side_effect=response)
        code = main(["ask", "--memory", str(memory_dir), QUESTION, *[f"--option={k}={v}" for k, v in OPTIONS.items()],
                     *MODEL_ARGS])
    return code, route.call_count


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_ask_with_an_unreachable_model_says_so_in_one_line(memory_dir, capsys):
    code, calls = _ask(memory_dir, httpx.ConnectError("Connection refused"))
    line = _one_error_line(capsys.readouterr().err)
    assert code == 1 and calls >= 1
    assert line.startswith("memtools ask: error: cannot reach model openai:test-model at http://llm.test/v1")
    assert "Connection refused" in line and "--base-url" in line


def test_ask_with_a_refused_key_names_the_variable(memory_dir, capsys):
    code, _ = _ask(memory_dir, httpx.Response(401, json={"error": {"message": "bad key", "type": "auth"}}))
    line = _one_error_line(capsys.readouterr().err)
    assert code == 1 and "refused the API key (HTTP 401)" in line and "--api-key-env" in line


def test_eval_with_an_unreachable_model_stops_at_once_in_one_line(memory_dir, tmp_path, capsys):
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"key": "kitchen", "qa": [
        {"uid": f"q{i}", "question": QUESTION + "\n(A) a\n(B) b", "answer": "A", "question_type": ["x"]}
        for i in range(8)]}) + "\n")
    with respx.mock() as mock:
        route = mock.post(f"{BASE}/chat/completions").mock(side_effect=httpx.ConnectError("Connection refused"))
        code = main(["eval", "--memory", str(memory_dir), "--questions", str(questions), "--out",
                     str(tmp_path / "run"), "--quiet", "--concurrency", "1", *MODEL_ARGS])
    line = _one_error_line(capsys.readouterr().err)
    assert code == 1 and line.startswith("memtools eval: error: cannot reach model")
    # three tries of the first question, and of the one the worker took up meanwhile; six were never asked
    assert route.call_count <= 2 * 3


@pytest.mark.parametrize("argv,hint", [
    (["tool", "search_nodes", "--query", "pan", "--topk", "3"], "--topk: did you mean --top-k?"),
    (["info", "--memroy", "x"], "--memroy: did you mean --memory?"),
    (["ask", "why?", "--modle", "openai:x"], "--modle: did you mean --model?"),
])
def test_a_mistyped_flag_names_the_near_one(memory_dir, capsys, argv, hint):
    with pytest.raises(SystemExit) as exit_:
        main([*argv[:2], "--memory", str(memory_dir), *argv[2:]] if argv[0] == "tool" else argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and hint in err  # unrecognized, or a required flag missing (--model)


def test_an_unknown_flag_with_nothing_near_stays_argparses_message(memory_dir, capsys):
    with pytest.raises(SystemExit):
        main(["info", "--memory", str(memory_dir), "--zzzzzz"])
    assert capsys.readouterr().err.rstrip().endswith("error: unrecognized arguments: --zzzzzz")


def test_a_failed_build_says_why_and_what_to_run_in_info_and_the_tools(tmp_path, capsys):
    video = scenes_video(tmp_path / "clip.mp4", seconds=30)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    memory = tmp_path / "m"
    assert main(["build", str(video), "--memory", str(memory), "--replay", str(empty), "--embedder", "test:64",
                 "--preset", "short", "-q"]) == 1
    capsys.readouterr()
    command = f"memtools build {video.resolve()} --memory {memory} --video-id clip"

    assert main(["info", "--memory", str(memory)]) == 0
    out = capsys.readouterr().out
    assert f"clip is failed: its build failed: {empty} holds no answer for request " in out
    assert f"run `{command}`: it resumes" in out

    with Memory.open(memory, TestEmbedder(64)) as opened:
        [failure] = failed_videos(opened.path, opened.manifest)
        assert failure.video_id == "clip" and failure.source == str(video.resolve())
        with pytest.raises(ToolError) as error:
            MemoryTools(opened).get_summary("clip")
    text = str(error.value)
    assert f"video 'clip' cannot be read: its build failed: {empty} holds no answer" in text and command in text
    assert "pick another video from list_videos" in text


def test_a_failure_without_a_record_still_names_the_command_and_a_long_reason_is_cut(tmp_path):
    from memtools.store.catalog.failures import build_failure, record_failure

    bare = build_failure(tmp_path, "cam1")  # an older memtools, or a fleet worker elsewhere, recorded nothing
    assert bare.advice(tmp_path) == ("its build failed. Fix that, then run `memtools build SOURCE --memory "
                                     f"{tmp_path} --video-id cam1`: it resumes from the steps already done")
    record_failure(tmp_path / "work" / "cam1", RuntimeError("x" * 1000 + "\nsecond line"), "rtsp://cam/1",
                   follow=True)
    failure = build_failure(tmp_path, "cam1")
    assert failure.reason == "x" * 399 + "…" and failure.follow
    assert failure.command(tmp_path).startswith("memtools build --follow rtsp://cam/1 --memory ")
