"""One text, one vector in one memory: a write reuses the vector a memory holds for a text.

A real sentence model's vector for a text differs in its last bits with the batch it came in; the
embedder here models that (every call adds its own tiny offset), so without the reuse two videos
sharing a caption would hold two vectors for it and tied moments would be ordered by the noise.
"""

from __future__ import annotations

import itertools

import numpy as np

from memtools import Memory
from memtools.embed.testing import TestEmbedder
from memtools.testing import kitchen_graph
from memtools.tools import MemoryTools


class BatchNoisyEmbedder(TestEmbedder):
    """TestEmbedder plus a per-call offset of about 1e-6, like a model whose kernels depend on the batch."""

    __test__ = False

    def __init__(self, dim: int = 64) -> None:
        super().__init__(dim)
        self.calls = itertools.count(1)
        self.embedded = 0

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        out = super().embed_documents(texts)
        self.embedded += len(texts)
        out = out + np.float32(1e-6 * next(self.calls))
        return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


def _vectors(memory: Memory, video_id: str) -> dict[str, bytes]:
    table = memory.vectors_unchecked.nodes().to_lance().to_table(
        columns=["id", "vector"], filter=f"video_id = '{video_id}'")
    return {i.removeprefix(video_id): np.asarray(v, dtype=np.float32).tobytes()
            for i, v in zip(table.column("id").to_pylist(), table.column("vector").to_pylist(), strict=True)}


def test_a_later_video_gets_the_vectors_held_for_its_texts(tmp_path):
    embedder = BatchNoisyEmbedder()
    with Memory.create(tmp_path / "mem", embedder) as memory:
        memory.write_video(kitchen_graph("monday"))
        first = embedder.embedded
        memory.write_video(kitchen_graph("tuesday"))
        monday, tuesday = _vectors(memory, "monday"), _vectors(memory, "tuesday")
        assert monday.keys() == tuesday.keys() and len(monday) > 10
        assert monday == tuesday  # byte for byte, though every embedder call differs
        # texts naming the video (its title, its ids) are new; the shared captions were not embedded again
        assert embedder.embedded - first < first / 2

        hits = MemoryTools(memory).search_nodes("onions chopped on a wooden board", top_k=8).hits
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)
        for a, b in zip(hits, hits[1:], strict=False):
            if a.score == b.score:
                assert a.id < b.id  # a tie is a real tie, ordered by id
        pairs = {h.id.removeprefix("monday") for h in hits if h.video_id == "monday"} & \
                {h.id.removeprefix("tuesday") for h in hits if h.video_id == "tuesday"}
        assert pairs  # the same moment of both days, scored the same


def test_a_text_the_memory_does_not_hold_is_embedded(tmp_path):
    embedder = BatchNoisyEmbedder()
    with Memory.create(tmp_path / "mem", embedder) as memory:
        memory.write_video(kitchen_graph("monday"))
        before = embedder.embedded
        graph = kitchen_graph("tuesday")
        graph.events[0].description = "a brand new sentence about a parrot"
        memory.write_video(graph)
        assert embedder.embedded > before
        row = memory.vectors_unchecked.nodes().to_lance().to_table(
            columns=["text", "vector"], filter=f"id = '{graph.events[0].id}'").to_pylist()[0]
        assert "parrot" in row["text"]
        fresh = embedder.embed_documents([row["text"]])[0]
        assert float(np.dot(np.asarray(row["vector"], dtype=np.float32), fresh)) > 0.999


def test_vectors_of_another_dimension_or_an_unreadable_table_are_never_reused(tmp_path):
    import lancedb

    from memtools.store.writes.held_vectors import held_vectors

    table = lancedb.connect(str(tmp_path)).create_table(
        "nodes", [{"text": "a cup", "vector": np.ones(8, dtype=np.float32).tolist()}])
    assert set(held_vectors([table], ["a cup", "a pan"], 8)) == {"a cup"}
    assert held_vectors([table], ["a cup"], 64) == {}  # another model's vectors

    class Broken:
        name = "entities"

        def to_lance(self):
            raise OSError("lance: not found: data/0001.lance")

    assert set(held_vectors([Broken(), table], ["a cup"], 8)) == {"a cup"}  # the next table still answers
