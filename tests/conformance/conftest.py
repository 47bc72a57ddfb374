"""The conformance suite every graph engine must pass (``MEMTOOLS_TEST_ENGINE``: kuzu, the default, or ladybug).

kuzu and ladybug cannot be imported in one process, so the suite runs once per process: in the
main test run with kuzu, and in a child pytest with ladybug (``tests/test_conformance_engines.py``).
The memories are the ones the golden tests of the main suite build, made on the engine under test,
so every tool must render exactly the same golden text on every engine.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from library_support import days
from memtools.embed import TestEmbedder, TestImageEmbedder
from memtools.store import Memory
from memtools.testing import kitchen_graph, with_speech
from test_speech_tools import _lecture
from visual_support import coloured_graph

ENGINE = os.environ.get("MEMTOOLS_TEST_ENGINE", "kuzu")


@pytest.fixture(scope="session")
def engine() -> str:
    return ENGINE


def _memory(tmp_path_factory, name: str, **options) -> Path:
    return tmp_path_factory.mktemp(f"{name}-{ENGINE}") / "memory"


@pytest.fixture(scope="session")
def kitchen_path(tmp_path_factory) -> Path:
    """The kitchen video alone (``tests/test_tools_golden.py``)."""
    path = _memory(tmp_path_factory, "kitchen")
    with Memory.create(path, TestEmbedder(64), graph_engine=ENGINE) as memory:
        memory.write_video(kitchen_graph())
    return path


@pytest.fixture(scope="session")
def speech_path(tmp_path_factory) -> Path:
    """The kitchen video with speech, and a lecture (``tests/test_speech_tools.py``)."""
    path = _memory(tmp_path_factory, "speech")
    with Memory.create(path, TestEmbedder(64), graph_engine=ENGINE) as memory:
        memory.write_video(with_speech(kitchen_graph()))
        memory.write_video(_lecture(150))
    return path


@pytest.fixture(scope="session")
def colour_path(tmp_path_factory) -> Path:
    """Two videos of coloured keyframes, embedded with the colour stub (``tests/test_search_frames.py``)."""
    path = _memory(tmp_path_factory, "visual")
    with Memory.create(path, TestEmbedder(64), image_embedder=TestImageEmbedder(), graph_engine=ENGINE) as memory:
        memory.write_video(coloured_graph(path, "kitchen"))
        memory.write_video(coloured_graph(path, "garden", ("yellow", "blue", "orange")))
    return path


@pytest.fixture(scope="session")
def days_path(tmp_path_factory) -> Path:
    """Three days of one home from captions (``tests/library_support.py``), one write per day."""
    path = _memory(tmp_path_factory, "days")
    with Memory.create(path, TestEmbedder(64), graph_engine=ENGINE) as memory:
        for graph in days():
            memory.write_video(graph)
    return path


@pytest.fixture()
def fresh(tmp_path):
    """An empty writable memory on the engine under test."""
    with Memory.create(tmp_path / "memory", TestEmbedder(64), graph_engine=ENGINE) as memory:
        yield memory
