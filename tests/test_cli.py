"""The memtools command line on a small real memory."""

from __future__ import annotations

import json

from memtools.cli import main


def test_info_lists_videos_counts_and_embedder(kitchen_memory_path, capsys):
    assert main(["info", "--memory", str(kitchen_memory_path)]) == 0
    out = capsys.readouterr().out
    assert "embedder test:hash-64 (dim 64)" in out
    assert "1 video(s)" in out and "3 macro" in out and "kitchen [0:06:00]" in out


def test_tool_prints_the_rendered_result(kitchen_memory_path, capsys):
    assert main(["tool", "get_subgraph", "--memory", str(kitchen_memory_path),
                 "--macro-id", "kitchen/macro_0002"]) == 0
    out = capsys.readouterr().out
    assert "evt_001 -CAUSES-> evt_002" in out


def test_tool_json_and_list_arguments(kitchen_memory_path, capsys):
    assert main(["tool", "search_nodes", "--memory", str(kitchen_memory_path), "--query", "lid",
                 "--node-types", "entity", "event", "--top-k", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["hits"]) == 2 and {h["kind"] for h in data["hits"]} <= {"entity", "event"}


def test_tool_argument_errors_exit_2_with_the_flag_named(kitchen_memory_path, capsys):
    assert main(["tool", "search_nodes", "--memory", str(kitchen_memory_path), "--query", "x",
                 "--top-k", "500"]) == 2
    assert "--top-k" in capsys.readouterr().err


def test_tool_errors_exit_1_with_the_model_facing_message(kitchen_memory_path, capsys):
    assert main(["tool", "get_subgraph", "--memory", str(kitchen_memory_path), "--macro-id", "nope"]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_missing_memory_is_a_clear_error(tmp_path, capsys):
    assert main(["info", "--memory", str(tmp_path / "none")]) == 1
    assert "no memtools memory" in capsys.readouterr().err


def test_import_captions_from_srt(tmp_path, capsys):
    srt = tmp_path / "My Talk.srt"
    srt.write_text("1\n00:00:01,000 --> 00:00:03,000\nHello world\n\n2\n00:00:04,000 --> 00:00:06,000\n"
                   "We talk about graphs\n", encoding="utf-8")
    memory = tmp_path / "m"
    assert main(["import-captions", str(srt), "--memory", str(memory), "--embedder", "test:32"]) == 0
    assert "Imported 1 video(s)" in capsys.readouterr().out
    assert main(["tool", "search_nodes", "--memory", str(memory), "--query", "graphs", "--top-k", "1"]) == 0
    assert "My_Talk/macro_0000" in capsys.readouterr().out
