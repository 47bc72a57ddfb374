"""One build of a video at a time in a memory: the same build started twice at once (a retried command,
two servers given the same file) waits for the first, then finds its checkpoints, or the video done.

Two builds of one video share its checkpoint folder (``work/<id>/``): a second one that starts before the
first has recorded its state would discard the folder under it. The turn is a lock file per video under
``work/.build-turns/`` (never removed: a waiting build may hold it open).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from memtools.store.file_lock import lock_waiting, unlock

if TYPE_CHECKING:
    from memtools.store import Memory

log = logging.getLogger(__name__)

TURNS = ".build-turns"


def take_build_turn(memory: Memory, video_id: str) -> Callable[[], None]:
    """Wait for the turn to build ``video_id`` (saying so once); returns what gives it back."""
    folder = memory.path / "work" / TURNS
    folder.mkdir(parents=True, exist_ok=True)
    handle = open(folder / f"{video_id}.lock", "a+")  # noqa: SIM115 - held until the release
    lock_waiting(handle, lambda: log.warning("another build of %s is running in %s; waiting for it to finish",
                                             video_id, memory.path))

    def release() -> None:
        unlock(handle)
        handle.close()

    return release
