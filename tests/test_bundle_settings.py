"""The Claude Desktop bundle degrades, never dies: every combination of its optional settings (a video folder,
a model, a key, a budget; each given, left empty or absent) starts a server that lists its tools and answers a
read tool; without a model add_video is listed and says what to set."""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import sys
import zipfile
from pathlib import Path

import pytest
from mcp import StdioServerParameters

import memtools
from bundle_support import build_bundle
from mcp_support import Client, shared_memory

ROOT = Path(__file__).resolve().parents[1]
SRC = str(Path(memtools.__file__).resolve().parents[1])
OPTIONAL = ("video_folder", "vlm", "api_key", "max_cost")
GIVEN = {"vlm": "openai:gpt-4o-mini", "api_key": "sk-test", "max_cost": "0.50"}  # video_folder: a folder


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    return shared_memory(tmp_path_factory)


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    folder = out / "unpacked"
    with zipfile.ZipFile(build_bundle(out)) as z:
        z.extractall(folder)
    return folder


def _entry(unpacked: Path):
    spec = importlib.util.spec_from_file_location("mcpb_entry", unpacked / "server" / "main.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _launch(unpacked: Path, config: dict[str, str | None]) -> tuple[list[str], dict[str, str]]:
    """The manifest's command line and environment as a host fills them: a value, "" (left empty) or None (absent:
    the host drops the argument it has no value for)."""
    manifest = json.loads((unpacked / "manifest.json").read_text())
    mcp = manifest["server"]["mcp_config"]
    assert mcp["command"] == "uv" and set(OPTIONAL) | {"memory"} == set(manifest["user_config"])

    def fill(value: str) -> str | None:
        value = value.replace("${__dirname}", str(unpacked))
        for key, given in config.items():
            if "${user_config." + key + "}" in value:
                if given is None:
                    return None
                value = value.replace("${user_config." + key + "}", given)
        return value

    args = [a for a in (fill(a) for a in mcp["args"]) if a is not None]
    entry = args.index(manifest["server"]["entry_point"])  # uv run --directory BUNDLE ENTRY OPTIONS (uv's venv: the
    args = [str(unpacked / args[entry]), *args[entry + 1:]]  # release check); this Python and checkout stand for it
    env = {k: v for k, v in ((k, fill(v)) for k, v in mcp.get("env", {}).items()) if v is not None}
    return args, env


def _config(memory: Path, videos: Path, given: set[str], absent: frozenset[str] | set[str] = frozenset()
            ) -> dict[str, str | None]:
    config: dict[str, str | None] = {"memory": str(memory)}
    for key in OPTIONAL:
        value = str(videos) if key == "video_folder" else GIVEN[key]
        config[key] = value if key in given else (None if key in absent else "")
    return config


def test_every_combination_of_empty_or_absent_settings_gives_the_server_valid_options(unpacked, memory, tmp_path):
    """All 81 (given / empty / absent for each optional setting): the entry's options parse, and with a video folder
    they allow writes; without one they leave the memory read-only."""
    from memtools.options import add_serve_arguments, resolve_memory
    from memtools.rerank.arguments import add_reranker_arg

    entry = _entry(unpacked)
    for states in itertools.product(("given", "empty", "absent"), repeat=len(OPTIONAL)):
        chosen = dict(zip(OPTIONAL, states, strict=True))
        config = _config(memory, tmp_path, {k for k, s in chosen.items() if s == "given"},
                         {k for k, s in chosen.items() if s == "absent"})
        args, _ = _launch(unpacked, config)
        options = entry.arguments(args[1:])
        parser = argparse.ArgumentParser()  # memtools-mcp's options (memtools.mcp.run.main)
        add_serve_arguments(parser)
        add_reranker_arg(parser)
        parsed = parser.parse_args(options)  # a bare option or a non-number budget would exit here
        assert resolve_memory(parsed) is None, (chosen, options)
        assert parsed.allow_writes is (chosen["video_folder"] == "given"), (chosen, options)


SUBSETS = [set(c) for n in range(len(OPTIONAL) + 1) for c in itertools.combinations(OPTIONAL, n)]


@pytest.mark.parametrize("given", SUBSETS, ids=lambda g: "+".join(sorted(g)) or "none")
async def test_the_bundle_starts_with_any_optional_settings_left_empty(unpacked, memory, tmp_path, given):
    videos = tmp_path / "videos"
    videos.mkdir()
    args, env = _launch(unpacked, _config(memory, videos, given))
    env = {**os.environ, **env, "PYTHONPATH": SRC}  # this checkout's memtools stands for the installed one
    async with Client(StdioServerParameters(command=sys.executable, args=args, env=env)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        found = await client.call_tool("search_nodes", {"query": "the pan catches fire", "top_k": 2})
        assert not found.is_error and "kitchen/" in found.content[0].text
        if "video_folder" not in given:
            assert "add_video" not in names  # read-only
            return
        assert {"add_video", "get_job", "list_jobs", "estimate_build"} <= names
        estimate = await client.call_tool("estimate_build", {"duration_sec": 60})
        assert not estimate.is_error, estimate.content[0].text
        added = await client.call_tool("add_video", {"source": "missing.mp4"})
        assert added.is_error  # no such file, or no model
        text = added.content[0].text
        if "vlm" in given:
            assert "cannot build videos" not in text and "missing.mp4" in text
        else:  # says what to set, in the extension and from a shell
            assert "Vision model for adding videos" in text and "--vlm" in text, text


async def test_an_unusable_budget_or_a_vanished_folder_leaves_the_memory_read_only(unpacked, memory, tmp_path):
    for folder, budget in ((tmp_path / "gone", "1"), (tmp_path, "a lot")):
        config = _config(memory, folder, {"video_folder", "vlm", "max_cost"}) | {"max_cost": budget}
        args, env = _launch(unpacked, config)
        env = {**os.environ, **env, "PYTHONPATH": SRC}
        async with Client(StdioServerParameters(command=sys.executable, args=args, env=env)) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert "search_nodes" in names and "add_video" not in names
