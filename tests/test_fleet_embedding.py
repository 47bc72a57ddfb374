"""Fleet builds embed in the workers: the writer stores the vectors a worker made (it embeds
nothing itself), refuses vectors from another embedder, and the memory equals one whose writer
embedded everything."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from build_helpers import dump_memory, scenes_video
from memtools.builder import BuildConfig
from memtools.builder.bundle import BuildFolder, write_bundle
from memtools.builder.bundle_vectors import BundleVectors, WorkerEmbedder
from memtools.builder.testing import ScriptedPerception
from memtools.embed import TestEmbedder
from memtools.errors import StoreError
from memtools.fleet.build import LocalExecutor
from memtools.perception import FunctionVLM
from memtools.store import Memory
from memtools.tools import MemoryTools

CONFIG = BuildConfig.short().model_copy(update={"window_sec": 60.0, "frames_per_window": 8,
                                                "frames_per_macro": 3, "concurrency": 4})


class NoEmbedding(TestEmbedder):
    """The writer's embedder: same name and dimension as the workers', but it must not be asked."""

    def embed_documents(self, texts):
        raise AssertionError(f"the writer embedded {len(texts)} text(s)")


@pytest.fixture(scope="module")
def bundle_and_reference(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fleet-embed")
    video = scenes_video(folder / "clip.mp4", seconds=60, scene_sec=15)
    build = folder / "build"
    executor = LocalExecutor(lambda: FunctionVLM(ScriptedPerception(episode_sec=20.0)), BuildFolder(build), CONFIG,
                             4, WorkerEmbedder("test:hash-64"))
    bundle = asyncio.run(executor.perceive(str(video), "clip"))
    reference = folder / "reference"
    with Memory.create(reference, TestEmbedder(64)) as memory:  # the writer embeds, as a plain build does
        plain = type(bundle)(bundle.report, bundle.state, bundle.graph, bundle.frames)
        write_bundle(memory, plain)
    return bundle, reference


def test_the_writer_stores_the_workers_vectors_and_embeds_nothing(tmp_path, bundle_and_reference):
    bundle, reference = bundle_and_reference
    assert bundle.vectors is not None and bundle.vectors.embedder == "test:hash-64"
    assert len(bundle.vectors.vectors) > 10

    with Memory.create(tmp_path / "memory", NoEmbedding(64)) as memory:
        write_bundle(memory, bundle)
    assert dump_memory(tmp_path / "memory") == dump_memory(reference)
    with Memory.open(tmp_path / "memory", TestEmbedder(64)) as memory, \
            Memory.open(reference, TestEmbedder(64)) as plain:
        query = "a scene changes"
        assert MemoryTools(memory).search_nodes(query).render() == MemoryTools(plain).search_nodes(query).render()


def test_vectors_from_another_embedder_are_refused_before_anything_is_written(tmp_path, bundle_and_reference):
    bundle, _ = bundle_and_reference
    other = BundleVectors("test:hash-32", 32, {t: np.ones(32, np.float32) for t in bundle.vectors.vectors})
    foreign = type(bundle)(bundle.report, bundle.state, bundle.graph, {}, other)
    with Memory.create(tmp_path / "memory", NoEmbedding(64)) as memory:
        with pytest.raises(StoreError, match="embedded by test:hash-32 .* the memory uses test:hash-64"):
            write_bundle(memory, foreign)
        assert memory.manifest.videos == {}


def test_a_non_finite_vector_from_a_worker_is_refused(tmp_path, bundle_and_reference):
    bundle, _ = bundle_and_reference
    vectors = dict(bundle.vectors.vectors)
    first = next(iter(vectors))
    vectors[first] = np.full(64, np.nan, np.float32)
    broken = type(bundle)(bundle.report, bundle.state, bundle.graph, {}, BundleVectors("test:hash-64", 64, vectors))
    with Memory.create(tmp_path / "memory", NoEmbedding(64)) as memory:
        with pytest.raises(StoreError, match="not a finite 64-dimensional vector"):
            write_bundle(memory, broken)
