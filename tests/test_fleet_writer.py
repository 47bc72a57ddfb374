"""The fleet's writer groups finished videos: several bundles go into one atomic write (one
manifest generation) and the memory equals one written video by video; a bad bundle in a
group does not keep the others out (the group is written again one by one), and a bundle
from another embedder is refused before the group is written."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from build_helpers import dump_memory, scenes_video
from memtools.builder import BuildConfig
from memtools.builder.bundle import BuildFolder, VideoBundle, write_bundle
from memtools.builder.bundle_vectors import BundleVectors, WorkerEmbedder
from memtools.builder.checkpoint import Checkpoints
from memtools.builder.testing import ScriptedPerception
from memtools.embed import TestEmbedder
from memtools.errors import ConfigError
from memtools.fleet import FleetOptions, build_fleet
from memtools.fleet.build import LocalExecutor
from memtools.fleet.testing import ScriptedEndpoint
from memtools.fleet.writer import GroupLimits, bundle_nodes, group_full, group_size, write_group
from memtools.ontology import EdgeCategory, SpatialLabel
from memtools.perception import FunctionVLM
from memtools.schema import Edge
from memtools.store import Memory

CONFIG = BuildConfig.short().model_copy(update={"window_sec": 60.0, "frames_per_window": 8,
                                                "frames_per_macro": 3, "concurrency": 4})
IDS = ["a", "b", "c"]


class NoEmbedding(TestEmbedder):
    """The writer's embedder: same name and dimension as the workers', but it must not be asked."""

    def embed_documents(self, texts):
        raise AssertionError(f"the writer embedded {len(texts)} text(s)")


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fleet-writer-videos")
    return [scenes_video(folder / f"{vid}.mp4", seconds=40 + 10 * i, scene_sec=10 + 5 * i)
            for i, vid in enumerate(IDS)]


@pytest.fixture(scope="module")
def bundles(tmp_path_factory, videos):
    """Three perceived videos whose texts a worker embedded, and the memory written one video per write."""
    build = tmp_path_factory.mktemp("fleet-writer-build")
    executor = LocalExecutor(lambda: FunctionVLM(ScriptedPerception(episode_sec=20.0)), BuildFolder(build), CONFIG,
                             4, WorkerEmbedder("test:hash-64"))
    made = [asyncio.run(executor.perceive(str(video), vid)) for video, vid in zip(videos, IDS, strict=True)]
    reference = tmp_path_factory.mktemp("fleet-writer-reference") / "memory"
    with Memory.create(reference, NoEmbedding(64)) as memory:
        for bundle in made:
            write_bundle(memory, bundle)
    return made, reference


def _generation(path) -> int:
    with Memory.open(path, TestEmbedder(64)) as memory:
        return memory.manifest.generation


def _statuses(memory: Memory) -> dict[str, str]:
    memory.refresh()
    return {vid: entry.status for vid, entry in memory.manifest.videos.items()}


def test_several_bundles_go_into_one_write_and_the_memory_is_the_same(tmp_path, bundles):
    made, reference = bundles
    path = tmp_path / "memory"
    with Memory.create(path, NoEmbedding(64)) as memory:  # the writer embeds nothing: the workers did
        before = memory.manifest.generation
        assert write_group(memory, made) == {}
        assert memory.manifest.generation == before + 1  # one committed write for three videos
        assert _statuses(memory) == dict.fromkeys(IDS, "ready")
    assert _generation(reference) == before + 3
    assert dump_memory(path) == dump_memory(reference)
    for bundle in made:  # each video's done checkpoint: a later run skips it
        assert Checkpoints(path / "work" / bundle.report.video_id).load("done") == bundle.state


def _dangling(bundle: VideoBundle) -> VideoBundle:
    """The bundle with an edge to a node its graph does not have: the store refuses the graph."""
    graph = bundle.graph
    assert graph is not None and graph.entities
    source = graph.entities[0].id
    label = next(iter(SpatialLabel)).value
    edge = Edge(source=source, target=f"{graph.video.id}/entity/nowhere", category=EdgeCategory.SPATIAL, label=label)
    broken = graph.model_copy(update={"edges": [*graph.edges, edge]})
    return VideoBundle(bundle.report, bundle.state, broken, bundle.frames, bundle.vectors)


def test_a_bad_bundle_in_a_group_does_not_keep_the_others_out(tmp_path, bundles):
    made, reference = bundles
    path = tmp_path / "memory"
    with Memory.create(path, NoEmbedding(64)) as memory:
        before = memory.manifest.generation
        failed = write_group(memory, [made[0], _dangling(made[1]), made[2]])
        assert list(failed) == ["b"] and "inconsistent graph" in failed["b"] and "dangling" in failed["b"]
        assert memory.manifest.generation == before + 2  # the group failed whole; a and c landed one by one
        assert _statuses(memory) == {"a": "ready", "c": "ready"}
        assert write_group(memory, [made[1]]) == {}  # the good bundle of b, written later, completes the memory
    assert dump_memory(path) == dump_memory(reference)


def test_a_bundle_from_another_embedder_is_refused_before_the_group_is_written(tmp_path, bundles):
    made, _ = bundles
    other = BundleVectors("test:hash-32", 32, {t: np.ones(32, np.float32) for t in made[2].vectors.vectors})
    foreign = VideoBundle(made[2].report, made[2].state, made[2].graph, made[2].frames, other)
    with Memory.create(tmp_path / "memory", NoEmbedding(64)) as memory:
        before = memory.manifest.generation
        failed = write_group(memory, [made[0], made[1], foreign])
        assert list(failed) == ["c"] and "embedded by test:hash-32" in failed["c"]
        assert memory.manifest.generation == before + 1  # a and b still shared one write
        assert _statuses(memory) == {"a": "ready", "b": "ready"}


def test_a_group_is_bounded_by_videos_and_nodes(bundles):
    made, _ = bundles
    assert group_size(made, GroupLimits(videos=2)) == 2 and group_full(made, GroupLimits(videos=2))
    assert group_size(made, GroupLimits()) == 3 and not group_full(made, GroupLimits())
    one = bundle_nodes(made[0])
    assert group_size(made, GroupLimits(nodes=one + bundle_nodes(made[1]) - 1)) == 1
    assert group_size(made, GroupLimits(nodes=1)) == 1  # a video larger than the bound is still written, alone
    assert group_full(made, GroupLimits(nodes=1))


@pytest.mark.slow
def test_the_fleet_driver_writes_videos_finished_together_in_one_write(tmp_path, videos):
    def fleet(name, **options):
        with Memory.create(tmp_path / name, TestEmbedder(64)) as memory:
            before = memory.manifest.generation
            summary = build_fleet(memory, ScriptedEndpoint(episode_sec=20.0), videos, config=CONFIG,
                                  options=FleetOptions(videos_in_flight=3, **options))
        assert not summary.failed and sorted(v.video_id for v in summary.videos) == IDS
        return _generation(tmp_path / name) - before

    # a finished video waits for the others while they run: all three share one write
    assert fleet("grouped", write_linger_sec=600.0) == 1
    assert fleet("one-by-one", write_group_videos=1) == 3
    assert dump_memory(tmp_path / "grouped") == dump_memory(tmp_path / "one-by-one")


def test_fleet_write_options_are_checked():
    with pytest.raises(ConfigError, match="videos per write must be >= 1"):
        FleetOptions(write_group_videos=0)
    with pytest.raises(ConfigError, match="linger cannot be negative"):
        FleetOptions(write_linger_sec=-1.0)
