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


def test_a_memtools_toml_search_table_names_the_reranker_below_the_flag_and_the_variable(
        kitchen_memory_path, tmp_path, monkeypatch, capsys):
    config = tmp_path / "memtools.toml"
    config.write_text('[build]\nconcurrency = 4\n\n[search]\nreranker = "test"\n')
    monkeypatch.delenv("MEMTOOLS_RERANKER")
    query = ["tool", "search_nodes", "--memory", str(kitchen_memory_path), "--query", "pan", "--json"]
    assert main([*query, "--config", str(config)]) == 0
    assert json.loads(capsys.readouterr().out)["reranked_by"] == "test:word-overlap"

    monkeypatch.setenv("MEMTOOLS_RERANKER", "none")  # the variable wins over the file
    assert main([*query, "--config", str(config)]) == 0
    assert json.loads(capsys.readouterr().out)["reranked_by"] == ""
    monkeypatch.delenv("MEMTOOLS_RERANKER")
    assert main([*query, "--reranker", "none", "--config", str(config)]) == 0  # and so does the flag
    assert json.loads(capsys.readouterr().out)["reranked_by"] == ""


@pytest.mark.parametrize(("text", "says"), [
    ('[search]\nreranker = 5\n', "[search] reranker must be a string"),
    ('[search]\nreranker = "cohere:x"\n', "unknown reranker spec 'cohere:x'"),
    ('[search]\nrerankr = "test"\n', "unknown search setting(s) rerankr in [search]; valid: reranker"),
    ('[search\n', "is not valid TOML"),
])
def test_a_bad_search_table_exits_2_naming_the_file_and_the_problem(kitchen_memory_path, tmp_path, text, says,
                                                                    capsys):
    config = tmp_path / "memtools.toml"
    config.write_text(text)
    with pytest.raises(SystemExit) as exit_:
        main(["tool", "search_nodes", "--memory", str(kitchen_memory_path), "--query", "pan", "--config", str(config)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"--config {config}:" in err and says in err
