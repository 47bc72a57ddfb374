"""Shared fixtures: small real memories (kuzu + lance on disk) built from hand-written graphs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memtools.embed.testing import TestEmbedder
from memtools.store import Memory
from memtools.testing import kitchen_graph
from memtools.tools import MemoryTools

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MEMTOOLS_ALLOW_MODEL_REQUESTS", "0")  # fail any real VLM request (perception.testing)

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
SHARED_DATA = Path(os.environ.get("MEMTOOLS_SHARED_DATA", SHARED / "data"))


@pytest.fixture(scope="session")
def kitchen_memory_path(tmp_path_factory) -> Path:
    """A read-only memory holding the kitchen video (see memtools.testing)."""
    path = tmp_path_factory.mktemp("kitchen") / "memory"
    with Memory.create(path, TestEmbedder(64)) as memory:
        memory.write_video(kitchen_graph())
    return path


@pytest.fixture()
def kitchen_tools(kitchen_memory_path):
    with Memory.open(kitchen_memory_path, TestEmbedder(64)) as memory:
        yield MemoryTools(memory)


@pytest.fixture()
def fresh_memory(tmp_path):
    """An empty writable memory, for tests that change it."""
    with Memory.create(tmp_path / "memory", TestEmbedder(64)) as memory:
        yield memory


@pytest.fixture(scope="session")
def quickstart(tmp_path_factory):
    """The README's quick start, run once per session (tests/sample_support.py): its output and the sample
    memories it wrote."""
    from sample_support import run_quickstart

    return run_quickstart(tmp_path_factory.mktemp("quickstart"))
