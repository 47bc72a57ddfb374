"""Pin the public API: what users import must not vanish or grow by accident."""

from __future__ import annotations

import subprocess
import sys

import pytest

import memtools
import memtools.errors
import memtools.store
import memtools.tools


def test_top_level_exports():
    assert sorted(memtools.__all__) == sorted([
        "SCHEMA_VERSION", "TOOL_SPECS", "Memory", "MemoryTools", "MemtoolsError", "SearchConfig", "ToolError",
        "VideoGraph", "__version__"])


def test_tool_catalogue():
    assert list(memtools.TOOL_SPECS) == [
        "list_videos", "get_summary", "get_super_events", "get_macro_events", "get_subgraph", "search_nodes",
        "search_graph", "search_entities", "get_entity_timeline", "get_event_chain", "search_by_time", "get_transcript",
        "get_relations", "inspect_frames", "search_frames"]
    for spec in memtools.TOOL_SPECS.values():
        assert callable(getattr(memtools.MemoryTools, spec.name))


def test_error_tree():
    assert set(memtools.errors.__all__) == {
        "BuildError", "ConfigError", "EmbeddingError", "ImportFormatError", "IncompatibleMemory", "MemoryBusy",
        "MemoryDamaged",
        "MemoryError_", "MemoryNotFound", "MemtoolsError", "OutOfResources", "PerceptionError", "SpeechError",
        "StoreError", "ToolError",
        "VideoError", "ToolBusy", "ToolErrorKind", "ToolNotFound"}
    assert not issubclass(memtools.ToolError, memtools.MemtoolsError)
    assert issubclass(memtools.errors.ToolBusy, memtools.ToolError)
    assert issubclass(memtools.errors.ToolNotFound, memtools.ToolError)


def test_importing_memtools_does_not_import_heavy_front_ends():
    code = ("import sys, memtools; heavy = [m for m in ('torch', 'transformers', 'langgraph', 'mcp', 'cv2') "
            "if m in sys.modules]; print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_the_fakes_are_gathered_in_memtools_testing():
    import memtools.testing as testing
    from memtools.agent.testing import ScriptedChatModel
    from memtools.embed.testing import TestEmbedder
    from memtools.perception.testing import FunctionVLM

    assert sorted(testing.__all__) == sorted([
        "KITCHEN_SPEECH", "FunctionChatModel", "FunctionRecognizer", "FunctionVLM", "ReplayVLM", "ScriptedChatModel",
        "ScriptedEndpoint", "ScriptedPerception", "TestEmbedder", "TestImageEmbedder", "block_model_requests",
        "kitchen_graph", "scripted_vlm", "text_reply", "tool_call", "with_speech"])
    assert set(testing.FAKES) <= set(testing.__all__) and set(testing.FAKES) <= set(dir(testing))
    for name in testing.FAKES:  # each is the real object from its home module, documented here
        assert getattr(testing, name) is getattr(sys.modules[testing.FAKES[name]], name)
        assert f"``{name}(" in testing.__doc__, f"memtools.testing's docstring should say what {name} is"
    assert (testing.TestEmbedder, testing.ScriptedChatModel, testing.FunctionVLM) == (
        TestEmbedder, ScriptedChatModel, FunctionVLM)
    with pytest.raises(AttributeError, match="no attribute 'RealModel'"):
        testing.RealModel  # noqa: B018 - the attribute access is the test


def test_importing_memtools_testing_stays_light():
    code = ("import sys, memtools.testing; heavy = [m for m in ('torch', 'langgraph', 'langchain_core', 'ray') "
            "if m in sys.modules]; print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_a_command_that_searches_nothing_does_not_import_pyarrow_compute():
    # pyarrow.compute costs 40-80 ms of a cold `memtools tool get_summary` (issue 34); only ranking a
    # search's rows and holding them use it
    code = "import sys, memtools, memtools.cli; print('pyarrow.compute' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"
