"""``search_frames`` and the lance ``keyframes`` table: text-to-image search over real JPEG
keyframes, "more like this frame", filters, errors, the atomic write, and every front end."""

from __future__ import annotations

import base64

import pytest
from mcp.types import ImageContent, TextContent

from mcp_support import Client
from memtools.embed import TestEmbedder, TestImageEmbedder
from memtools.embed.clip import TransformersImageEmbedder
from memtools.errors import IncompatibleMemory, ToolError
from memtools.langchain import as_langchain_tools
from memtools.mcp import build_server
from memtools.mcp.adapter import FrameMatchesOut
from memtools.store import Memory
from memtools.store.graph.cypher import KuzuGraph
from memtools.tools import TOOL_SPECS, MemoryTools
from memtools.tools.frames_search import FrameMatches
from visual_support import colour_jpeg, coloured_graph, tiny_clip_folder


@pytest.fixture(scope="module")
def colour_memory(tmp_path_factory):
    """Two videos whose macro events show a red, a green and a blue frame (in that order) and,
    in "garden", yellow, blue and orange; keyframes embedded with the colour stub."""
    path = tmp_path_factory.mktemp("visual") / "memory"
    with Memory.create(path, TestEmbedder(64), image_embedder=TestImageEmbedder()) as memory:
        memory.write_video(coloured_graph(path, "kitchen"))
        memory.write_video(coloured_graph(path, "garden", ("yellow", "blue", "orange")))
    return path


@pytest.fixture()
def tools(colour_memory):
    with Memory.open(colour_memory) as memory:  # the image embedder comes back from the manifest
        yield MemoryTools(memory)


def test_the_tiny_clip_round_trip(tmp_path):
    """Acceptance: a tiny CLIP trained for ten steps in the test, keyframes written by
    Memory.write_video, and search_frames('red') ranks the red square over the blue one."""
    model = tiny_clip_folder(tmp_path / "clip", train_steps=10)
    path = tmp_path / "memory"
    with Memory.create(path, TestEmbedder(64), image_embedder=TransformersImageEmbedder(model)) as memory:
        memory.write_video(coloured_graph(path, "kitchen", ("red", "blue")))
    with Memory.open(path) as memory:  # a reader reloads the model named in the manifest
        assert memory.manifest.image_embedder.name == str(model.resolve())
        tools = MemoryTools(memory)
        red = tools.search_frames(query="red", top_k=2)
        blue = tools.search_frames(query="blue", top_k=2)
    assert [f.keyframe_id for f in red.frames] == ["kitchen/kf_0001", "kitchen/kf_0002"]
    assert [f.keyframe_id for f in blue.frames] == ["kitchen/kf_0002", "kitchen/kf_0001"]
    assert red.images[0] == (path / red.frames[0].path).read_bytes()


def test_hits_give_time_macro_event_image_and_score(tools, colour_memory):
    result = tools.search_frames(query="a red square", top_k=3)
    assert isinstance(result, FrameMatches)
    assert [(f.video_id, f.keyframe_id) for f in result.frames][:2] == [
        ("kitchen", "kitchen/kf_0001"), ("garden", "garden/kf_0003")]
    first = result.frames[0]
    assert (first.t, first.macro_id, first.macro_label) == (60.0, "kitchen/macro_0000", "Chopping onions")
    assert result.frames[0].score >= result.frames[1].score >= result.frames[2].score
    assert result.images[0] == colour_jpeg("red", square=True) and len(result.images) == 3
    assert result.render().splitlines()[1] == (
        "1. kitchen/kf_0001 at 0:01:00 (60.0 s) in kitchen/macro_0000 (Chopping onions), similarity "
        f"{first.score:.2f}")


def test_filters_by_video_and_time_window(tools):
    in_garden = tools.search_frames(query="red", video_id="garden")
    assert {f.video_id for f in in_garden.frames} == {"garden"} and in_garden.frames[0].keyframe_id == "garden/kf_0003"
    window = tools.search_frames(query="red", start_sec=100, end_sec=250)
    assert sorted(f.keyframe_id for f in window.frames) == ["garden/kf_0002", "kitchen/kf_0002"]
    assert "[0:01:40-0:04:10]" in window.render()


def test_more_like_this_frame(tools):
    result = tools.search_frames(frame_id="kitchen/kf_0003", top_k=2)  # blue
    assert result.frames[0].keyframe_id == "garden/kf_0002"  # the other blue frame
    assert "kitchen/kf_0003" not in [f.keyframe_id for f in result.frames]  # never the frame itself
    assert result.render().startswith("2 frame(s) looking like kitchen/kf_0003 in every video")


@pytest.mark.parametrize(("arguments", "kind", "message"), [
    ({}, "bad-arguments", "pass exactly one of query"),
    ({"query": "red", "frame_id": "kitchen/kf_0001"}, "bad-arguments", "pass exactly one of query"),
    ({"frame_id": "kitchen/kf_0042"}, "not-found", "no keyframe 'kitchen/kf_0042' among the searchable frames"),
    ({"query": "red", "start_sec": 50, "end_sec": 10}, "bad-arguments", "end_sec greater than start_sec"),
    ({"query": "red", "video_id": "attic"}, "not-found", "no video 'attic' in this memory"),
    ({"query": "red", "top_k": 0}, "bad-arguments", "top_k"),
])
def test_tool_errors_tell_the_model_what_to_do(tools, arguments, kind, message):
    outcome = TOOL_SPECS["search_frames"].invoke(tools, arguments)
    assert not outcome.ok and outcome.error == kind and message in outcome.message


def test_a_memory_without_image_embedder_says_how_to_turn_visual_search_on(kitchen_tools):
    with pytest.raises(ToolError, match="no keyframe vectors .* building with --image-embedder"):
        kitchen_tools.search_frames(query="red")


def test_keyframe_rows_are_replaced_deleted_and_rolled_back_with_the_video(tmp_path, monkeypatch):
    path = tmp_path / "memory"
    with Memory.create(path, TestEmbedder(64), image_embedder=TestImageEmbedder()) as memory:
        memory.write_video(coloured_graph(path, "kitchen"))
        memory.write_video(coloured_graph(path, "kitchen", ("blue", "blue")))  # replaced, not added
        assert memory.keyframes.count() == 2 and memory.manifest.videos["kitchen"].keyframe_vectors == 2
        version = memory.keyframes.version()

        def broken_insert(self, graphs):
            raise RuntimeError("disk full")

        monkeypatch.setattr(KuzuGraph, "insert", broken_insert)
        with pytest.raises(RuntimeError, match="disk full"):
            memory.write_video(coloured_graph(path, "garden"))
        monkeypatch.undo()
        assert memory.keyframes.count() == 2 and memory.keyframes.version() >= version
        assert memory.keyframes.ids("garden") == set()
        assert memory.delete_video("kitchen") and memory.keyframes.count() == 0


def test_a_different_image_embedder_is_refused(colour_memory, tmp_path):
    (tmp_path / "config.json").write_text('{"projection_dim": 8}')  # dim is read from here, no model loaded
    with pytest.raises(IncompatibleMemory, match="embeds its keyframes with 'test:colour'"):
        Memory.open(colour_memory, image_embedder=TransformersImageEmbedder(tmp_path, name="other-clip"))


async def test_mcp_gives_images_captions_links_and_structured_hits(colour_memory):
    async with Client(build_server(colour_memory)) as client:
        result = await client.call_tool("search_frames", {"query": "red", "top_k": 2})
        assert not result.is_error
        head = result.content[0].text
        assert "kitchen/kf_0001 at 0:01:00" in head and "memtools://videos/kitchen/keyframes/kf_0001" in head
        images = [b for b in result.content if isinstance(b, ImageContent)]
        captions = [b.text for b in result.content[1:] if isinstance(b, TextContent)]
        links = [c.rsplit("; resource ", 1)[1] for c in captions]
        assert len(images) == len(links) == 2 and base64.b64decode(images[0].data) == colour_jpeg("red", square=True)
        assert captions[0].startswith("Frame 1/2 kitchen/kf_0001 at 0:01:00")
        hits = FrameMatchesOut.model_validate(result.structured_content)
        assert hits.query == "red" and hits.frames[0].uri == links[0] and hits.frames[0].score > 0.5
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "frame_id" in tools["search_frames"].input_schema["properties"]


def test_langchain_gives_image_blocks_and_the_hits_as_artifact(colour_memory):
    with Memory.open(colour_memory) as memory:
        tool = {t.name: t for t in as_langchain_tools(memory)}["search_frames"]
        msg = tool.invoke({"name": "search_frames", "args": {"query": "blue", "video_id": "garden", "top_k": 1},
                           "id": "c1", "type": "tool_call"})
    assert [b["type"] for b in msg.content] == ["text", "image"]
    assert "garden/kf_0002" in msg.content[0]["text"]
    assert msg.artifact["frames"][0]["keyframe_id"] == "garden/kf_0002"
    assert msg.artifact["frames"][0]["score"] > 0.5


def test_memtools_build_with_an_image_embedder_makes_frames_searchable(tmp_path, capsys):
    from build_helpers import scenes_video
    from memtools.cli import main

    video = scenes_video(tmp_path / "clip.mp4", seconds=40)
    memory = tmp_path / "memory"
    assert main(["build", str(video), "--memory", str(memory), "--vlm", "python:memtools.builder.testing:scripted_vlm",
                 "--embedder", "test:64", "--image-embedder", "test", "--preset", "short", "--window-sec", "40",
                 "--quiet"]) == 0
    capsys.readouterr()
    with Memory.open(memory) as opened:
        stored = opened.manifest.videos["clip"]
        assert opened.manifest.image_embedder.name == "test:colour"
        assert stored.keyframe_vectors == stored.counts["keyframe"] > 0
    assert main(["tool", "search_frames", "--memory", str(memory), "--query", "a green frame", "--top-k", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("2 frame(s) matching 'a green frame' in every video") and "clip/kf_" in out
    assert main(["info", "--memory", str(memory)]) == 0
    assert f"visual search: image embedder test:colour (dim 4), {stored.keyframe_vectors} keyframe vector(s)" in \
        capsys.readouterr().out


def test_check_finds_lost_keyframe_vectors_and_repair_embeds_them_again(tmp_path):
    import shutil

    from memtools.store.integrity import checker as integrity
    from memtools.store.integrity.repair import repair

    path = tmp_path / "memory"
    with Memory.create(path, TestEmbedder(64), image_embedder=TestImageEmbedder()) as memory:
        memory.write_video(coloured_graph(path, "kitchen"))
        report = integrity.check(memory)
        assert report.ok and report.parts["keyframes"] == "3 row(s), image embedder test:colour (dim 4)"
    shutil.rmtree(path / "vectors" / "keyframes.lance")
    with Memory.open(path) as memory:
        report = integrity.check(memory)
        assert [(p.part, p.text, p.repairable) for p in report.problems] == [
            ("keyframes", "kitchen: 0 keyframe row(s), the manifest lists 3", True)]
        result = repair(memory)
        assert result.ok and "embedded 3 keyframe(s) of 1 video(s) again from frames/" in result.done
        assert MemoryTools(memory).search_frames(query="green").frames[0].keyframe_id == "kitchen/kf_0002"


@pytest.mark.parametrize(("name", "arguments"), [
    ("search_frames", {"query": "a red square", "top_k": 3}),
    ("search_frames_like", {"frame_id": "garden/kf_0003", "video_id": "kitchen", "start_sec": 0, "end_sec": 200}),
    ("search_frames_none", {"query": "red", "video_id": "kitchen", "start_sec": 10, "end_sec": 20}),
])
def test_rendered_output_matches_golden(tools, name, arguments):
    import os
    from pathlib import Path

    text = tools.search_frames(**arguments).render() + "\n"
    path = Path(__file__).parent / "golden" / f"{name}.txt"
    if os.environ.get("MEMTOOLS_UPDATE_GOLDEN") or not path.exists():
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")
