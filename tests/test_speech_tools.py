"""Speech in the tools: get_transcript (bounded, with the call that gets more), and utterances in
get_subgraph, search_by_time, search_nodes and get_relations, rendered against golden files."""

from __future__ import annotations

import re

import pytest

from memtools.embed.testing import TestEmbedder
from memtools.errors import ToolError
from memtools.schema import MacroEvent, Speech, SuperEvent, Video, VideoGraph, macro_id, speech_id, super_id
from memtools.store import Memory
from memtools.testing import kitchen_graph, with_speech
from memtools.tools import TOOL_SPECS, MemoryTools
from memtools.tools.transcript import TRANSCRIPT_LINES
from test_tools_golden import assert_golden


@pytest.fixture(scope="module")
def tools(tmp_path_factory):
    path = tmp_path_factory.mktemp("speech") / "memory"
    with Memory.create(path, TestEmbedder(64)) as memory:
        memory.write_video(with_speech(kitchen_graph()))
        memory.write_video(_lecture(150))
        yield MemoryTools(memory)


def _lecture(n: int) -> VideoGraph:
    """A 25-minute lecture: one macro event per 5 minutes, an utterance every 10 s."""
    v = "lecture"
    s = super_id(v, 0)
    macros = [MacroEvent(id=macro_id(v, k), video_id=v, super_id=s, ordinal=k, label=f"Part {k + 1}",
                         t_start=300.0 * k, t_end=300.0 * (k + 1)) for k in range(5)]
    speech = [Speech(id=speech_id(macros[i * 10 // 300].id, i % 30 + 1), video_id=v, macro_id=macros[i * 10 // 300].id,
                     t_start=10.0 * i, t_end=10.0 * i + 8.0, text=f"Sentence number {i} of the lecture.",
                     speaker="lecturer" if i % 2 else None) for i in range(n)]
    return VideoGraph(video=Video(id=v, title="A lecture", duration=1500.0),
                      supers=[SuperEvent(id=s, video_id=v, ordinal=0, label="The lecture", t_start=0, t_end=1500)],
                      macros=macros, speech=speech)


CALLS = {
    "get_transcript": lambda t: t.get_transcript("kitchen", 0, 360),
    "get_transcript_as_of": lambda t: t.get_transcript("kitchen", 100, 300, as_of_sec=250),
    "get_subgraph_speech": lambda t: t.get_subgraph("kitchen/macro_0002"),
    "search_by_time_speech": lambda t: t.search_by_time(0, 250, video_id="kitchen"),
    "search_nodes_speech": lambda t: t.search_nodes("never put water on an oil fire", node_types=["speech"],
                                                    video_id="kitchen", top_k=2),
    "get_relations_speech": lambda t: t.get_relations("kitchen/macro_0002/utt_002"),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_speech_renders_match_golden(tools, name):
    assert_golden(name, CALLS[name](tools).render())


def test_a_long_transcript_comes_in_pages_and_the_named_call_gets_the_rest(tools):
    seen: list[str] = []
    call = "get_transcript(video_id='lecture', start_sec=0, end_sec=1500)"
    pages = 0
    while call:
        args = dict(re.findall(r"(\w+)=([^,)]+)", call))
        page = tools.get_transcript(args["video_id"].strip("'"), float(args["start_sec"]), float(args["end_sec"]))
        text = page.render()
        assert len(page.lines) <= TRANSCRIPT_LINES and len(text) < 8000
        seen += [line.text for line in page.lines]
        match = re.search(r"Next page: (get_transcript\(.*?\))\.", text)
        call = match.group(1) if match else ""
        pages += 1
    assert pages == 4
    assert seen == [f"Sentence number {i} of the lecture." for i in range(150)]  # all, in order, none twice


def test_the_window_and_as_of_select_what_was_said(tools):
    window = tools.get_transcript("lecture", 95, 125)
    assert [line.text for line in window.lines] == [f"Sentence number {i} of the lecture." for i in (9, 10, 11, 12)]
    last = tools.get_transcript("lecture", 95, 125, as_of_sec=110).lines[-1]
    assert last.text == "Sentence number 10 of the lecture."
    silence = tools.get_transcript("kitchen", 17, 39)
    assert not silence.lines and silence.render().startswith("No speech in [0:00:17-0:00:39] of video 'kitchen'")


@pytest.mark.parametrize("call, message", [
    (lambda t: t.get_transcript("kitchen", 50, 20), "end_sec greater than start_sec"),
    (lambda t: t.get_transcript("kitchen", 400, 500), "only 0:06:00 long"),
    (lambda t: t.get_transcript("kitchen", 200, 300, as_of_sec=100), "after as_of_sec"),
    (lambda t: t.get_transcript("kitchn", 0, 10), "no video 'kitchn'"),
    (lambda t: t.get_transcript(None, 0, 10), "holds 2 videos"),
    (lambda t: t.search_nodes("fire", node_types=["speach"]), "unknown node_types ['speach']"),
])
def test_mistakes_are_tool_errors_that_say_what_to_do(tools, call, message):
    with pytest.raises(ToolError, match=re.escape(message)):
        call(tools)


def test_the_catalogue_validates_get_transcript_arguments(tools):
    spec = TOOL_SPECS["get_transcript"]
    assert spec.group == "search"
    outcome = spec.invoke(tools, {"video_id": "kitchen", "start_sec": 240, "end_sec": 300})
    assert outcome.ok and "Never use water on an oil fire" in outcome.text
    bad = spec.invoke(tools, {"video_id": "kitchen", "start_sec": "soon", "end_sec": 300})
    assert not bad.ok and "start_sec" in bad.text
