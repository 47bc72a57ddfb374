"""A warm search reads no video catalog entry (issue 34, item 3): the opened videos' row counts
and the found videos' titles are kept per manifest generation, and a write (a new generation)
is seen by the next search."""

from __future__ import annotations

from memtools.embed.testing import TestEmbedder
from memtools.importers.captions import Caption, CaptionedVideo, graph_from_captions
from memtools.store import Memory
from memtools.store.catalog.manifest import VideoView
from memtools.tools import MemoryTools


def video(vid: str, title: str) -> CaptionedVideo:
    captions = [Caption(0, 10, "a man chops onions in the kitchen"), Caption(10, 20, "a dog runs in the park"),
                Caption(20, 30, "the woman plays the guitar")]
    return CaptionedVideo(vid, captions, duration=40, title=title)


def test_a_warm_search_reads_no_catalog_entry_and_sees_a_rewrite(tmp_path, monkeypatch):
    path = tmp_path / "memory"
    with Memory.create(path, TestEmbedder(32)) as memory:
        memory.write_videos([graph_from_captions(video(f"v{n}", f"video {n}")) for n in range(3)])
        tools = MemoryTools(memory)
        first = tools.search_nodes("a man chops onions")
        assert first.hits and first.hits[0].video_title.startswith("video ")

        reads: list[str] = []
        original = VideoView.get

        def counted(view, video_id, default=None):
            reads.append(video_id)
            return original(view, video_id, default)

        monkeypatch.setattr(VideoView, "get", counted)
        again = tools.search_nodes("a man chops onions")
        assert reads == []
        assert [(h.id, h.video_title) for h in again.hits] == [(h.id, h.video_title) for h in first.hits]

        memory.write_videos([graph_from_captions(video("v0", "renamed"))])  # a new generation
        after = tools.search_nodes("a man chops onions", video_id="v0")
        assert reads  # the new generation's entries are read
        assert {h.video_title for h in after.hits} == {"renamed"}
