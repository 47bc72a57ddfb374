"""The ORA graph's wiring (a Mermaid snapshot), its public API, and the ``langgraph dev`` entry."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

import memtools.agent as agent
from agent_helpers import kitchen_memory
from memtools.agent import build_ora_graph
from memtools.agent.deploy import graph_from_env
from memtools.agent.testing import ScriptedChatModel
from memtools.errors import ConfigError

HERE = Path(__file__).parent
SNAPSHOT = HERE / "snapshots" / "ora_graph.mmd"
ROOT = HERE.parent


@pytest.fixture(scope="module")
def memory_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("graph") / "mem"
    kitchen_memory(folder).close()
    return folder


def test_mermaid_snapshot(memory_dir):
    """Set UPDATE_SNAPSHOTS=1 to rewrite the file after an intended change of the wiring."""
    from memtools.store import Memory

    with Memory.open(memory_dir) as memory:
        graph = build_ora_graph(memory, ScriptedChatModel(responses=[]))
        drawn = graph.get_graph().draw_mermaid()
        assert graph.checkpointer is None  # no checkpointer compiled in
    if os.environ.get("UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(drawn)
    assert drawn == SNAPSHOT.read_text()


def test_public_api_is_pinned():
    assert sorted(agent.__all__) == sorted([
        "Clue", "Exploration", "ORAContext", "ORAInput", "ORAOutput", "ORAState", "ReplyError", "ToolCall", "act",
        "answer", "build_ora_graph", "chat_model_from_spec", "format_trace", "observe", "ora_state_graph",
        "reason", "route_after_observe", "route_after_reason", "split_options", "trajectory"])
    assert set(agent.ORAInput.__annotations__) == {"question", "options", "scope"}  # no gold field


def _load_ora_module():
    spec = importlib.util.spec_from_file_location("memtools_graphs_ora", ROOT / "graphs" / "ora.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_langgraph_entry_imports_without_env_and_explains_what_is_missing(monkeypatch):
    for var in ("MEMTOOLS_MEMORY", "MEMTOOLS_MODEL"):
        monkeypatch.delenv(var, raising=False)
    module = _load_ora_module()
    with pytest.raises(ConfigError, match="MEMTOOLS_MEMORY and MEMTOOLS_MODEL"):
        module.make_graph({})
    with pytest.raises(ConfigError, match="MEMTOOLS_MODEL"):
        graph_from_env({"MEMTOOLS_MEMORY": "x"})
    import json

    config = json.loads((ROOT / "graphs" / "langgraph.json").read_text())
    assert config["graphs"]["memtools_ora"] == "./ora.py:make_graph"


def test_langgraph_entry_builds_the_graph_from_env(memory_dir, monkeypatch):
    pytest.importorskip("langchain_openai")
    monkeypatch.setenv("MEMTOOLS_MEMORY", str(memory_dir))
    monkeypatch.setenv("MEMTOOLS_MODEL", "openai:test-model")
    monkeypatch.setenv("MEMTOOLS_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("MEMTOOLS_MAX_ROUNDS", "5")
    module = _load_ora_module()
    graph = module.make_graph({})
    assert graph is module.graph  # built once per configuration
    assert graph.checkpointer is None and set(graph.nodes) >= {"observe", "reason", "act", "answer"}
    with pytest.raises(ConfigError, match="integer"):
        graph_from_env({"MEMTOOLS_MEMORY": "m", "MEMTOOLS_MODEL": "openai:x", "MEMTOOLS_MAX_ROUNDS": "many"})


def test_model_specs():
    pytest.importorskip("langchain_openai")
    from memtools.agent import chat_model_from_spec

    model = chat_model_from_spec("openai:my-model", base_url="http://127.0.0.1:9/v1", api_key_env="NO_SUCH_VAR_X")
    assert model.model_name == "my-model"
    for bad in ("gpt-4o", "anthropic:claude"):
        with pytest.raises(ConfigError):
            chat_model_from_spec(bad)
    with pytest.raises(ConfigError, match="NO_SUCH_VAR_X"):
        chat_model_from_spec("openai:m", api_key_env="NO_SUCH_VAR_X")
