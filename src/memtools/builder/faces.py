"""The faces stage of a build (``--faces``) and ``memtools repair --faces``: faces on the stored keyframes.

    faces = await find_faces(model, graph.keyframes, frames_root, checkpoints)    # in a build, before the write
    lines = add_faces(memory, DlibFaces())                                        # repair: every ready video

Each keyframe's JPEG is read back (the build's staged copy, or the memory's ``frames/`` for a
repair), its faces found and described (``memtools.faces.models``), then tracked within macro
events and clustered per video (``memtools.faces.tracks``); the clusters are saved as
``faces/<video_id>.json`` (``memtools.store.tables.faces``) once the video is written. A build
checkpoints them as ``faces/done`` so a resumed build does not look again. A repair needs only the
stored keyframes (not the source video), replaces the file each time, and changes nothing else.
Nothing here imports dlib: the model is handed in.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from memtools.builder.checkpoint import Checkpoints
from memtools.builder.repair_videos import Lines, stored_videos
from memtools.errors import VideoError
from memtools.faces.models import FaceModel
from memtools.faces.tracks import Seen, cluster_faces
from memtools.schema import Keyframe
from memtools.store import Memory
from memtools.store.tables.faces import Face, save_faces
from memtools.video import decode_jpeg

STAGE = "faces/done"


def keyframe_gap(keyframes: Sequence[Keyframe]) -> float:
    """The usual (median) seconds between keyframes: what one sighting stands for."""
    times = np.unique([k.t for k in keyframes])
    return float(np.median(np.diff(times))) if len(times) > 1 else 0.0


def faces_on_keyframes(model: FaceModel, keyframes: Sequence[Keyframe], root: Path) -> tuple[list[Face], int]:
    """Blocking: the face clusters of one video's keyframes (files under ``root``), and how many files were read."""
    seen: list[Seen] = []
    read = 0
    for k in keyframes:
        try:
            image = decode_jpeg((root / k.path).read_bytes())
        except (OSError, VideoError):
            continue  # a missing or damaged keyframe file: `memtools check` reports it; its faces are not seen
        read += 1
        for found in model.find(np.ascontiguousarray(image[:, :, ::-1])):  # BGR -> RGB
            seen.append(Seen(keyframe=k.id, t=k.t, box=found.box, vector=found.vector, macro_id=k.macro_id))
    return cluster_faces(seen, step=keyframe_gap(keyframes)), read


async def find_faces(model: FaceModel, keyframes: Sequence[Keyframe], root: Path,
                     checkpoints: Checkpoints) -> list[Face]:
    """The video's face clusters, from the checkpoint when this stage ran before on the same keyframes."""
    ids = [k.id for k in keyframes]
    saved = checkpoints.load(STAGE)
    if isinstance(saved, dict) and saved.get("model") == model.name and saved.get("keyframes") == ids:
        return [Face.model_validate(f) for f in saved.get("faces", [])]
    faces, _ = await asyncio.to_thread(faces_on_keyframes, model, keyframes, root)
    checkpoints.save(STAGE, {"model": model.name, "keyframes": ids,
                             "faces": [f.model_dump(mode="json") for f in faces]})
    return faces


def add_faces(memory: Memory, model: FaceModel, *, video_ids: Sequence[str] | None = None,
              progress: Callable[[str], None] | None = None) -> list[str]:
    """Find and cluster the faces of each video's stored keyframes; one line per video says what happened."""
    say = Lines(progress)
    saved = False
    for vid, stored in stored_videos(memory, video_ids, say):
        if not stored.keyframes:
            say(f"{vid}: no keyframes; nothing to look at")
            continue
        faces, read = faces_on_keyframes(model, stored.keyframes, memory.path)
        if read == 0:
            say(f"{vid}: none of its {len(stored.keyframes)} keyframe files could be read; faces left as they were "
                f"(memtools check --memory {memory.path} says what is missing)")
            continue
        save_faces(memory.path, vid, faces)
        saved = True
        sightings = sum(len(f.sightings) for f in faces)
        say(f"{vid}: {len(faces)} face(s) in {sightings} sighting(s) on {read} keyframe(s)")
    if saved:  # the library's people (library.sqlite) place the new face clusters
        from memtools.store.library import layer

        with memory.reading() as graph:
            layer.rebuild(memory, graph, memory.manifest.generation)
    return say.lines
