"""``export_memory``: a memory as one portable, versioned archive (``memtools export``; docs/export.md).

    from memtools.archive import export_memory
    export_memory("my-memory", "my-memory.zip")                          # graphs, texts, times, people
    export_memory("my-memory", "all.zip", with_biometrics=True, with_keyframes=True)

Every ready video is read back whole through the store (``GraphReads.video_graphs``), with its
catalog entry, the library ids its entities and people have, its clusters, and the vectors of
every text a write embeds for it (``memtools.archive.texts``). Voice and face centroids are
biometric data: only ``with_biometrics`` carries them. Keyframe images come with ``with_keyframes``.

The export reads while other processes may write: it notes the memory's generation first and
checks it at the end; a memory written meanwhile is exported again (up to ``ATTEMPTS`` times).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from memtools.archive import format as fmt
from memtools.archive.texts import SourceVectors, video_texts
from memtools.archive.writer import ArchiveWriter
from memtools.errors import MemoryBusy, StoreError
from memtools.schema import SCHEMA_VERSION, VideoGraph
from memtools.store import Memory
from memtools.store.catalog.manifest import now
from memtools.store.integrity.library_check import salvage
from memtools.store.library.layer import LIBRARY
from memtools.store.library.layer import generation as layer_generation
from memtools.store.tables.faces import load_faces
from memtools.store.tables.voices import load_voices
from memtools.version import __version__

log = logging.getLogger(__name__)

READ_BATCH = 50  # videos read back from the graph (and their lance rows) at a time
ATTEMPTS = 3
COUNTED = ("super", "macro", "entity", "event", "ocr", "speech", "keyframe", "edges")


@dataclass
class ExportReport:
    """What an export wrote."""

    path: Path
    videos: int = 0
    texts: int = 0
    unstored: int = 0  # texts a write may embed whose vectors the memory does not hold (an import embeds them)
    clusters: int = 0
    library_ids: int = 0
    biometric_files: int = 0
    frames: int = 0
    bytes: int = 0
    notes: list[str] = field(default_factory=list)

    def render(self) -> str:
        lines = [f"Exported {self.videos} video(s) to {self.path} ({self.bytes / 2**20:.1f} MiB): "
                 f"{self.texts} text vector(s), {self.clusters} people cluster(s), {self.library_ids} library id(s), "
                 f"{self.biometric_files} biometric file(s), {self.frames} keyframe image(s)."]
        if self.unstored:
            lines.append(f"{self.unstored} text(s) have no stored vector: an import embeds those it needs.")
        lines += self.notes
        return "\n".join(lines)


def export_memory(memory: Memory | str | os.PathLike, out: str | os.PathLike, *, with_biometrics: bool = False,
                  with_keyframes: bool = False, overwrite: bool = False,
                  progress: Callable[[int], None] | None = None) -> ExportReport:
    """Write ``memory`` (an open ``Memory`` or its folder) to the archive ``out``; returns what was written.
    ``overwrite``: replace an existing ``out`` (else refused). ``progress(n)``: after each batch of videos."""
    if not isinstance(memory, Memory):
        with Memory.open(memory) as opened:
            return export_memory(opened, out, with_biometrics=with_biometrics, with_keyframes=with_keyframes,
                                 overwrite=overwrite, progress=progress)
    for _ in range(ATTEMPTS):
        memory.refresh()
        before = memory.manifest.generation
        report = _export(memory, Path(out), with_biometrics, with_keyframes, overwrite, progress, before)
        if report is not None:
            return report
    raise MemoryBusy(f"{memory.path} was written {ATTEMPTS} times while it was being exported; export it again "
                     "when it is not being written")


def _export(memory: Memory, out: Path, biometrics: bool, keyframes: bool, overwrite: bool,
            progress: Callable[[int], None] | None, before: int) -> ExportReport | None:
    """One attempt: the archive, or None (nothing left behind) when the memory changed meanwhile."""
    writer = ArchiveWriter(out, overwrite=overwrite)
    try:
        report, manifest = _write_members(memory, writer, biometrics, keyframes, progress)
        memory.refresh()
        if memory.manifest.generation != before:
            log.info("%s was written during its export; exporting again", memory.path)
            writer.abandon()
            return None
        writer.finish(manifest)
    except BaseException:
        writer.abandon()
        raise
    report.bytes = out.stat().st_size
    return report


def _write_members(memory: Memory, writer: ArchiveWriter, biometrics: bool, keyframes: bool,
                   progress: Callable[[int], None] | None) -> tuple[ExportReport, fmt.ArchiveManifest]:
    report = ExportReport(writer.out)
    ids = memory.manifest.videos.ids(status="ready")
    counts = dict.fromkeys(COUNTED, 0)
    source = SourceVectors(memory)
    chunks = _Chunks(writer)
    frames: list[tuple[str, Path]] = []
    with writer.member(fmt.VIDEOS) as videos:
        for start in range(0, len(ids), READ_BATCH):
            batch = ids[start:start + READ_BATCH]
            with memory.reading() as graph:
                graphs = graph.video_graphs(batch)
            source.read(batch)
            for vid in batch:
                g = graphs.get(vid)
                if g is None:
                    raise StoreError(f"the catalog lists video {vid!r} but the graph cannot read it back; run "
                                     f"memtools check --memory {memory.path}")
                videos.write((g.model_dump_json() + "\n").encode("utf-8"))
                _count(counts, g)
                report.unstored += chunks.add(g, source)
                if keyframes:
                    frames += _frame_files(memory, g)
            report.videos += len(batch)
            if progress:
                progress(report.videos)
    report.texts = chunks.finish()
    _catalog(memory, writer, ids)
    report.library_ids, report.clusters = _library(memory, writer, set(ids))
    if biometrics:
        report.biometric_files = _biometrics(memory, writer, ids)
    for name, path in frames:
        writer.add_file(name, path)
    report.frames = len(frames)
    manifest = fmt.ArchiveManifest(
        memtools_version=__version__, created_at=now(), source_engine=memory.graph_engine.name,
        schema_version=SCHEMA_VERSION, embedder=fmt.EmbedderName(**memory.manifest.embedder.model_dump()),
        image_embedder=(fmt.EmbedderName(**memory.manifest.image_embedder.model_dump())
                        if memory.manifest.image_embedder else None),
        contents=fmt.Contents(vectors=True, biometrics=biometrics, keyframes=keyframes),
        counts={"videos": report.videos, **counts, "texts": report.texts, "clusters": report.clusters,
                "library_ids": report.library_ids, "biometric_files": report.biometric_files,
                "frames": report.frames},
        chunks=chunks.count)
    return report, manifest


def _count(counts: dict[str, int], g: VideoGraph) -> None:
    for key, items in (("super", g.supers), ("macro", g.macros), ("entity", g.entities), ("event", g.events),
                       ("ocr", g.ocr), ("speech", g.speech), ("keyframe", g.keyframes), ("edges", g.edges)):
        counts[key] += len(items)


class _Chunks:
    """The text vectors, written ``CHUNK_ROWS`` at a time; each text once."""

    def __init__(self, writer: ArchiveWriter) -> None:
        self.writer, self.count, self.total = writer, 0, 0
        self.seen: set[str] = set()
        self.texts: list[str] = []
        self.vectors: list[np.ndarray] = []

    def add(self, graph: VideoGraph, source: SourceVectors) -> int:
        """Add the texts of ``graph`` whose vectors the memory holds; returns how many it does not hold."""
        found = source.vectors(graph)
        wanted = [t for t in video_texts(graph, found.get) if t not in self.seen]
        texts = [t for t in wanted if t in found]
        for text in texts:
            self.seen.add(text)
            self.texts.append(text)
            self.vectors.append(np.asarray(found[text], dtype=np.float32))
        if len(self.texts) >= fmt.CHUNK_ROWS:
            self._flush()
        return len(wanted) - len(texts)

    def _flush(self) -> None:
        if not self.texts:
            return
        texts_name, vectors_name = fmt.chunk_names(self.count)
        self.writer.add(texts_name, "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in self.texts).encode())
        self.writer.add_npy(vectors_name, np.stack(self.vectors))
        self.count += 1
        self.total += len(self.texts)
        self.texts, self.vectors = [], []

    def finish(self) -> int:
        self._flush()
        return self.total


def _catalog(memory: Memory, writer: ArchiveWriter, ids: Sequence[str]) -> None:
    starts = memory.recorded_starts(ids)
    with writer.member(fmt.CATALOG) as handle:
        for vid in ids:
            entry = memory.manifest.videos[vid]
            start = starts.get(vid)
            row = fmt.CatalogRow(video_id=vid, title=entry.title, duration=entry.duration, status=entry.status,
                                 updated_at=entry.updated_at, recorded_at=start.isoformat() if start else None,
                                 counts=entry.counts)
            handle.write((row.model_dump_json() + "\n").encode("utf-8"))


def _library(memory: Memory, writer: ArchiveWriter, ids: set[str]) -> tuple[int, int]:
    """The library ids and counters the layer remembers, and its clusters when it matches the memory."""
    file = memory.path / LIBRARY
    rows, counters = salvage(file) if file.is_file() else ((), {})
    kept = [fmt.LibraryId(video_id=v, entity_type=t, key=k, lib_id=lib) for v, t, k, lib in rows if v in ids]
    with writer.member(fmt.LIBRARY_IDS) as handle:
        for row in kept:
            handle.write((row.model_dump_json() + "\n").encode("utf-8"))
    writer.add_json(fmt.COUNTERS, fmt.Counters(**{k: v for k, v in counters.items()
                                                  if k in ("next_number", "next_person")}).model_dump())
    clusters: list[fmt.ClusterRow] = []
    if layer_generation(memory.path) == memory.manifest.generation:
        with contextlib.closing(sqlite3.connect(f"file:{file}?mode=ro", uri=True)) as conn:
            with contextlib.suppress(sqlite3.OperationalError):  # a layer made before people: none
                clusters = [fmt.ClusterRow(video_id=v, kind=k, label=label, name=name, user_named=bool(user),
                                           spans=[tuple(s) for s in json.loads(spans)], canonical_id=canonical,
                                           person_id=person)
                            for v, k, label, name, user, spans, canonical, person in conn.execute(
                                "SELECT video_id, kind, label, name, user_named, spans, canonical_id, person_id "
                                "FROM clusters ORDER BY video_id, kind, label") if v in ids]
    with writer.member(fmt.CLUSTERS) as handle:
        for cluster in clusters:
            handle.write((cluster.model_dump_json() + "\n").encode("utf-8"))
    return len(kept), len(clusters)


def _biometrics(memory: Memory, writer: ArchiveWriter, ids: Sequence[str]) -> int:
    n = 0
    for vid in ids:
        for folder, found, key in (("voices", load_voices(memory.path, vid), "voices"),
                                   ("faces", load_faces(memory.path, vid), "faces")):
            if found:
                writer.add_json(f"{folder}/{vid}.json", {"video_id": vid, key: [
                    x.model_dump(mode="json") for x in found]})
                n += 1
    return n


def _frame_files(memory: Memory, graph: VideoGraph) -> list[tuple[str, Path]]:
    out = []
    for keyframe in graph.keyframes:
        path = memory.path / keyframe.path
        name = f"frames/{graph.video_id}/{Path(keyframe.path).name}"
        if not path.is_file() or fmt.member_problem(name) is not None:
            raise StoreError(f"keyframe {keyframe.id} has no readable image at {path}; run memtools check --memory "
                             f"{memory.path}, or export without --with-keyframes")
        out.append((name, path))
    return out


__all__ = ["ExportReport", "export_memory"]
