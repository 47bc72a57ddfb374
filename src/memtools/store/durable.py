"""Making a rename durable: the folder that holds it synced to disk."""

from __future__ import annotations

import os
from pathlib import Path


def sync_folder(folder: Path) -> None:
    """fsync ``folder``, so that a rename or unlink in it outlives a power cut. A filesystem that cannot
    sync a folder (some network and FUSE mounts) is left as it is: the rename itself stays atomic."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


__all__ = ["sync_folder"]
