"""Import memories in the MEMDREAMER release layout (formats/memdreamer.md §1) into memtools.

    <root>/<video_key>/phase4/hierarchical_graph_final.json            root, super and macro events
    <root>/<video_key>/phase2_topdown/episode_XXXX/[episode_XXXX/]step5_subgraph.json
    <root>/<video_key>/phase4/intermediate/step2p5_entity_unification.json   (optional: aliases)
    <root>/<video_key>/phase2_topdown/.../features/<ent>/best_frame.jpg       (optional: keyframes)
    <root>/<video_key>/embeddings.json                                         (optional, not used)

How it maps (the decisions a user should know):

* Video id = ``slugify_video_id(video_key)``. Super and macro ids keep their numbers
  (``macro_0012`` -> ``<video>/macro_0012``) when every id has one, else they are numbered
  by time; subgraph ids likewise (``slot30_ent_008`` -> ``<video>/macro_0012/ent_008``).
  ``VideoReport.id_map`` maps every original id to ours; nothing of theirs is stored in the
  nodes, so search payloads stay clean.
* A macro event's super comes from ``sub_macro_ids``, then ``subevent_relations`` (either
  direction), then the super event closest in time. Ordinals follow time.
* Subgraph times are made absolute (``+ start_sec``; left alone when they already are) and
  clipped into the macro event's range. Nodes whose subgraph has no ``slot_id`` or whose slot
  matches no macro event are dropped and counted.
* Edge labels are mapped onto our vocabulary with ``category_of`` given the endpoint kinds,
  plus a few documented synonyms (``memtools.memdreamer.values.SYNONYMS``): LEADS_TO between macro
  events reads as CAUSES; CAUSES/ENABLES between super events as LEADS_TO; BEFORE between
  macro events is dropped (their times already order them). Macro relations across super
  events are kept. Unknown labels, impossible endpoint pairs and dangling edges are dropped
  and counted.
* Entity unification groups become an ``aliases`` attribute ("canonical, variant, ...",
  matched on the entity name, case-insensitively), so search finds an entity by any of them.
* Their vectors are never read: memtools embeds its own payloads with the memory's
  embedder; the report notes an ``embeddings.json`` and its dimension.
* Keyframes: each entity's ``best_frame.jpg`` (nested or flat episode folder) is copied to
  ``memory.frames_dir(video)`` and becomes a Keyframe at the entity's primary time, with a
  DEPICTS edge to the entity.

A video that cannot be read is reported and skipped; the others still import. Each batch
is written whole (kuzu + lance in one step), and its frames, staged in ``work/.staged-frames/``,
are swapped in by that same write (``memtools.store.writes.frame_swap``), so nothing is ever half-written
and a replaced video keeps its old frames until its new version commits.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from memtools.errors import ImportFormatError, StoreError
from memtools.importers.bulk import ImportLedger
from memtools.memdreamer.export import export_memdreamer
from memtools.memdreamer.files import EMBEDDINGS_FILE, GRAPH_FILES, PHASE2_DIR, PHASE_DIRS, is_video_folder
from memtools.memdreamer.parse import FrameFile, MemdreamerVideo, parse_video
from memtools.memdreamer.report import ImportReport, VideoReport
from memtools.schema import VideoGraph, slugify_video_id
from memtools.store import Memory
from memtools.store.writes.frame_swap import discard, import_root, staged_folder

log = logging.getLogger(__name__)

# Structural surprises in untrusted files that parse_video did not foresee still only skip
# that one video (and are logged with their traceback).
_VIDEO_ERRORS = (ImportFormatError, ValidationError, ValueError, TypeError, KeyError, AttributeError, OSError)


def find_videos(root: str | Path) -> dict[str, Path]:
    """``{video_key: folder}`` under a release root, sorted; ``root`` may also be one video's folder."""
    root = Path(root)
    if not root.is_dir():
        raise ImportFormatError(f"{root} is not a folder")
    if is_video_folder(root):
        return {root.resolve().name: root}
    found = {p.name: p for p in sorted(root.iterdir()) if p.is_dir() and is_video_folder(p)}
    if not found:
        raise ImportFormatError(
            f"no MEMDREAMER videos under {root}: expected <video_key>/{PHASE_DIRS[0]}/{GRAPH_FILES[0]} "
            f"and <video_key>/{PHASE2_DIR}/ folders"
        )
    return found


@dataclass
class MemdreamerImport:
    """The parsed videos (checked graphs) and the report of the whole run."""

    videos: list[MemdreamerVideo] = field(default_factory=list)
    report: ImportReport = field(default_factory=lambda: ImportReport(root=""))

    @property
    def graphs(self) -> list[VideoGraph]:
        return [v.graph for v in self.videos]


def read_memdreamer(root: str | Path, videos: Sequence[str] | None = None) -> MemdreamerImport:
    """Parse a release into ``VideoGraph``s without writing anything.

    ``videos`` picks video keys (or their slugified ids); unknown ones are reported as skipped.
    """
    found = find_videos(root)
    result = MemdreamerImport(report=ImportReport(root=str(root)))
    keys = list(found) if not videos else list(dict.fromkeys(videos))
    by_slug = {slugify_video_id(k): k for k in found}
    ids: dict[str, str] = {}
    for wanted in keys:
        key = wanted if wanted in found else by_slug.get(wanted, wanted)
        if key not in found:
            some = ", ".join(list(found)[:5])
            result.report.videos.append(_skipped(key, f"no video folder {key!r} under {root} (found: {some})"))
            continue
        try:
            video = parse_video(key, found[key])
        except _VIDEO_ERRORS as exc:
            log.debug("skipping %s", key, exc_info=True)
            message = str(exc) if isinstance(exc, ImportFormatError) else f"{type(exc).__name__}: {exc}"
            result.report.videos.append(_skipped(key, message, found[key]))
            continue
        vid = video.graph.video_id
        if vid in ids:
            result.report.videos.append(_skipped(key, f"video id {vid!r} is already taken by {ids[vid]!r}",
                                                 found[key]))
            continue
        ids[vid] = key
        result.videos.append(video)
        result.report.videos.append(video.report)
    return result


def _skipped(key: str, error: str, folder: Path | None = None) -> VideoReport:
    return VideoReport(key=key, video_id=slugify_video_id(key), folder=str(folder or ""), status="skipped",
                       error=error)


def import_memdreamer(memory: Memory, root: str | Path, videos: Sequence[str] | None = None, *,
                      dry_run: bool = False, batch_size: int = 20,
                      progress: Callable[[VideoReport], None] | None = None,
                      resume_key: str | None = None) -> ImportReport:
    """Parse a release and write every readable video into ``memory`` (replacing same-id videos).

    Returns the report; videos that could not be read or written have ``status="skipped"``.
    ``progress`` is called with each video's report once it is written. With ``resume_key``
    (see ``importers.bulk``) a killed import run again skips the videos it had written.
    """
    parsed = read_memdreamer(root, videos)
    report = parsed.report
    report.memory, report.embedder, report.dry_run = str(memory.path), memory.manifest.embedder.name, dry_run
    dim = memory.manifest.embedder.dim
    for video in parsed.videos:
        notes = video.report.notes
        for i, note in enumerate(notes):
            if note.startswith(EMBEDDINGS_FILE):
                source_dim = video.report.source_embedding_dim
                notes[i] = (f"{EMBEDDINGS_FILE} ({source_dim or 'unknown'}-d) not used: memtools embeds every node "
                            f"with the memory's embedder ({report.embedder}, {dim}-d)")
    if dry_run:
        return report
    ledger = ImportLedger(memory, resume_key) if resume_key else None
    landed = ledger.landed() if ledger else set()
    if ledger:
        ledger.start()
    cache: dict[str, object] = {}  # every text embedded once for the whole import
    todo = []
    for video in parsed.videos:
        if video.graph.video_id in landed:
            video.report.status = "imported"  # by the interrupted run, in one atomic step
        else:
            todo.append(video)
    for start in range(0, len(todo), batch_size):
        batch = todo[start:start + batch_size]
        try:
            _write(memory, batch, cache)
        except StoreError as exc:  # isolate the video the store refused; the others still go in
            log.warning("writing a batch failed (%s); retrying its videos one by one", exc)
            for video in batch:
                try:
                    _write(memory, [video], cache)
                except StoreError as one:
                    video.report.status, video.report.error = "skipped", f"could not be written: {one}"
        for video in batch:
            if video.report.status != "skipped":
                video.report.status = "imported"
            if progress is not None:
                progress(video.report)
        if ledger:
            ledger.add([v.graph.video_id for v in batch if v.report.status == "imported"])
    if ledger:
        ledger.finish()
    return report


def _write(memory: Memory, batch: list[MemdreamerVideo], cache: dict[str, object] | None = None) -> None:
    """Stage frames, then write the graphs in one step that swaps the frames in (or throw them away)."""
    staged: dict[str, Path] = {}
    try:
        for video in batch:
            staged[video.graph.video_id] = _stage_frames(memory, video)
        memory.write_videos([v.graph for v in batch], batch_size=len(batch), embed_cache=cache,
                            staged_frames=dict.fromkeys(staged, import_root(memory.path)))
    except OSError as exc:
        discard(memory.path, staged.values())
        raise StoreError(f"could not copy keyframes: {exc}") from exc
    except BaseException:
        discard(memory.path, staged.values())
        raise


def _stage_frames(memory: Memory, video: MemdreamerVideo) -> Path:
    """Copy the video's keyframe images to its staged folder, and point the graph at their final place."""
    vid = video.graph.video_id
    final = memory.frames_dir(vid)
    staging = staged_folder(memory.path, final, import_root(memory.path))
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    relative = final.relative_to(memory.path).as_posix()
    paths = {f.name: f for f in video.frames}
    for keyframe in video.graph.keyframes:
        name = keyframe.path.rsplit("/", 1)[-1]
        frame: FrameFile = paths[name]
        shutil.copyfile(frame.source, staging / name)
        keyframe.path = f"{relative}/{name}"
    return staging


__all__ = ["FrameFile", "ImportReport", "MemdreamerImport", "MemdreamerVideo", "VideoReport", "export_memdreamer",
           "find_videos", "import_memdreamer", "read_memdreamer"]
