"""Keyframes: the video module's rules pick them, this stage stores them as JPEG files.

Files are named by their timestamp (``000083.400.jpg`` is the frame at 83.4 s) and made in
the build's staging root (``work/<id>/staged/frames/<id>/``, ``memtools.store.writes.frame_swap``);
``Keyframe.path`` names their final place relative to the memory folder (``frames/<id>/...``),
where the write that commits the video swaps the whole folder in. The old version's frames
stay untouched until then. The list is checkpointed once every file is written, so a resumed
build reuses it (the files must still be staged).
The frames come from the build's single decoding pass (``memtools.builder.frames``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pydantic import BaseModel

from memtools.builder.checkpoint import Checkpoints, atomic_write_bytes
from memtools.video import Frame, KeyframeConfig, encode_jpeg

CHECKPOINT = "keyframes"


class StoredKeyframe(BaseModel):
    t: float
    path: str  # relative to the memory folder
    n: int | None = None  # a stable id number (live builds thin keyframes out); None: its position


def keyframe_file_name(t: float) -> str:
    return f"{t:010.3f}.jpg"


def stored_keyframes(checkpoints: Checkpoints, memory_root: Path) -> list[StoredKeyframe] | None:
    """The keyframes of an earlier run, if it finished writing them (``memory_root``: the staging root)."""
    cached = checkpoints.load(CHECKPOINT)
    if cached is None:
        return None
    stored = [StoredKeyframe.model_validate(k) for k in cached]
    return stored if all((memory_root / k.path).is_file() for k in stored) else None


class KeyframeWriter:
    """Writes the keyframes it is given (in time order), then the checkpoint that lists them.
    ``frames_dir`` is under ``memory_root`` as the final folder is under the memory."""

    def __init__(self, config: KeyframeConfig, frames_dir: Path, memory_root: Path, checkpoints: Checkpoints) -> None:
        self.config = config
        self.frames_dir, self.memory_root, self.checkpoints = frames_dir, memory_root, checkpoints
        self.stored: list[StoredKeyframe] = []
        if frames_dir.exists():
            shutil.rmtree(frames_dir)  # frames an earlier, unfinished run of this build staged
        frames_dir.mkdir(parents=True, exist_ok=True)

    def add(self, frame: Frame) -> None:
        t = round(frame.t, 3)
        target = self.frames_dir / keyframe_file_name(t)
        atomic_write_bytes(target, encode_jpeg(frame.image))
        self.stored.append(StoredKeyframe(t=t, path=target.relative_to(self.memory_root).as_posix()))

    def finish(self) -> list[StoredKeyframe]:
        self.checkpoints.save(CHECKPOINT, [k.model_dump() for k in self.stored])
        return self.stored
