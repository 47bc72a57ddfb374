"""The face clusters of each video: ``faces/<video_id>.json`` in the memory folder (biometric data: docs/faces.md).

    save_faces(memory.path, "talk", faces)     # written whole (temporary file, then rename)
    load_faces(memory.path, "talk")            # [] for a video without (or a memory from before faces)
    remove_faces(memory.path, "talk")          # forget them (deleting the video does too)

One small JSON file per video, ``{"video_id", "faces": [{"label", "centroid", "sightings", "seconds"}]}``:
each face cluster ``F1``, ``F2``, ... (numbered in order of first appearance) with its centroid, the
**raw** mean of its sightings' 128-number dlib ResNet descriptors (not unit-normalised: dlib's
descriptors are compared by euclidean distance, the same person mostly under 0.6), every sighting
(the keyframe's time and id, the face's box in that keyframe's pixels, its macro event) and the
seconds it is on screen. Only the build's ``--faces`` or ``memtools repair --faces`` writes this
file; a memory without a ``faces/`` folder opens as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from memtools.store.tables.per_video import per_video_file, read_rows, write_whole

FOLDER = "faces"


class Sighting(BaseModel):
    """One face on one keyframe: the keyframe's time (s) and id, the box ``[x0, y0, x1, y1]`` in its pixels."""

    t: float = Field(ge=0)
    keyframe: str
    box: list[int] = Field(min_length=4, max_length=4)
    macro_id: str | None = None


class Face(BaseModel):
    """One face cluster of a video: its label, the raw mean descriptor, where it was seen, for how long."""

    label: str
    centroid: list[float]
    sightings: list[Sighting] = Field(default_factory=list)
    seconds: float = Field(0.0, ge=0)


def faces_path(memory_path: Path, video_id: str) -> Path:
    return per_video_file(memory_path, FOLDER, video_id)


def save_faces(memory_path: Path, video_id: str, faces: Sequence[Face]) -> None:
    write_whole(faces_path(memory_path, video_id),
                {"video_id": video_id, "faces": [f.model_dump(mode="json") for f in faces]})


def remove_faces(memory_path: Path, video_id: str) -> None:
    """Forget a video's faces (the video was deleted, or the user asked)."""
    faces_path(memory_path, video_id).unlink(missing_ok=True)


def load_faces(memory_path: Path, video_id: str) -> list[Face]:
    rows = read_rows(faces_path(memory_path, video_id), "faces")
    try:
        return [Face.model_validate(f) for f in rows or []]
    except ValidationError:
        return []  # a damaged file only loses the clusters; repair --faces writes it again
