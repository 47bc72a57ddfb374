"""The index stage moves: the build embeds the video's texts a batch at a time, counting them."""

from __future__ import annotations

import pytest

from build_helpers import scenes_video
from memtools.builder import BuildConfig, build_video
from memtools.builder.progress import Progress, Snapshot
from memtools.builder.testing import ScriptedPerception
from memtools.embed import TestEmbedder
from memtools.perception import FunctionVLM
from memtools.store import Memory
from memtools.store.tables.payload import index_rows
from memtools.tools import MemoryTools

CONFIG = BuildConfig.short().model_copy(update={"window_sec": 60.0, "frames_per_window": 12,
                                                "frames_per_macro": 4, "concurrency": 4})


class CountingEmbedder(TestEmbedder):
    """TestEmbedder that notes every batch it is asked to embed."""

    def __init__(self, dim: int = 64) -> None:
        super().__init__(dim)
        self.batches: list[list[str]] = []

    def embed_documents(self, texts):
        self.batches.append(list(texts))
        return super().embed_documents(texts)


class Snapshots:
    def __init__(self) -> None:
        self.seen: list[Snapshot] = []

    def show(self, snapshot: Snapshot) -> None:
        self.seen.append(snapshot)

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    return scenes_video(tmp_path_factory.mktemp("video") / "clip.mp4")


def test_the_index_stage_counts_the_texts_it_embeds_and_embeds_each_once(tmp_path, video):
    sink, embedder = Snapshots(), CountingEmbedder()
    with Memory.create(tmp_path / "memory", embedder) as memory:
        build_video(memory, FunctionVLM(ScriptedPerception(episode_sec=20)), video, config=CONFIG,
                    progress=Progress(sink))
        with memory.reading() as graph_store:
            graph = graph_store.video_graph("clip")
        hits = MemoryTools(memory).search_nodes("boxes fall over", node_types=["event"], top_k=1).hits
    assert graph is not None and hits  # written and searchable
    texts = set(row["text"] for row in index_rows([graph]))
    index = [s.stages["index"] for s in sink.seen if "index" in s.stages]
    total = index[0][1]
    assert total == len(texts) + 1  # every searchable text, then the write
    moving = sorted({done for done, _, finished in index if not finished})
    assert moving[0] == 0 and len(moving) >= 3 and moving[-1] == len(texts)  # the line moves batch by batch
    assert index[-1] == (total, total, True)
    embedded = [t for batch in embedder.batches for t in batch]
    assert len(embedded) == len(set(embedded)) and texts <= set(embedded)  # the write found them embedded
    assert len(embedder.batches[0]) <= 4  # the first call (which loads a real model) is a short one


def test_time_left_is_measured_after_a_one_off_start():
    """The embedder's first call loads the model; the ETA is timed from the calls after it."""
    sink = Snapshots()
    progress = Progress(sink)
    progress.begin("index", 10)
    progress.advance("index", 4, one_off=True)
    assert sink.seen[-1].eta is None and sink.seen[-1].stages["index"] == (4, 10, False)  # nothing timed yet
    progress.advance("index", 2)
    assert sink.seen[-1].eta is not None
    progress.begin("extract", 10)
    progress.advance("extract", 4)
    assert sink.seen[-1].eta is not None  # an ordinary step is timed at once
