"""``memtools check`` / ``repair`` for the keyframe images in ``frames/``.

Check: every keyframe the graph lists has its image, and each one decodes (a cut-short or
overwritten JPEG is found here, in ``check`` only: the per-read guard never opens images).
Repair: a lost or corrupt image is extracted again from the video's source file when that file
is still where the build read it; otherwise it cannot be derived, and the report says how to get
it back (``inspect_frames`` falls back to the source video meanwhile).
"""

from __future__ import annotations

import logging
import math
import os
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

from memtools.store.catalog.manifest import Manifest
from memtools.store.problems import Problem, Report, unreadable
from memtools.store.resources import raise_if_exhausted

if TYPE_CHECKING:
    from memtools.store.base import GraphReads, GraphStore

log = logging.getLogger(__name__)

PART = "frames"

JPEG_START, JPEG_END = b"\xff\xd8", b"\xff\xd9"
RESTORE_FRAMES = ("inspect_frames falls back to the source video; rebuild the video (`memtools build`) to store "
                  "them again")


def image_damage(file: Path) -> str | None:
    """Why a stored keyframe image is unusable (None if it decodes): gone, cut short, or not an image."""
    if not file.is_file():
        return "missing"
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise_if_exhausted(exc, "reading the keyframe images")
        return unreadable("unreadable", exc)
    if file.suffix.lower() in (".jpg", ".jpeg") and (not data.startswith(JPEG_START)
                                                     or JPEG_END not in data[-64:]):
        return "corrupt"  # libjpeg decodes a cut-short file into a grey-padded image: the end marker tells
    from memtools.errors import VideoError
    from memtools.video.encode import decode_jpeg

    try:
        decode_jpeg(data)
    except VideoError:
        return "corrupt"
    return None


def check_keyframe_files(path: Path, manifest: Manifest, frames: list[tuple[str, str]], report: Report,
                         graph: GraphReads | None = None) -> None:
    """Every keyframe image the graph lists exists and decodes (``frames``: (video id, path) pairs).
    ``graph``: to look up whether a damaged video's source file is still there (repair reads it)."""
    damaged: dict[tuple[str, str], list[str]] = defaultdict(list)
    for vid, relative in frames:
        if vid in manifest.videos:
            why = image_damage(path / relative)
            if why is not None:
                damaged[(vid, why)].append(relative)
    for (vid, why), paths in sorted(damaged.items()):
        what = "missing" if why == "missing" else "corrupt (they do not decode as images)"
        source = _source(graph, vid) if graph is not None else None
        report.problems.append(Problem(PART, f"{vid}: {len(paths)} keyframe image(s) {what}, e.g. {paths[0]}",
                                       source is not None, vid, restore=RESTORE_FRAMES))
    missing = sum(len(p) for (_, why), p in damaged.items() if why == "missing")
    corrupt = sum(len(p) for p in damaged.values()) - missing
    report.parts["frames"] = f"{len(frames)} keyframe(s), {missing} missing, {corrupt} corrupt"




def _source(graph: GraphReads, video_id: str) -> Path | None:
    """The video's source file, if it is still where the build read it."""
    video = graph.get(video_id)
    source = getattr(video, "source_path", "") or ""
    return Path(source) if source and Path(source).is_file() else None


def restore_images(root: Path, kuzu: GraphStore, problems: list[Problem], done: list[str]) -> list[str]:
    """Extract the lost or corrupt keyframe images of the videos ``check`` found repairable again from
    their source files; returns the videos whose images came back (their vectors are embedded again)."""
    from memtools.errors import VideoError
    from memtools.video import encode_jpeg, read_frame_at

    back = []
    for vid in sorted({p.video_id for p in problems if p.part == PART and p.repairable}):
        source = _source(kuzu, vid)
        if source is None:
            continue
        written = 0
        for keyframe in kuzu.keyframes(vid, 0.0, math.inf):
            if image_damage(root / keyframe.path) is None:
                continue
            try:
                data = encode_jpeg(read_frame_at(source, keyframe.t).image)
            except VideoError as exc:
                log.warning("could not extract keyframe %s again from %s: %s", keyframe.id, source, exc)
                continue
            _write(root / keyframe.path, data)
            written += 1
        if written:
            done.append(f"extracted {written} keyframe image(s) of {vid!r} again from its source video {source}")
            back.append(vid)
    return back


def _write(file: Path, data: bytes) -> None:
    """Write ``file`` whole or not at all (temp file + rename)."""
    file.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".memtools-", suffix=".jpg", dir=file.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, file)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
