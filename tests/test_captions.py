"""Caption import: subtitle / dense-caption readers, grouping into the hierarchy, and search on real data."""

from __future__ import annotations

import json

import pytest

from memtools.errors import ImportFormatError
from memtools.importers.captions import (
    Caption,
    CaptionedVideo,
    CaptionGrouping,
    graph_from_captions,
    read_dense_captions,
    read_subtitles,
)

SRT = """1
00:00:01,000 --> 00:00:04,500
Welcome to the <i>kitchen</i>.

2
00:00:05,000 --> 00:00:09,000
First we chop the onions
into thin rings.

3
00:02:30,250 --> 00:02:40,000
Now the oil is hot.
"""

VTT = """WEBVTT

NOTE a comment block

00:01.000 --> 00:04.000 align:start
Hello there

intro
01:00:00.000 --> 01:00:02.500
One hour later
"""


def test_srt_cues_become_captions_with_tags_stripped(tmp_path):
    path = tmp_path / "talk.srt"
    path.write_text(SRT, encoding="utf-8")
    caps = read_subtitles(path)
    assert caps == [Caption(1.0, 4.5, "Welcome to the kitchen."),
                    Caption(5.0, 9.0, "First we chop the onions into thin rings."),
                    Caption(150.25, 160.0, "Now the oil is hot.")]


def test_vtt_with_header_notes_settings_and_hours(tmp_path):
    path = tmp_path / "clip.vtt"
    path.write_text(VTT, encoding="utf-8")
    assert read_subtitles(path) == [Caption(1.0, 4.0, "Hello there"), Caption(3600.0, 3602.5, "One hour later")]


@pytest.mark.parametrize("text", ["", "just some prose\nwithout cues\n", "1\n00:00:xx,000 --> 00:00:02,000\nhi\n"])
def test_bad_subtitles_raise_a_clear_error(tmp_path, text):
    path = tmp_path / "bad.srt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ImportFormatError, match="bad.srt"):
        read_subtitles(path)


def test_dense_caption_json_and_its_errors(tmp_path):
    good = tmp_path / "caps.json"
    good.write_text(json.dumps({"-v_1": {"duration": 30, "timestamps": [[0, 5], [6, 9]], "sentences": ["a", "b"]}}))
    [video] = read_dense_captions(good)
    assert video.video_id == "-v_1" and video.duration == 30 and len(video.captions) == 2  # the key, unchanged
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"v": {"duration": 30, "timestamps": [[0, 5]], "sentences": ["a", "b"]}}))
    with pytest.raises(ImportFormatError, match="1 timestamps but 2 sentences"):
        list(read_dense_captions(bad))


def test_grouping_builds_macros_supers_and_a_root():
    caps = [Caption(i * 20.0, i * 20.0 + 15, f"step {i}") for i in range(10)]
    caps.append(Caption(400, 410, "after a long pause"))
    graph = graph_from_captions(CaptionedVideo("v", caps, duration=420.0, title="Demo"),
                                CaptionGrouping(macro_max_sec=60, macro_max_captions=3, super_max_macros=2))
    assert [len([e for e in graph.events if e.macro_id == m.id]) for m in graph.macros] == [3, 3, 3, 1, 1]
    assert [m.super_id.rsplit("/", 1)[1] for m in graph.macros] == ["super_00", "super_00", "super_01",
                                                                    "super_01", "super_02"]
    assert graph.video.duration == 420.0 and graph.video.title == "Demo"
    assert all(m.t_start <= e.t_start and e.t_end <= m.t_end
               for m in graph.macros for e in graph.events if e.macro_id == m.id)
    labels = {(e.label, e.category.value) for e in graph.edges}
    assert labels == {("BEFORE", "temporal"), ("BEFORE", "progression")}


def test_captions_outside_the_duration_are_clipped():
    graph = graph_from_captions(CaptionedVideo("v", [Caption(5, 50, "late")], duration=30.0))
    assert graph.video.duration == 50.0  # the captions prove the video is at least this long
    assert (graph.events[0].t_start, graph.events[0].t_end) == (5.0, 50.0)


@pytest.mark.slow
def test_youcook2_import_finds_the_onion_steps(tmp_path):
    """Acceptance: a real YouCook2 val import answers a paraphrased query with matching steps."""
    from conftest import SHARED_DATA
    from memtools.cli import main

    source = SHARED_DATA / "youcook2" / "val.json"
    if not source.exists():
        pytest.skip("shared data not available")
    subset = dict(list(json.loads(source.read_text()).items())[:60])
    path = tmp_path / "val60.json"
    path.write_text(json.dumps(subset))
    memory = tmp_path / "cooking"
    assert main(["import-captions", str(path), "--memory", str(memory)]) == 0
    from memtools.store import Memory
    from memtools.tools import MemoryTools

    with Memory.open(memory) as m:
        tools = MemoryTools(m)
        result = tools.search_nodes("add the chopped onions to the pan", top_k=5)
        assert sum("onion" in h.text.lower() for h in result.hits) >= 3
        top = result.hits[0]
        steps = subset[top.video_id]
        assert any(abs(s - top.t_start) < 1 and "onion" in t.lower()
                   for (s, _), t in zip(steps["timestamps"], steps["sentences"], strict=False)) or top.kind != "event"
        assert tools.get_summary(top.video_id).supers
        assert tools.get_subgraph(top.macro_id or top.id).events
        assert tools.search_by_time(0, 60, video_id=top.video_id).matches
        assert tools.get_relations(result.hits[0].id).incoming


def test_the_bundled_week_answers_across_days_and_entity_tools_say_captions_hold_none(tmp_path):
    """examples/sample/week.json (the quickstart's days): an activity across days is one call, and the
    entity tools on a memory of captions say it holds events only, not that it is old."""
    from pathlib import Path

    from memtools.cli import main
    from memtools.errors import ToolError
    from memtools.store import Memory
    from memtools.tools import MemoryTools

    week = Path(__file__).resolve().parents[1] / "examples" / "sample" / "week.json"
    memory = tmp_path / "week"
    assert main(["import-captions", str(week), "--memory", str(memory)]) == 0  # the default embedder, as the quickstart
    with Memory.open(memory) as m:
        tools = MemoryTools(m)
        chain = tools.get_event_chain("make coffee").render()
        assert "3 time(s) in 3 video(s) on 3 day(s)" in chain and "last thu_kitchen" in chain
        assert "thu_kitchen" in tools.get_summary(video_id="day/2026-11-19").render()
        for call in (lambda: tools.get_entity_timeline(name="keys"), lambda: tools.search_entities("keys")):
            with pytest.raises(ToolError, match="holds no entities"):
                call()


def test_imported_subtitles_are_the_transcript_with_their_speakers(tmp_path, capsys):
    """`memtools import-captions talk.srt` (docs/use-with-claude.md): the cues are what was said, so
    get_transcript reads them, with the speaker a cue names, as after `memtools build --subtitles`."""
    from memtools.cli import main
    from memtools.store import Memory
    from memtools.tools import MemoryTools

    srt = tmp_path / "talk.srt"
    srt.write_text("1\n00:00:01,000 --> 00:00:04,000\nANNA: Welcome to the kitchen.\n\n"
                   "2\n00:00:05,000 --> 00:00:09,000\nFirst we chop the onions.\n\n"
                   "3\n00:00:10,000 --> 00:00:12,000\n[Music] The oil is hot.\n", encoding="utf-8")
    vtt = tmp_path / "panel.vtt"
    vtt.write_text("WEBVTT\n\n00:01.000 --> 00:03.000\n<v Roger Bingham>We are here\n<v Neil>Hello\n",
                   encoding="utf-8")
    memory = tmp_path / "m"
    assert main(["import-captions", str(srt), str(vtt), "--memory", str(memory), "--embedder", "test:32",
                 "--no-progress"]) == 0
    assert "and 5 subtitle line(s) as the transcript" in capsys.readouterr().out
    with Memory.open(memory) as m:
        tools = MemoryTools(m)
        said = tools.get_transcript("talk", 0, 60)
        assert [(u.text, u.speaker) for u in said.lines] == [
            ("Welcome to the kitchen.", "ANNA"), ("First we chop the onions.", None), ("[Music] The oil is hot.", None)]
        assert "ANNA: Welcome to the kitchen." in said.render()
        panel = tools.get_transcript("panel", 0, 60)
        assert [(u.text, u.speaker) for u in panel.lines] == [("We are here", "Roger Bingham"), ("Hello", "Neil")]
        assert len(tools.get_subgraph("talk/macro_0000").events) == 3  # the cues stay micro-events too
