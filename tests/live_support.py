"""Shared by the live-build tests and benchmark: chunk files written the way a segmenter writes them,
a perception backend the test controls, and the ``memtools build --follow`` command line.

Chunks are mp4 files of ``CHUNK_SEC`` seconds at 5 fps whose picture changes every 10 s. Each
is written under a temporary folder and renamed into the followed folder, so the live build
never sees half a chunk. (A growing mp4 cannot be read before its index is written; appendable
containers like MPEG-TS or raw MJPEG can, and ``test_live_build`` follows a growing raw MJPEG
file too.)
"""

from __future__ import annotations

import os
import sys
import tempfile
import textwrap
from pathlib import Path

from synthetic_video import scene, write_video

CHUNK_SEC, FPS = 20, 5
CONFIG = ('[build]\npreset = "short"\nwindow_sec = 20\nframes_per_window = 8\nframes_per_macro = 4\n'
          'min_episode_sec = 5\n')

BACKEND = textwrap.dedent('''
    """A perception backend the test controls: logs every request key, answers after a delay."""
    import asyncio
    import os

    from memtools.builder.testing import ScriptedPerception
    from memtools.perception import FunctionVLM, request_key

    _script = ScriptedPerception(episode_sec=10)


    async def _answer(request):
        log = os.environ.get("FAKE_VLM_LOG")
        if log:
            with open(log, "a") as handle:
                handle.write(request_key(request) + "\\n")
        await asyncio.sleep(float(os.environ.get("FAKE_VLM_DELAY", "0")))
        return _script(request)


    def make():
        return FunctionVLM(_answer)
''')


def write_chunk(folder: Path, index: int) -> Path:
    """``segment_<index>.mp4``, written elsewhere and renamed into ``folder`` (atomic)."""
    frames = [scene(index * 2 + i // (10 * FPS)) for i in range(CHUNK_SEC * FPS)]
    with tempfile.TemporaryDirectory(dir=folder.parent) as tmp:
        path = write_video(Path(tmp) / f"segment_{index:03d}.mp4", frames, fps=FPS)
        target = folder / path.name
        os.replace(path, target)
    return target


def setup(tmp_path: Path) -> tuple[Path, Path]:
    """The backend module and the config file in ``tmp_path``; returns (config, chunk folder)."""
    (tmp_path / "fake_backend.py").write_text(BACKEND)
    config = tmp_path / "memtools.toml"
    config.write_text(CONFIG)
    chunks = tmp_path / "chunks"
    chunks.mkdir()
    return config, chunks


def follow_args(source: Path, memory: Path, config: Path, *extra: str) -> list[str]:
    return ["build", "--follow", str(source), "--memory", str(memory), "--vlm", "python:fake_backend:make",
            "--embedder", "test:64", "--config", str(config), *extra]


def command(args: list[str]) -> list[str]:
    return [sys.executable, "-c", "import sys; from memtools.cli import main; sys.exit(main(sys.argv[1:]))", *args]


def env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]), **extra}
