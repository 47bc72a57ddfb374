"""``import_export``: an export archive as a new memory (``memtools import-export``; docs/export.md).

    from memtools.archive import import_export
    report = import_export("my-memory.zip", "copy-memory")              # the archive's embedder, kuzu
    print(report.render())

The archive is untrusted: ``ArchiveReader.verify`` reads all of it (names, sizes, hashes, every row
validated) before anything is written. The target must be a new or empty memory: an archive is a
whole library, whose library ids would collide with another's. The videos go through the store's
journaled write path (``Memory.write_videos``), a batch per atomic step, so a kill leaves whole
videos only; the import run again on the same target with the same archive carries on from there
(``work/.import-export.json`` names the archive it is importing).

With the archive's embedder (name and dimension) the writer is handed the archive's vectors as its
embedding cache and embeds nothing; with another, every text is embedded again, and the report
says so. The library layer starts from the archive's library ids (``library.layer.seed_layer``), so
entities and people keep their ``lib/...`` ids. Biometric centroids (archives made with them) are
written to ``voices/`` and ``faces/`` before the videos, as a build leaves them.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memtools.archive import format as fmt
from memtools.archive.reader import ArchiveReader
from memtools.archive.texts import video_texts
from memtools.errors import ConfigError
from memtools.schema import EdgeCategory, VideoGraph
from memtools.store import Memory
from memtools.store.catalog.manifest import MANIFEST, now, read_manifest
from memtools.store.library.layer import generation as layer_generation
from memtools.store.library.layer import seed_layer
from memtools.store.tables.faces import Face, save_faces
from memtools.store.tables.voices import Voice, save_voices
from memtools.store.writes.frame_swap import discard, import_root, staged_folder

if TYPE_CHECKING:
    from memtools.embed.base import Embedder

MARK = Path("work") / ".import-export.json"
WRITE_BATCH = 50  # videos per atomic write step


@dataclass
class ImportReport:
    """What an import wrote, and what it could not carry over."""

    memory: Path
    videos: int = 0
    resumed: int = 0  # videos a killed run of the same import had written already
    reused: int = 0  # texts whose archive vectors the writer was given
    embedded: int = 0  # texts the memory's embedder embedded
    recomputed: str | None = None  # why the embeddings were recomputed (another embedder)
    clusters_differ: int = 0  # clusters whose person or name is not the archive's
    used: set[str] = field(default_factory=set, repr=False)  # the archive's texts handed to the writer
    notes: list[str] = field(default_factory=list)

    def render(self) -> str:
        lines = [f"Imported {self.videos} video(s) into {self.memory}"
                 + (f" ({self.resumed} written by an earlier, interrupted run)" if self.resumed else "") + "."]
        if self.recomputed:
            lines.append(f"Embeddings recomputed: {self.recomputed}; {self.embedded} text(s) embedded.")
        else:
            lines.append(f"Embeddings: {self.reused} taken from the archive, {self.embedded} embedded.")
        if self.clusters_differ:
            lines.append(f"{self.clusters_differ} people cluster(s) differ from the archive's (their person or name).")
        return "\n".join(lines + self.notes)


class _Counting:
    """The target's embedder, counting the texts it embeds (the report's ``embedded``)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.count = inner, 0
        self.name, self.dim = inner.name, int(inner.dim)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.count += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def import_export(archive: str | os.PathLike, target: str | os.PathLike, *, embedder: Embedder | None = None,
                  graph_engine: str | None = None, tables: str | None = None,
                  progress: Callable[[int], None] | None = None) -> ImportReport:
    """Rebuild the memory of ``archive`` in ``target`` (a new or empty memory folder). ``embedder``: default the
    archive's (loaded by name). ``graph_engine``/``tables``: as ``Memory.create``. ``progress(n)``: videos done."""
    target = Path(target)
    with ArchiveReader(Path(archive)) as reader:
        reader.verify()
        if embedder is None:
            from memtools.embed import embedder_for_name

            embedder = embedder_for_name(reader.manifest.embedder.name)
        _check_target(target, reader)
        counting = _Counting(embedder)
        with Memory.create(target, counting, tables=tables, graph_engine=graph_engine) as memory:
            return _import(reader, memory, counting, progress)


def _check_target(target: Path, reader: ArchiveReader) -> None:
    """Refuse a memory that holds videos, unless an interrupted import of this archive wrote them."""
    if not (target / MANIFEST).is_file() or len(read_manifest(target).videos) == 0:
        return
    try:
        mark = json.loads((target / MARK).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        mark = None
    if isinstance(mark, dict) and mark.get("archive_sha256") == reader.manifest_sha256:
        return
    raise ConfigError(f"{target} already holds videos; import an export into a new (or empty) memory folder, since "
                      "an archive is a whole library whose library ids would collide with these")


def _import(reader: ArchiveReader, memory: Memory, counting: _Counting,
            progress: Callable[[int], None] | None) -> ImportReport:
    report = ImportReport(memory.path)
    source = reader.manifest.embedder
    same = (source.name, source.dim) == (counting.name, counting.dim) and reader.manifest.contents.vectors
    if not same:
        report.recomputed = (f"the archive was embedded by {source.name} (dim {source.dim}), this memory uses "
                             f"{counting.name} (dim {counting.dim})")
    mark = memory.path / MARK
    mark.parent.mkdir(parents=True, exist_ok=True)
    mark.write_text(json.dumps({"archive": str(reader.path), "archive_sha256": reader.manifest_sha256,
                                "started_at": now()}), encoding="utf-8")
    vectors = _vectors(reader) if same else {}
    done = set(memory.manifest.videos.ids(status="ready"))
    if not done and layer_generation(memory.path) is None:
        _seed(reader, memory)
    elif not done:
        report.notes.append("The memory had a library layer already (its videos were deleted): library ids were "
                            "numbered afresh, not taken from the archive.")
    _biometrics(reader, memory)
    batch: list[VideoGraph] = []
    first = True

    def flush() -> None:
        nonlocal batch, first
        _write(reader, memory, batch, vectors, report, index=first)
        first, batch = False, []
        if progress:
            progress(report.videos + report.resumed)

    for graph in reader.videos():
        if graph.video_id in done:
            report.resumed += 1
            continue
        batch.append(graph if reader.manifest.contents.keyframes else _without_keyframes(graph))
        if len(batch) >= WRITE_BATCH:
            flush()
    if batch:
        flush()
    memory.finish_indexes()
    report.embedded = counting.count
    report.clusters_differ = _clusters_differ(reader, memory)
    if not reader.manifest.contents.biometrics and reader.manifest.counts.get("clusters"):
        report.notes.append("The archive holds no voice or face vectors (exported without --with-biometrics): people "
                            "are linked across videos by their names only, and face clusters are not remade.")
    mark.unlink(missing_ok=True)
    return report


def _vectors(reader: ArchiveReader) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for n in range(reader.manifest.chunks):
        texts, matrix = reader.chunk(n)
        out.update(zip(texts, matrix, strict=True))
    return out


def _seed(reader: ArchiveReader, memory: Memory) -> None:
    rows = [(r.video_id, r.entity_type, r.key, r.lib_id) for r in reader.rows(fmt.LIBRARY_IDS, fmt.LibraryId)]
    counters = reader.json(fmt.COUNTERS, fmt.Counters) if reader.has(fmt.COUNTERS) else fmt.Counters()
    if rows:
        seed_layer(memory.path, (rows, counters.model_dump()))


def _biometrics(reader: ArchiveReader, memory: Memory) -> None:
    for name in reader.names("voices/"):
        voices = [v for v in reader.clusters_file(name) if isinstance(v, Voice)]
        save_voices(memory.path, name.split("/")[1].removesuffix(".json"), voices)
    for name in reader.names("faces/"):
        faces = [f for f in reader.clusters_file(name) if isinstance(f, Face)]
        save_faces(memory.path, name.split("/")[1].removesuffix(".json"), faces)


def _without_keyframes(graph: VideoGraph) -> VideoGraph:
    """An archive without images: the keyframes and their grounding edges are left out (no file to show)."""
    if not graph.keyframes:
        return graph
    frames = {k.id for k in graph.keyframes}
    edges = [e for e in graph.edges if not (e.category == EdgeCategory.GROUNDING and (e.source in frames
                                                                                     or e.target in frames))]
    return graph.model_copy(update={"keyframes": [], "edges": edges})


def _write(reader: ArchiveReader, memory: Memory, batch: list[VideoGraph], vectors: dict[str, np.ndarray],
           report: ImportReport, *, index: bool) -> None:
    cache: dict[str, object] = {}
    if vectors:
        for graph in batch:
            for text in video_texts(graph, vectors.get):
                if text in vectors:
                    cache[text] = vectors[text]
        report.reused += sum(1 for text in cache if text not in report.used)
        report.used.update(cache)
    staged = _stage_frames(reader, memory, batch) if reader.manifest.contents.keyframes else {}
    try:
        memory.write_videos(batch, batch_size=len(batch), embed_cache=cache, index=index,
                            staged_frames=staged or None)
    finally:
        discard(memory.path, [staged_folder(memory.path, memory.frames_dir(v), import_root(memory.path))
                              for v in staged])
    report.videos += len(batch)


def _stage_frames(reader: ArchiveReader, memory: Memory, batch: list[VideoGraph]) -> dict[str, Path]:
    """Each video's keyframe images, staged where the write swaps them in; the graph points at their final place."""
    staged: dict[str, Path] = {}
    for graph in batch:
        if not graph.keyframes:
            continue
        final = memory.frames_dir(graph.video_id)
        folder = staged_folder(memory.path, final, import_root(memory.path))
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        relative = final.relative_to(memory.path).as_posix()
        for keyframe in graph.keyframes:
            name = Path(keyframe.path).name
            member = f"frames/{graph.video_id}/{name}"
            if not reader.has(member):
                raise reader._bad(f"keyframe {keyframe.id} names {keyframe.path!r}, which the archive does not hold")
            with reader.open(member) as source, open(folder / name, "wb") as handle:
                shutil.copyfileobj(source, handle)
            keyframe.path = f"{relative}/{name}"
        staged[graph.video_id] = import_root(memory.path)
    return staged


def _clusters_differ(reader: ArchiveReader, memory: Memory) -> int:
    """How many of the archive's clusters the imported memory does not have with the same person and name."""
    from memtools.store.library.reads import PeopleReads

    wanted = list(reader.rows(fmt.CLUSTERS, fmt.ClusterRow))
    reads = PeopleReads(memory.path) if layer_generation(memory.path) == memory.manifest.generation else None
    if not wanted or reads is None:
        return len(wanted)
    differ = 0
    for row in wanted:
        found = reads.cluster(row.video_id, row.label)
        if found is None or found.kind != row.kind or found.person_id != row.person_id or found.name != row.name:
            differ += 1
    return differ


__all__ = ["ImportReport", "import_export"]
