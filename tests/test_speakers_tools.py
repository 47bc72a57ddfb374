"""Who spoke, in the tools: get_transcript(speaker=...) keeps one speaker's lines (any case), pages
with the speaker kept in the next call, and says what to do when nobody by that name speaks."""

from __future__ import annotations

import pytest

from memtools.embed.testing import TestEmbedder
from memtools.store import Memory
from memtools.testing import kitchen_graph, with_speech
from memtools.tools import TOOL_SPECS, MemoryTools
from memtools.tools.invoke import invoke
from test_speech_tools import _lecture


@pytest.fixture(scope="module")
def tools(tmp_path_factory):
    path = tmp_path_factory.mktemp("speakers") / "memory"
    with Memory.create(path, TestEmbedder(64)) as memory:
        memory.write_video(with_speech(kitchen_graph()))
        memory.write_video(_lecture(150))
        yield MemoryTools(memory)


def test_one_speakers_lines(tools):
    everyone = tools.get_transcript("kitchen", 0, 360)
    cook = tools.get_transcript("kitchen", 0, 360, speaker="Cook")
    assert len(everyone.lines) == 5 and [u.speaker for u in cook.lines] == ["cook"] * 4
    text = cook.render()
    assert text.startswith("Transcript of kitchen [0:00:00-0:06:00], Cook only: 4 utterance(s) by cook")
    assert "Whoa" not in text
    assert everyone.render().startswith("Transcript of kitchen [0:00:00-0:06:00]: 5 utterance(s) by cook\n")


def test_a_speaker_who_never_speaks_is_told_apart_from_no_speech(tools):
    text = tools.get_transcript("kitchen", 0, 360, speaker="S7").render()
    assert text.startswith("No speech by 'S7' in [0:00:00-0:06:00] of video 'kitchen'.")
    assert "get_transcript without speaker" in text


def test_pages_of_one_speaker_keep_the_speaker(tools):
    first = tools.get_transcript("lecture", 0, 1500, speaker="lecturer")
    assert all(u.speaker == "lecturer" for u in first.lines) and first.next_start_sec is not None
    assert f"get_transcript(video_id='lecture', start_sec={first.next_start_sec:g}, end_sec=1500, " \
           "speaker='lecturer')" in first.render()
    rest = tools.get_transcript("lecture", first.next_start_sec, 1500, speaker="lecturer")
    assert len(first.lines) + len(rest.lines) == 75 and rest.next_start_sec is None


def test_the_agent_facing_tool_takes_a_speaker(tools):
    outcome = invoke(TOOL_SPECS["get_transcript"], tools, {"video_id": "kitchen", "start_sec": 0, "end_sec": 360,
                                                            "speaker": "cook"})
    assert "cook only: 4 utterance(s)" in outcome.text


def test_the_prompts_say_how_to_ask_by_speaker():
    from memtools.agent.prompts import _STRATEGY as ORA_STRATEGY
    from memtools.agent.prompts import tool_signature
    from memtools.mcp.prompts import INSTRUCTIONS

    assert "get_transcript(..., speaker='S2')" in INSTRUCTIONS
    assert "get_transcript with speaker" in ORA_STRATEGY
    assert "speaker" in tool_signature("get_transcript")


def test_the_page_of_a_macro_event_lists_who_said_what(tmp_path):
    from memtools.show.collect import video_view

    with Memory.create(tmp_path / "m", TestEmbedder(16)) as memory:
        memory.write_video(with_speech(kitchen_graph()))
        view = video_view(MemoryTools(memory), "kitchen")
    said = view["subgraphs"]["kitchen/macro_0002"]["speech"]
    assert [row["text"] for row in said] == ["“Whoa, the pan is on fire!”",
                                            "cook: “Never use water on an oil fire: cover it with a lid.”"]
    assert said[1]["t0"] == 263.0
