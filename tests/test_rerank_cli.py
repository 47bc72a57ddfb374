"""``--reranker`` on the command line: checked at parse time, used by the search tools, named by info."""

from __future__ import annotations

import json

import pytest

from memtools.cli import main


@pytest.fixture(autouse=True)
def _restore_reranker_env(monkeypatch):
    monkeypatch.setenv("MEMTOOLS_RERANKER", "none")  # the flag sets the variable; monkeypatch puts it back


def test_tool_reranks_with_the_flag(kitchen_memory_path, capsys):
    assert main(["tool", "search_nodes", "--memory", str(kitchen_memory_path), "--query", "pan catches fire",
                 "--top-k", "2", "--reranker", "test"]) == 0
    assert "reranked by test:word-overlap:" in capsys.readouterr().out
    assert main(["tool", "search_entities", "--memory", str(kitchen_memory_path), "--query", "cook",
                 "--reranker", "test", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["reranked_by"] == "test:word-overlap"


def test_without_the_flag_or_variable_nothing_is_reranked(kitchen_memory_path, capsys):
    assert main(["tool", "search_nodes", "--memory", str(kitchen_memory_path), "--query", "pan", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["reranked_by"] == ""


def test_a_bad_spec_exits_2_saying_which_forms_exist(kitchen_memory_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["tool", "search_nodes", "--memory", str(kitchen_memory_path), "--query", "pan",
              "--reranker", "cohere:rerank-v3.5"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--reranker: unknown reranker spec 'cohere:rerank-v3.5'" in err and "http:MODEL@URL" in err


def test_info_names_the_reranker(kitchen_memory_path, capsys):
    assert main(["info", "--memory", str(kitchen_memory_path)]) == 0
    assert "search: no reranker" in capsys.readouterr().out
    spec = "http:bge-reranker@http://gpu:8000/v1"
    assert main(["info", "--memory", str(kitchen_memory_path), "--reranker", spec]) == 0
    assert "search: reranker http:bge-reranker@http://gpu:8000/v1 ($MEMTOOLS_RERANKER)" in capsys.readouterr().out


def test_serve_and_ask_take_the_flag():
    from memtools.cli import parser

    cli = parser()
    assert cli.parse_args(["serve", "--memory", "m", "--reranker", "tei:http://gpu:8080"]).reranker == \
        "tei:http://gpu:8080"
    assert cli.parse_args(["ask", "--memory", "m", "q", "--model", "openai:x", "--reranker", "test"]).reranker \
        == "test"
