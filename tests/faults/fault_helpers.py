"""Fault injection helpers: a memory of two videos, copied fresh for each test so a test may break it.

Every test ends with ``memtools check`` clean (after ``memtools repair`` where the damage is
derivable) or with a clear refusal that names the damage and the command that fixes it; none
may lose a video silently.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memtools.cli import main
from memtools.embed.testing import TestEmbedder
from memtools.store import Memory
from memtools.testing import kitchen_graph

VIDEOS = ("kitchen", "k2")
EMBEDDER = TestEmbedder(64)


@pytest.fixture(scope="session")
def template(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("faults") / "memory"
    with Memory.create(path, EMBEDDER) as memory:
        memory.write_videos([kitchen_graph(v) for v in VIDEOS])
    return path


@pytest.fixture()
def mem(template, tmp_path) -> Path:
    """A private copy of the two-video memory."""
    path = tmp_path / "memory"
    shutil.copytree(template, path)
    return path


def cli(*argv: str, capsys) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def check(path: Path, capsys) -> tuple[int, str]:
    code, out, _ = cli("check", "--memory", str(path), capsys=capsys)
    return code, out


def searchable(path: Path) -> set[str]:
    """The videos a search for the pan fire finds (both videos hold it)."""
    from memtools.tools import MemoryTools

    with Memory.open(path, EMBEDDER) as memory:
        hits = MemoryTools(memory).search_nodes("the pan catches fire", top_k=50).hits
    return {h.video_id for h in hits}


def run_python(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    src = Path(__file__).resolve().parents[2] / "src"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(src)})
