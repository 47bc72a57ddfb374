"""Every MCP result stays under the sizes clients accept, and says how to narrow the call when cut."""

from __future__ import annotations

import json

from mcp.types import ImageContent, TextContent

from mcp_support import v2_names
from memtools.mcp import adapter, limits
from memtools.mcp.adapter import FramesOut, frames_result, tool_result
from memtools.tools import FrameItem, Frames, SearchHit, SearchResult


def test_short_text_is_untouched():
    assert limits.cap_text("a\nb", limit=10) == "a\nb"


def test_long_text_is_cut_at_a_line_and_says_how_to_narrow():
    text = "\n".join(f"line {i} " + "x" * 50 for i in range(2000))
    capped = limits.cap_text(text, limit=5000)
    assert len(capped) <= 5000
    assert capped.splitlines()[-2].startswith("line ")  # whole lines kept
    assert "output cut at 5000" in capped and "top_k" in capped


def test_structured_content_keeps_its_shape_when_shrunk():
    hits = [SearchHit(id=f"v/macro_{i:04d}", kind="macro", video_id="v", t_start=i, t_end=i + 1,
                      text="word " * 60, score=0.5, context=["-> CAUSES x"] * 3) for i in range(2000)]
    result = SearchResult(query="q", mode="hybrid", hits=hits)
    data, notes = limits.cap_structured(result.model_dump(mode="json"), limit=20_000)
    assert len(json.dumps(data)) <= 20_000
    SearchResult.model_validate(data)  # still matches the output schema
    assert notes and notes[0].startswith("hits: kept") and "of 2000 items" in notes[0]


def test_a_huge_tool_result_stays_within_the_limits():
    hits = [SearchHit(id=f"v/macro_{i:04d}", kind="macro", video_id="v", t_start=i, t_end=i + 1,
                      text="a long description " * 100, score=0.5) for i in range(500)]
    result = v2_names(tool_result(SearchResult(query="q", mode="hybrid", hits=hits)))
    text = result.content[0].text
    assert len(text) <= limits.TEXT_LIMIT
    assert len(json.dumps(result.structured_content)) <= limits.STRUCTURED_LIMIT
    assert "Structured content shortened: hits: kept" in text
    assert limits.TEXT_LIMIT + limits.STRUCTURED_LIMIT < limits.MAX_RESULT_CHARS


def test_a_single_long_string_is_clipped_not_dropped():
    sub = {"macro": {"summary": "s" * 100_000}, "entities": [], "events": [], "ocr": [], "edges": []}
    data, notes = limits.cap_structured(sub, limit=10_000)
    assert len(json.dumps(data)) <= 10_000 and data["macro"]["summary"].startswith("sss")
    assert notes == ["macro.summary: text clipped"]


def test_frames_past_the_image_budget_become_uris_only(monkeypatch):
    monkeypatch.setattr(adapter, "IMAGE_BYTES_LIMIT", 2500)
    frames = Frames(video_id="v", start_sec=0, end_sec=90, frames=[
        FrameItem(t=float(t), macro_id="v/macro_0000", macro_label="Chopping", source="keyframe",
                  keyframe_id=f"v/kf_{i:04d}", path=f"frames/v/kf_{i:04d}.jpg") for i, t in enumerate((0, 30, 60), 1)
    ], images=[b"\xff\xd8" + b"j" * 1000] * 3)
    result = v2_names(frames_result(frames))
    images = [b for b in result.content if isinstance(b, ImageContent)]
    captions = [b.text for b in result.content[1:] if isinstance(b, TextContent)]
    assert len(images) == 2 and len(captions) == 3
    assert "image left out" in captions[2] and "resource memtools://videos/v/keyframes/kf_0003 " in captions[2]
    assert [b.type for b in result.content] == ["text", "text", "image", "text", "image", "text"]
    out = FramesOut.model_validate(result.structured_content)
    assert [f.image for f in out.frames] == [True, True, False]
    assert "memtools://videos/v/keyframes/kf_0003" in result.content[0].text


def test_decoded_frames_link_to_the_frame_at_their_time():
    frames = Frames(video_id="v", start_sec=0, end_sec=10, images=[b"\xff\xd8"],
                    frames=[FrameItem(t=4.25, source="video")])
    result = v2_names(frames_result(frames))
    assert result.structured_content["frames"][0]["uri"] == "memtools://videos/v/frames/4.250"
    assert "Frame 1/1 at 0:00:04 (4.2 s)" in result.content[1].text
