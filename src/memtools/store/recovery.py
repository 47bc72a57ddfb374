"""The write journal: what a write is about to change, so a writer killed at any point is finished
or undone by the next one (the protocol is described in ``memtools.store.writes``).

``.write-journal`` (JSON, written whole by rename before anything changes) names the write's
token, its videos, the lance table versions before it, the manifest generation it started from
and the manifest entries it will record. The graph transaction of the write also stores the
token in a one-row ``WriteMark`` table, so the graph alone says whether the write committed:

* token in the graph: the write committed; ``recover`` rolls it forward (``videos.sqlite`` gets the
  journal's entries in one transaction, unless it already holds the write's generation; then the
  manifest gets that generation, the catalog's totals and the tables' current versions);
* token not in the graph: the graph never saw it (an uncommitted transaction is dropped when the
  graph is opened again); ``recover`` rolls lance back to the recorded versions.

Keyframe folders a write swaps (``journal.frames``, ``memtools.store.frame_swap``) are finished
or put back the same way. Either way the journal goes last, so a kill inside ``recover`` is
recovered the same way again.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from memtools.errors import MemoryDamaged, StoreError
from memtools.store import frame_swap, integrity
from memtools.store.faults import fault_point
from memtools.store.manifest import EmbedderInfo, VideoEntry, read_manifest
from memtools.store.problems import Problem

if TYPE_CHECKING:
    from memtools.store.base import GraphStore
    from memtools.store.manifest import Manifest
    from memtools.store.parts import MemoryParts

JOURNAL = integrity.JOURNAL_FILE
MARK_TABLE = "WriteMark"
TABLES = ("nodes", "entities", "keyframes")


@dataclass
class Journal:
    """One write: ``op`` "write" (``entries``: the manifest entries of its videos) or "delete"."""

    op: str
    videos: list[str]
    tables: dict[str, int | None]  # lance table -> version before the write (None: no table yet)
    generation: int  # the manifest generation the write started from
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    image_embedder: dict[str, Any] | None = None
    frames: dict[str, str] = field(default_factory=dict)  # video id -> staged keyframe folder (frame_swap)
    token: str = field(default_factory=lambda: uuid.uuid4().hex)


def versions(memory: MemoryParts) -> dict[str, int | None]:
    """The current version of each lance table a write changes (None: the table does not exist)."""
    keyframes = memory.keyframes
    return {"nodes": memory.vectors_unchecked.version(), "entities": memory.entities.version(),
            "keyframes": keyframes.version() if keyframes is not None else None}


def begin(memory: MemoryParts, journal: Journal) -> None:
    """Record ``journal`` durably before the write changes anything."""
    path = memory.path / JOURNAL
    tmp = path.with_name(JOURNAL + ".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(json.dumps(asdict(journal)))
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
    fault_point("journal-written")


def end(memory: MemoryParts) -> None:
    """The write is whole in every part: forget its journal."""
    (memory.path / JOURNAL).unlink(missing_ok=True)


def ensure_mark(graph: GraphStore) -> None:
    """The ``WriteMark`` table (a memory made before the journal has none)."""
    _run(graph, f"CREATE NODE TABLE IF NOT EXISTS {MARK_TABLE}(id STRING, token STRING, PRIMARY KEY(id))")


def mark(graph: GraphStore, token: str) -> None:
    """Store the write's token in the graph, inside the caller's transaction (it commits with it)."""
    _run(graph, f"MERGE (m:{MARK_TABLE} {{id: 'last'}}) SET m.token = $token", {"token": token})


def _marked(graph: GraphStore) -> str | None:
    rows = _run(graph, f"MATCH (m:{MARK_TABLE}) RETURN m.token")
    return rows[0][0] if rows else None


def _run(graph: GraphStore, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
    run = getattr(graph, "_run", None)  # KuzuGraph (both engines): the one Cypher entry point
    if run is None:
        raise StoreError(f"the graph store {type(graph).__name__} cannot keep a write journal")
    return run(query, params)


def recover(memory: MemoryParts, graph: GraphStore) -> str | None:
    """Finish (roll forward) or undo (roll back) a write that was killed, from its journal; remove
    other leftovers of interrupted writes. Call with the process lock held and the graph open for
    writing. Returns what was done, or None when there was nothing to recover."""
    path = memory.path
    ensure_mark(graph)
    (path / (JOURNAL + ".tmp")).unlink(missing_ok=True)  # a journal not yet in place: nothing had changed
    for temp in path.glob(integrity.TEMP_GLOB):  # a manifest cut short by a kill; the old one stands
        temp.unlink(missing_ok=True)
    try:
        raw = (path / JOURNAL).read_text(encoding="utf-8")
    except FileNotFoundError:
        frame_swap.clean(path)  # keyframe folders a finished write had not removed yet
        return None
    try:
        journal = Journal(**json.loads(raw))
    except (ValueError, TypeError) as exc:
        raise MemoryDamaged(integrity.damage_message(path, [Problem(
            "files", f"{JOURNAL} cannot be read ({exc}), so an interrupted write cannot be finished", True)],
            writing=True)) from exc
    committed = _marked(graph) == journal.token
    frame_swap.recover(path, memory.frames_dir, journal.op, journal.videos, journal.frames, journal.token, committed)
    if committed:
        done = _roll_forward(memory, journal)
    else:
        _roll_back(memory, journal)
        done = f"rolled back an interrupted {journal.op} of {_names(journal.videos)}"
    fault_point("recovered")
    end(memory)
    return done


def _roll_back(memory: MemoryParts, journal: Journal) -> None:
    """Put every lance table back at the version recorded before the write (the graph and the
    manifest never saw it)."""
    from memtools.store.keyframe_index import KeyframeIndex

    keyframes = memory.keyframes
    if keyframes is None and journal.image_embedder is not None:  # the write was the first with frames
        keyframes = KeyframeIndex(memory.vectors_unchecked, int(journal.image_embedder["dim"]))
    tables: dict[str, Any] = {"nodes": memory.vectors_unchecked, "entities": memory.entities,
                              "keyframes": keyframes}
    for name, table in tables.items():
        if table is None or table.version() == journal.tables.get(name):
            continue
        table.restore(journal.tables.get(name))
        table.refresh()


def _roll_forward(memory: MemoryParts, journal: Journal) -> str:
    """The graph committed the write: record it in the manifest as the write would have."""
    manifest = read_manifest(memory.path)
    if manifest.generation > journal.generation:
        return f"finished an interrupted {journal.op} of {_names(journal.videos)}"  # only the journal was left
    generation = journal.generation + 1
    if journal.op == "delete":
        totals = manifest.catalog.apply({}, journal.videos, generation)  # idempotent: once per generation
    else:
        entries = {vid: VideoEntry.model_validate(entry) for vid, entry in journal.entries.items()}
        totals = manifest.catalog.apply(entries, (), generation)
        if journal.image_embedder is not None and manifest.image_embedder is None:
            manifest.image_embedder = EmbedderInfo.model_validate(journal.image_embedder)
    fault_point("catalog-recovered")
    manifest.generation = generation
    memory.manifest = manifest
    memory._commit_manifest(manifest, totals)
    return f"finished an interrupted {journal.op} of {_names(journal.videos)}"


def check_before_write(memory: MemoryParts, graph: GraphStore) -> None:
    """Refuse (``MemoryDamaged``, naming the damage and ``memtools repair``) to write on a memory
    whose parts disagree: the lance rows or the graph's videos differ from the manifest. Cheap (a
    row count, a count of the graph's videos, the manifest's totals: nothing per video), so it runs
    before every write; the videos are compared one by one only when the counts disagree."""
    manifest = memory.manifest
    totals = manifest.video_totals()
    problems: list[Problem] = []
    if _graph_videos(graph) != totals.in_graph:
        problems += _compare_videos(manifest, graph)
    table = memory.vectors_unchecked.nodes()
    if table is not None:
        expected = totals.rows
        try:
            found = table.count_rows()
        except Exception as exc:  # lance raises plain OSError/ValueError on damaged files
            problems.append(Problem("vectors", f"the vector table cannot be read: {exc}", True))
        else:
            if found != expected:
                problems.append(Problem("vectors", f"the vector table holds {found} rows but the manifest lists "
                                        f"{expected} searchable nodes", True))
    if problems:
        raise MemoryDamaged(integrity.damage_message(memory.path, problems, writing=True))


def _graph_videos(graph: GraphStore) -> int:
    rows = _run(graph, "MATCH (v:Video) RETURN count(v)")
    return int(rows[0][0]) if rows else 0


def _compare_videos(manifest: Manifest, graph: GraphStore) -> list[Problem]:
    """The videos listed as ready that the graph lacks, and the graph's videos the manifest does not list."""
    problems = []
    listed = manifest.videos
    ready = set(listed.ids("ready"))
    in_graph = set(graph.video_ids())
    if ready - in_graph:
        lost = sorted(ready - in_graph)
        problems.append(Problem("graph", f"{len(lost)} video(s) listed as ready are not in the graph, e.g. "
                                f"{lost[0]!r}", True))
    extra = sorted(vid for vid in in_graph - ready if vid not in listed)
    if extra:
        problems.append(Problem("manifest", f"the graph holds {len(extra)} video(s) the manifest does not list, "
                                f"e.g. {extra[0]!r}", True))
    return problems


def _names(videos: list[str]) -> str:
    shown = ", ".join(videos[:3])
    return f"video(s) {shown}" + (f" and {len(videos) - 3} more" if len(videos) > 3 else "")


def report_lost_edges(kuzu: GraphStore, listed: Mapping[str, VideoEntry], cause: BaseException) -> None:
    """After a rolled-back graph write, say so loudly if committed videos lost typed edges.

    kuzu 0.11.3 drops existing edges when a transaction that ran ``COPY`` of the edge table is
    rolled back (ladybug keeps them). memtools validates everything before that transaction, so
    only a failing copy itself gets here; the damage must not pass as an ordinary failed write.
    """
    try:
        have = kuzu.counts_by_video()
    except StoreError:
        return  # the graph cannot even be counted; the original error says enough
    lost = {vid: (entry.counts["edges"], have.get(vid, {}).get("edges", 0)) for vid, entry in listed.items()
            if entry.status == "ready" and "edges" in entry.counts
            and have.get(vid, {}).get("edges", 0) < entry.counts["edges"]}
    if not lost:
        return
    n = sum(expected - now for expected, now in lost.values())
    names = ", ".join(sorted(lost)[:5]) + (f" and {len(lost) - 5} more" if len(lost) > 5 else "")
    raise StoreError(
        f"the graph write failed ({cause}) and rolling it back lost {n} typed edge(s) of committed video(s) "
        f"{names} (a kuzu 0.11.3 bug). The memory is damaged: write those videos again (rebuild or re-import "
        "them), and consider the ladybug engine, which keeps them: memtools migrate --engine ladybug") from cause
