"""Command-line parsing: --memory anywhere (or $MEMTOOLS_MEMORY), signed and non-finite numbers,
a description on every subcommand, and one-line errors for wrong targets and arguments."""

from __future__ import annotations

import argparse

import pytest

from memtools.cli import main, parser
from memtools.store import Memory
from memtools.tools import TOOL_SPECS, MemoryTools


def err_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err.strip()


@pytest.mark.parametrize("argv", [
    ["tool", "get_summary", "--memory", "{m}"],
    ["tool", "--memory", "{m}", "get_summary"],
    ["--memory", "{m}", "tool", "get_summary"],
    ["-m", "{m}", "tool", "get_summary", "--video-id", "kitchen"],
])
def test_memory_before_or_after_the_subcommand(kitchen_memory_path, capsys, argv):
    assert main([a.format(m=kitchen_memory_path) for a in argv]) == 0
    assert "kitchen/super_01" in capsys.readouterr().out


def test_memory_from_the_environment_and_a_clear_error_without_one(kitchen_memory_path, capsys, monkeypatch):
    monkeypatch.delenv("MEMTOOLS_MEMORY", raising=False)
    assert main(["info"]) == 2
    assert err_line(capsys) == ("memtools info: error: the memory folder is missing: pass --memory DIR "
                                "(before or after the command) or set MEMTOOLS_MEMORY")
    monkeypatch.setenv("MEMTOOLS_MEMORY", str(kitchen_memory_path))
    assert main(["info"]) == 0
    assert "kitchen [0:06:00]" in capsys.readouterr().out
    assert main(["info", "--memory", str(kitchen_memory_path / "elsewhere")]) == 1  # the flag beats the variable
    assert "no memtools memory" in err_line(capsys)


@pytest.mark.parametrize(("value", "message"), [
    ("-inf", '--start-sec must be a finite number, not "-inf"'),
    ("nan", '--start-sec must be a finite number, not "nan"'),
    ("-5", '--start-sec should be greater than or equal to 0; you passed "-5"'),
    ("-1e3", '--start-sec should be greater than or equal to 0; you passed "-1e3"'),
    ("soon", '--start-sec must be a number, not "soon"'),
])
def test_signed_and_non_finite_numbers_are_read_as_values_and_refused_clearly(kitchen_memory_path, capsys,
                                                                              value, message):
    assert main(["tool", "search_by_time", "--memory", str(kitchen_memory_path), "--start-sec", value,
                 "--end-sec", "60"]) == 2
    assert err_line(capsys) == f"memtools tool search_by_time: error: {message}"


def test_every_subcommand_has_a_description():
    def commands(p: argparse.ArgumentParser, path: str):
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    yield f"{path} {name}", child
                    yield from commands(child, f"{path} {name}")

    found = dict(commands(parser(), "memtools"))
    assert {"memtools info", "memtools tool", "memtools serve", "memtools tool get_summary"} <= set(found)
    assert len([c for c in found if c.startswith("memtools tool ")]) == len(TOOL_SPECS)
    assert not [name for name, p in found.items() if not p.description], "subcommands without a description"


def test_wrong_targets_are_one_line_errors(tmp_path, capsys):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a memory")
    srt = tmp_path / "talk.srt"
    srt.write_text("1\n00:00:01,000 --> 00:00:03,000\nHello\n", encoding="utf-8")
    assert main(["info", "--memory", str(a_file)]) == 1
    assert "is a file, not a memory folder" in err_line(capsys)
    assert main(["tool", "list_videos", "--memory", str(tmp_path / "missing")]) == 1
    assert "no memtools memory at" in err_line(capsys)
    assert main(["import-captions", str(srt), "--memory", str(a_file), "--embedder", "test:8"]) == 1
    assert "is a file, not a memory folder" in err_line(capsys)
    assert main(["import-captions", str(srt), "--memory", str(a_file / "sub"), "--embedder", "test:8"]) == 1
    assert err_line(capsys).startswith("memtools import-captions: error: cannot create a memory at ")
    assert a_file.read_text() == "not a memory"  # nothing lost


def test_tool_errors_read_as_in_every_other_front_end(kitchen_memory_path, capsys):
    with Memory.open(kitchen_memory_path) as memory:
        outcome = TOOL_SPECS["get_subgraph"].invoke(MemoryTools(memory), {"macro_id": "kitchen/macro_0099"})
    assert outcome.error == "not-found" and outcome.text == f"Tool error from get_subgraph: {outcome.message}"
    assert main(["tool", "get_subgraph", "-m", str(kitchen_memory_path), "--macro-id", "kitchen/macro_0099"]) == 1
    assert err_line(capsys) == f"memtools tool get_subgraph: error: {outcome.message}"


def test_memtools_mcp_without_a_memory_is_a_usage_error(capsys, monkeypatch):
    from memtools.mcp import main as mcp_main

    monkeypatch.delenv("MEMTOOLS_MEMORY", raising=False)
    with pytest.raises(SystemExit) as done:
        mcp_main(["--http"])
    assert done.value.code == 2
    assert "memtools-mcp: error: the memory folder is missing" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["import-captions", "a.srt", "--memory", "m", "--batch-size", "0"],
     "argument --batch-size: must be a whole number of 1 or more, not 0"),
    (["import-captions", "a.srt", "--memory", "m", "--batch-size", "-5"],
     "argument --batch-size: must be a whole number of 1 or more, not -5"),
    (["import-captions", "a.srt", "--memory", "m", "--batch-size", "many"],
     "argument --batch-size: must be a whole number of 1 or more, not 'many'"),
    (["import-captions", "a.srt", "--memory", "m", "--video-id", ""], "argument --video-id: '' is empty; a video id"),
    (["import-captions", "a.srt", "--memory", "m", "--title", " "], "argument --title: must not be empty"),
    (["import-captions", "a.srt", "--memory", ""], "argument --memory/-m: must name a folder, not be empty"),
    (["--memory", "", "info"], "argument --memory/-m: must name a folder, not be empty"),
    (["show", "--memory", "m", "--out", ""], "argument --out: must name a folder, not be empty"),
    (["migrate", "--memory", "m", "--engine", "kuzu", "--verify-videos", "-1"],
     "argument --verify-videos: must be a whole number of 0 or more, not -1"),
])
def test_argument_values_are_checked_not_coerced(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as done:
        main(argv)
    err = capsys.readouterr().err
    assert done.value.code == 2 and message in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # nothing written into the current folder


def test_a_value_starting_with_a_dash_follows_its_flag():
    from memtools.arg_types import join_dash_values

    args = parser().parse_args(["tool", "get_summary", "--memory", "m", "--video-id", "-ErPSunMfcs"])
    assert args.video_id == "-ErPSunMfcs"
    args = parser().parse_args(["-m", "m", "tool", "get_summary", "--video-id", "-mX", "--json"])
    assert (args.video_id, args.json, str(args.memory)) == ("-mX", True, "m")  # -mX is not -m X
    args = parser().parse_args(["import-captions", "a.srt", "-m", "m", "--video-id", "-ErPSunMfcs"])
    assert args.video_id == "-ErPSunMfcs"
    assert parser().parse_args(["tool", "get_summary", "-m", "m", "--video-id=--x"]).video_id == "--x"
    p = argparse.ArgumentParser()
    p.add_argument("--name")
    p.add_argument("--flag", action="store_true")
    p.add_argument("-q")
    # a known option, a flag taking no value, "--" and numbers are left alone
    assert join_dash_values(p, ["--name", "--flag", "--flag", "-x", "--name", "-q", "--name", "-5", "--", "--name",
                                "-x"]) == ["--name", "--flag", "--flag", "-x", "--name", "-q", "--name", "-5", "--",
                                           "--name", "-x"]
    assert join_dash_values(p, ["--name", "-x", "-q", "1"]) == ["--name=-x", "-q", "1"]
