"""Frames in words: inspect_frames / search_frames say what is visible, so an answer survives a dropped image;
--no-structured-images leaves structured content out of image results."""

from __future__ import annotations

import pytest
from mcp import StdioServerParameters

from mcp_support import Client, mcp_command, shared_memory


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    return shared_memory(tmp_path_factory)


def _texts(result) -> str:
    return "\n".join(b.text for b in result.content if b.type == "text")


async def test_every_frame_comes_with_the_stored_description_of_what_it_shows(memory):
    command, args = mcp_command(memory)
    async with Client(StdioServerParameters(command=command, args=args)) as client:
        inspected = await client.call_tool("inspect_frames", {"video_id": "kitchen", "start_sec": 100,
                                                              "end_sec": 200, "max_frames": 3})
        frames = inspected.structured_content["frames"]
        assert frames and all(f["description"] for f in frames)
        text = _texts(inspected)
        assert text.count("shows: In '") == len(frames)  # the text alone says what each frame shows
        assert "Visible:" in text and "At 0:0" in text
        found = await client.call_tool("search_frames", {"query": "a blue frame", "top_k": 2, "video_id": "kitchen"})
        assert all(f["description"] for f in found.structured_content["frames"])
        assert _texts(found).count("shows: In '") == len(found.structured_content["frames"])


async def test_no_structured_images_leaves_structured_content_out_of_image_results(memory):
    command, args = mcp_command(memory, "--no-structured-images")
    async with Client(StdioServerParameters(command=command, args=args)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["inspect_frames"].output_schema is None and tools["search_frames"].output_schema is None
        assert tools["search_nodes"].output_schema is not None  # other tools keep theirs
        inspected = await client.call_tool("inspect_frames", {"video_id": "kitchen", "start_sec": 100,
                                                              "end_sec": 200, "max_frames": 2})
        assert inspected.structured_content is None and not inspected.is_error
        assert any(b.type == "image" for b in inspected.content)
        assert "shows: In '" in _texts(inspected)
        summary = await client.call_tool("get_summary", {"video_id": "kitchen"})
        assert summary.structured_content is not None
