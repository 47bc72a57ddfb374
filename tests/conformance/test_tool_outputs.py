"""Every tool renders the same golden text on every graph engine (the goldens of the main suite)."""

from __future__ import annotations

import pytest

from library_support import CALLS as LIBRARY_CALLS
from memtools.store import Memory
from memtools.tools import TOOL_SPECS, MemoryTools
from test_speech_tools import CALLS as SPEECH_CALLS
from test_tools_golden import CALLS as KITCHEN_CALLS
from test_tools_golden import assert_golden

FRAME_CALLS = {
    "search_frames": lambda t: t.search_frames(query="a red square", top_k=3),
    "search_frames_like": lambda t: t.search_frames(frame_id="garden/kf_0003", video_id="kitchen", start_sec=0,
                                                    end_sec=200),
    "search_frames_none": lambda t: t.search_frames(query="red", video_id="kitchen", start_sec=10, end_sec=20),
}
SUITES = {"kitchen_path": KITCHEN_CALLS, "speech_path": SPEECH_CALLS, "colour_path": FRAME_CALLS,
          "days_path": LIBRARY_CALLS}
CASES = [(memory, name) for memory, calls in SUITES.items() for name in sorted(calls)]


@pytest.mark.parametrize(("memory", "name"), CASES)
def test_every_tool_renders_its_golden_text(request, engine, memory, name):
    with Memory.open(request.getfixturevalue(memory)) as opened:
        assert opened.manifest.graph_engine == engine and opened.graph_file.is_file()
        tools = MemoryTools(opened)
        assert_golden(name, SUITES[memory][name](tools).render())


def test_the_golden_calls_cover_every_tool_in_the_catalogue():
    called = {name for calls in SUITES.values() for name in calls}
    missing = [tool for tool in TOOL_SPECS if not any(c == tool or c.startswith(tool + "_") for c in called)]
    assert missing == [], f"add a golden call for {missing} to the conformance suite"
