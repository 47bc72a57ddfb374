"""A video's keyframe folder replaced whole, under the write journal (``memtools.store.writes.batch``).

The keyframe files of a new version are made in a *staging root*, a folder laid out like the
memory (``<root>/frames/<id>/<file>``), while the graph's ``Keyframe.path`` already names the
final place (``frames/<id>/<file>``, relative to the memory). A build stages in its checkpoint
folder (``work/<id>/staged/``), so a failed or killed build leaves the old frames untouched and
a resumed one reuses what it staged; importers stage in ``work/.staged-frames/``.

The write that commits the video records the staged folder in its journal (``plan``, before
anything changes), then takes it over (``stage``: renamed to ``.frames-swap/<token>/new/``, the
write's own place beside ``frames/``, so neither ``check`` nor a later build staging the same
video again can mistake it) and, after the graph commit, swaps it in (``swap_in``): the old
folder is moved aside to ``.frames-swap/<token>/old/``, the new one renamed into place, and
``.frames-swap`` is removed at the end of the write (``clean``). A delete moves the folder
aside the same way. A write that fails before its commit puts the staged folder back
(``unstage``) for a resumed build.

The next writer's ``recovery.recover`` calls ``recover``: token in the graph, the swap is
finished (a new folder still held goes in; a deleted video's folder goes); token absent, the
old folder was never moved and the staged folder goes back. Every step is one rename, so the
old or the new frames are whole at every kill point.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from memtools.errors import StoreError
from memtools.schema import VideoGraph
from memtools.store.faults import fault_point
from memtools.store.integrity.checker import JOURNAL_FILE

STAGED = "staged"  # a build's staging root: work/<id>/staged/
IMPORTS = Path("work") / ".staged-frames"  # the importers' staging root, relative to the memory
SWAP = ".frames-swap"  # <memory>/.frames-swap/<token>/{new,old}/<folder name>: the folders a write holds

FramesDir = Callable[[str], Path]  # video id -> its final keyframe folder (``Memory.frames_dir``)


def staging_root(work_dir: Path) -> Path:
    """Where a build of the video whose checkpoints are in ``work_dir`` makes its keyframe files."""
    return Path(work_dir) / STAGED


def import_root(memory_path: Path) -> Path:
    """Where importers stage keyframe files (one root for every video of an import)."""
    return Path(memory_path) / IMPORTS


def staged_folder(memory_path: Path, frames_dir: Path, root: Path) -> Path:
    """The folder under staging ``root`` that becomes ``frames_dir`` (the same path, relative)."""
    return Path(root) / Path(frames_dir).relative_to(memory_path)


def plan(memory_path: Path, frames_dir: FramesDir, graphs: Sequence[VideoGraph],
         staged: Mapping[str, Path]) -> dict[str, str]:
    """Check the staged folder of each video of ``graphs`` that has one and keep only the files
    its graph lists; returns video id -> staged folder relative to the memory (for the journal).
    Raises ``StoreError`` before anything changed when a listed file is not staged."""
    out: dict[str, str] = {}
    root = Path(memory_path).resolve()
    for graph in graphs:
        if graph.video_id not in staged:
            continue
        final = frames_dir(graph.video_id)
        folder = staged_folder(memory_path, final, staged[graph.video_id])
        try:
            relative = folder.resolve().relative_to(root)
        except ValueError:
            raise StoreError(f"the staged keyframes of {graph.video_id!r} ({folder}) must be inside the memory "
                             f"folder {memory_path}, to be renamed into place") from None
        prefix = final.relative_to(memory_path).as_posix() + "/"
        listed = {k.path[len(prefix):] for k in graph.keyframes if k.path.startswith(prefix)}
        strays = [k.path for k in graph.keyframes if not k.path.startswith(prefix)]
        missing = sorted(name for name in listed if not (folder / name).is_file())
        if strays or missing:
            what = f"keyframe {strays[0]} is not in {prefix}" if strays else f"{len(missing)} staged keyframe " \
                f"file(s) are missing from {folder}, e.g. {missing[0]}"
            raise StoreError(f"refusing to write {graph.video_id!r}: {what}; build the video again")
        folder.mkdir(parents=True, exist_ok=True)
        for path in folder.iterdir():  # temp files of a killed run, frames thinned out before the write
            if path.name not in listed:
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        out[graph.video_id] = relative.as_posix()
    return out


def discard(memory_path: Path, folders: Iterable[Path]) -> None:
    """Remove staged folders of a write that failed, unless its journal is pending: a failure
    after the graph commit is finished by the next writer, which may still need them."""
    if not (Path(memory_path) / JOURNAL_FILE).exists():
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)


def _held(memory_path: Path, token: str, final: Path, which: str) -> Path:
    """The write ``token``'s copy of a keyframe folder: "new" (staged, taken over) or "old" (moved aside)."""
    return Path(memory_path) / SWAP / token / which / final.name


def stage(memory_path: Path, frames_dir: FramesDir, folders: Mapping[str, str], token: str) -> None:
    """After the journal: take each staged folder over (renamed to the write's own place, so a
    later build staging the same video again cannot be mistaken for it)."""
    for vid, relative in folders.items():
        held = _held(memory_path, token, frames_dir(vid), "new")
        held.parent.mkdir(parents=True, exist_ok=True)
        os.replace(Path(memory_path) / relative, held)
    fault_point("frames-staged")


def unstage(memory_path: Path, frames_dir: FramesDir, folders: Mapping[str, str], token: str) -> None:
    """Undo ``stage`` (the write did not commit): the staged folders go back for a resumed build."""
    for vid, relative in folders.items():
        held, staged = _held(memory_path, token, frames_dir(vid), "new"), Path(memory_path) / relative
        if held.is_dir() and not staged.exists():
            staged.parent.mkdir(parents=True, exist_ok=True)
            os.replace(held, staged)
    clean(memory_path)


def swap_in(memory_path: Path, frames_dir: FramesDir, folders: Mapping[str, str], token: str) -> None:
    """After the graph commit: each video's old folder aside, its new one into place."""
    for vid in folders:
        final = frames_dir(vid)
        held = _held(memory_path, token, final, "new")
        if not held.is_dir():
            continue  # swapped in already (a recovery finishing the write)
        move_aside(memory_path, final, token)
        final.parent.mkdir(parents=True, exist_ok=True)
        os.replace(held, final)
        fault_point("frames-swapped")


def move_aside(memory_path: Path, final: Path, token: str) -> None:
    """Move ``final`` (if there) to the write's aside folder, removed by ``clean``."""
    if final.exists():
        target = _held(memory_path, token, final, "old")
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(final, target)
        fault_point("frames-aside")


def clean(memory_path: Path) -> None:
    """Remove what writes held (their old folders, staged folders of undone writes): the write
    that held them is finished or undone."""
    shutil.rmtree(Path(memory_path) / SWAP, ignore_errors=True)


def recover(memory_path: Path, frames_dir: FramesDir, op: str, videos: Sequence[str], folders: Mapping[str, str],
            token: str, committed: bool) -> None:
    """Finish (``committed``) or undo the frames part of a killed write, then ``clean``. Only
    the writer and this touch the write's own folders, so what is there says how far it got."""
    if not committed:  # the swap starts after the commit: the old folders were never moved
        unstage(memory_path, frames_dir, folders, token)
        return
    if op == "delete":
        for vid in videos:
            move_aside(memory_path, frames_dir(vid), token)
    swap_in(memory_path, frames_dir, folders, token)
    clean(memory_path)
