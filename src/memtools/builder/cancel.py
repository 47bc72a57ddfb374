"""Cancelling a build: it stops at its next safe point, and what it left is undone.

    before = state_before(memory, "talk")           # recorded once, before the build first runs
    with watching(lambda: book.get(job_id).cancel_requested):
        await abuild_video(memory, vlm, "talk.mp4")  # raises BuildCancelled at the next safe point
    ...
    undo_build(memory, "talk", before)              # the memory as it was before that video

**Safe points** are the build's progress steps (``Progress.begin`` / ``Progress.advance``) of the
stages that come before anything of the video is written to the memory: speech, speakers,
keyframes, segment (each window), extract (each macro event) and aggregate (each chunk). Up to
there a build has changed only its own checkpoints (``work/<video>/``, keyframe files staged
in it) and, for a video the memory did not hold whole, its status in the list (``building``).
From the index stage on (voice and face files saved, texts embedded, the write) there is no safe
point: a cancel that comes then is too late, and the video lands whole.

The check is a function the caller passes (``watching``): the job runner asks the jobs book,
which every process on the memory shares, so a cancel asked for in another process stops the
build too. Without ``watching`` (``memtools build``, live builds) safe points cost nothing.

``undo_build`` puts back what the build changed: the video's list entry as it was (none, or
``failed`` from an earlier build), and ``work/<video>/`` removed when it was not there before
(kept when it was: those checkpoints belong to an earlier build the same video may resume). A
video the memory held whole before (a rebuild) is not touched: a rebuild changes it only in its
write. Running it again is harmless, so a runner that died halfway through it does it again.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from memtools.errors import MemtoolsError

if TYPE_CHECKING:
    from memtools.store import Memory

SAFE_STAGES = frozenset({"speech", "speakers", "keyframes", "segment", "extract", "aggregate"})
"""The stages whose progress steps are safe points: nothing of the video is in the memory yet."""

_REQUESTED: ContextVar[Callable[[], bool] | None] = ContextVar("memtools_build_cancel", default=None)


class BuildCancelled(MemtoolsError):
    """The build stopped at a safe point because a cancel was asked for."""


@contextlib.contextmanager
def watching(requested: Callable[[], bool]) -> Iterator[None]:
    """Builds started inside (on this thread, and the tasks and threads they start) stop at the next safe point
    once ``requested()`` is true."""
    token = _REQUESTED.set(requested)
    try:
        yield
    finally:
        _REQUESTED.reset(token)


def safe_point(stage: str) -> None:
    """Raise ``BuildCancelled`` if a cancel was asked for and ``stage`` is before the write."""
    requested = _REQUESTED.get()
    if requested is not None and stage in SAFE_STAGES and requested():
        raise BuildCancelled(f"the build was cancelled (it stopped in its {stage} stage, before writing)")


def state_before(memory: Memory, video_id: str) -> dict[str, Any]:
    """What ``undo_build`` restores: the video's status in the list (None: not listed) and whether its
    checkpoint folder existed."""
    memory.refresh()
    entry = memory.manifest.videos.get(video_id)
    return {"status": entry.status if entry is not None else None, "work": memory.work_dir(video_id).exists()}


def undo_build(memory: Memory, video_id: str, before: dict[str, Any]) -> None:
    """Put back what a cancelled build of ``video_id`` changed (see the module's text). Refuses to touch a video
    that became ready since ``before``: its write landed, so there is nothing to cancel."""
    memory.refresh()
    entry = memory.manifest.videos.get(video_id)
    status = before.get("status")
    if entry is not None and entry.status == "ready" and status != "ready":
        raise MemtoolsError(f"video {video_id!r} was written before the cancel took effect; forget_video "
                            "removes it")
    if status != "ready":
        if status is None and entry is not None:
            memory.delete_video(video_id)  # a list entry only (building / failed): no rows, vectors or frames
        elif status is not None and entry is not None and entry.status != status:
            memory.set_status(video_id, status)
    if not before.get("work"):
        shutil.rmtree(memory.work_dir(video_id), ignore_errors=True)
