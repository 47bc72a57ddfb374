"""The write journal: what a write is about to change, so a writer killed at any point is finished
or undone by the next one (the protocol is described in ``memtools.store.writes.batch``).

``.write-journal`` (JSON, written whole by rename before anything changes) names the write's
token, its videos (and which of them it replaces), the lance table versions before it, the
manifest generation it started from and the manifest entries it will record, with each video's
node and edge counts. After the graph transaction that holds the write's data has committed, a
second, small transaction stores the token in a one-row ``WriteMark`` table: the mark is written
only once the data's COMMIT (and the checkpoint inside it) has returned. kuzu 0.11.3 and ladybug
both lose the rows of a ``COPY`` when a kill lands in the checkpoint of its COMMIT while keeping
the transaction's other, WAL-logged statements (docs/storage.md, "What the engines guarantee"),
so a mark in the data's own transaction could outlive the data.

Recovery verifies, never trusts, the mark:

* the token is in the graph **and** the graph holds every video of the write with exactly the
  journal's counts (a delete: none of them): the write committed; ``recover`` rolls it forward
  (``videos.sqlite`` gets the journal's entries in one transaction, unless it already holds the
  write's generation; then the manifest gets that generation, the catalog's totals and the
  tables' current versions);
* otherwise the write is rolled back everywhere: lance goes back to the recorded versions, the
  graph loses whatever it holds of the write's new videos, and a replaced video whose old version
  the graph no longer holds whole gets it back from the copy the write kept aside
  (``memtools.store.writes.kept``). Only where no such copy can be read is it removed from the
  catalog and lance (its keyframe folder stays for the resumed build) and named in
  ``lost-videos.json`` (``memtools.store.catalog.owed``) until it is written again, so nothing goes without a word.

Keyframe folders a write swaps (``journal.frames``, ``memtools.store.writes.frame_swap``) are finished
or put back the same way. Either way the journal goes last, so a kill inside ``recover`` is
recovered the same way again (every step is idempotent).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from memtools.errors import MemoryDamaged, StoreError
from memtools.store.catalog import owed
from memtools.store.catalog.manifest import EmbedderInfo, VideoEntry, read_manifest
from memtools.store.faults import fault_point
from memtools.store.integrity import checker as integrity
from memtools.store.library import layer as library
from memtools.store.problems import Problem
from memtools.store.writes import engine_log, frame_swap, kept
from memtools.store.writes.recording_times import times_of

if TYPE_CHECKING:
    from memtools.store.base import GraphStore
    from memtools.store.catalog.parts import MemoryParts

log = logging.getLogger(__name__)

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
    replaced: list[str] | None = None  # the videos listed as ready before the write (None: a journal of 0.1)
    kept: list[str] | None = None  # the replaced videos whose old version is in ``.write-kept``
    command: str | None = None  # the memtools command that wrote (what a user runs again), if any
    clean_log: bool = False  # the graph's log held nothing when the write began (``discard_log`` may drop it)


def versions(memory: MemoryParts) -> dict[str, int | None]:
    """The current version of each lance table a write changes (None: the table does not exist)."""
    keyframes = memory.keyframes
    return {"nodes": memory.vectors_unchecked.version(), "entities": memory.entities.version(),
            "keyframes": keyframes.version() if keyframes is not None else None}


def begin(memory: MemoryParts, journal: Journal, graph: GraphStore | None = None) -> None:
    """Record ``journal`` durably before the write changes anything. With the write's ``graph``, what the engine
    still logs of earlier commits is checkpointed first, so that its log then holds this write only
    (``clean_log``; ``discard_log``)."""
    if graph is not None:
        _run(graph, "CHECKPOINT")
        journal.clean_log = True
    path = memory.path / JOURNAL
    tmp = path.with_name(JOURNAL + ".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(json.dumps(asdict(journal)))
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
    fault_point("journal-written")


def end(memory: MemoryParts) -> None:
    """The write is whole in every part (or undone): forget its journal, then the old versions it kept."""
    (memory.path / JOURNAL).unlink(missing_ok=True)
    kept.drop(memory.path)
    engine_log.drop_snapshots(memory.path)


def ensure_mark(graph: GraphStore) -> None:
    """The ``WriteMark`` table (a memory made before the journal has none)."""
    _run(graph, f"CREATE NODE TABLE IF NOT EXISTS {MARK_TABLE}(id STRING, token STRING, PRIMARY KEY(id))")


def mark(graph: GraphStore, token: str) -> None:
    """Store the write's token in the graph, inside the caller's transaction (it commits with it)."""
    _run(graph, f"MERGE (m:{MARK_TABLE} {{id: 'last'}}) SET m.token = $token", {"token": token})


def commit_mark(memory: MemoryParts, graph: GraphStore, journal: Journal) -> None:
    """Store the write's token in the graph in a transaction of its own, once the data's COMMIT has
    returned (the module docstring says why). If it cannot be stored, the write is undone at once,
    as the next writer's recovery would undo it."""
    fault_point("graph-data-committed")
    try:
        graph.begin()
        try:
            mark(graph, journal.token)
        except BaseException:
            with contextlib.suppress(StoreError):
                graph.rollback()
            raise
        graph.commit()
        fault_point("graph-marked")
        _run(graph, "CHECKPOINT")  # the write's graph part leaves the log before anything else is written
        engine_log.drop_snapshots(memory.path)  # and the graph as the write found it is no longer needed
    except Exception:
        recover(memory, graph)
        raise



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
        kept.drop(path)  # old versions kept by a write killed before its journal: nothing had changed
        return None
    try:
        journal = Journal(**json.loads(raw))
    except (ValueError, TypeError) as exc:
        raise MemoryDamaged(integrity.damage_message(path, [Problem(
            "files", f"{JOURNAL} cannot be read ({exc}), so an interrupted write cannot be finished", True)],
            writing=True)) from exc
    marked = _marked(graph) == journal.token
    torn = _not_as_journaled(graph, journal) if marked else []
    committed = marked and not torn
    frame_swap.recover(path, memory.frames_dir, journal.op, journal.videos, journal.frames, journal.token, committed)
    if committed:
        try:
            done = _roll_forward(memory, journal)
        except OSError:
            raise  # the disk or the system: the next writer rolls forward again
        except Exception as exc:  # the write itself cannot be finished: a retry would fail the same way
            if not undo_committed(memory, graph, journal):
                raise
            done = f"undid an interrupted {journal.op} of {_names(journal.videos)}, which cannot be finished ({exc})"
            log.warning("recovery of %s: %s", path, done)
            return done
    else:
        lost = _roll_back(memory, journal, graph)
        done = f"rolled back an interrupted {journal.op} of {_names(journal.videos)}"
        if torn:
            done += (f" (its mark was in the graph but {_names(torn)} were not as the journal records: "
                     "the engine lost part of the commit)")
            log.warning("recovery of %s: %s", path, done)
        if lost:
            again = f"run {journal.command}" if journal.command else "run the same command again"
            done += (f"; {_names(lost)} lost their previous version in the graph and were removed: "
                     f"{again} to write them")
            owed.owe(path, lost, "the graph engine lost their previous version in an interrupted write",
                     journal.command)
            log.warning("recovery of %s: %s", path, done)
    graph.refresh_navigation(journal.videos)  # derived: written again from the graph as it now stands
    library.bring_up_to_date(memory, graph, read_manifest(path).generation)  # derived: computed again
    fault_point("recovered")
    end(memory)
    return done


@contextlib.contextmanager
def finished_or_undone(memory: MemoryParts, graph: GraphStore, journal: Journal) -> Iterator[None]:
    """Around the steps after a write's commit: an error of the disk or the system leaves the journal, so
    the next writer rolls the write forward; any other error (a value the catalog cannot hold, a bug)
    undoes the write at once where it can (``undo_committed``), so the memory answers as before."""
    try:
        yield
    except OSError:
        raise
    except Exception as exc:
        if undo_committed(memory, graph, journal):
            log.warning("a write of %s failed after its commit (%s) and was undone", _names(journal.videos), exc)
        raise


def undo_committed(memory: MemoryParts, graph: GraphStore, journal: Journal) -> bool:
    """Undo a write the graph committed but that cannot be finished: its videos out of the graph, the
    old versions it kept put back, lance at the versions before it (or the rows derived again from the
    graph where a fold pruned them). Possible while the catalog does not hold the write, every replaced
    video's old version was kept and no keyframe folder was swapped; returns whether it was undone."""
    manifest = read_manifest(memory.path)
    old = kept.kept(memory.path)
    replaced = journal.replaced or []
    if (journal.op != "write" or journal.frames or manifest.catalog.generation() > journal.generation
            or any(vid not in old for vid in replaced)):
        return False
    _in_transaction(graph, lambda: mark(graph, ""))  # never taken for committed again
    _in_transaction(graph, lambda: graph.delete_videos(journal.videos))
    if replaced:
        _in_transaction(graph, lambda: graph.insert([old[vid] for vid in replaced]))
    try:
        _restore_tables(memory, journal)
    except Exception:  # a fold after the commit pruned the versions before it: derive the rows again
        from memtools.store.integrity.repair_vectors import _rows

        rows, profiles = _rows(memory, graph, journal.videos, {})
        memory.vectors_unchecked.replace_videos(journal.videos, rows)
        memory.entities.replace_videos(journal.videos, profiles)
    memory._commit_manifest(read_manifest(memory.path))  # the tables' versions as they now stand
    graph.refresh_navigation(journal.videos)
    library.bring_up_to_date(memory, graph, manifest.generation)
    end(memory)
    return True


def _expected(journal: Journal, video_id: str) -> dict[str, int]:
    """What the graph holds of a video the write committed: its node counts per kind and its
    non-hierarchy edges (the manifest entry's ``counts``), and the video node."""
    counts = journal.entries.get(video_id, {}).get("counts", {})
    return {"video": 1, **{k: int(v) for k, v in counts.items() if v}}


def _not_as_journaled(graph: GraphStore, journal: Journal) -> list[str]:
    """The write's videos the graph does not hold as the committed write left them."""
    have = graph.counts_of(journal.videos)
    if journal.op == "delete":
        return [vid for vid in journal.videos if have.get(vid)]
    return [vid for vid in journal.videos if have.get(vid, {}) != _expected(journal, vid)]


def _roll_back(memory: MemoryParts, journal: Journal, graph: GraphStore) -> list[str]:
    """Undo the write in every part: lance back at the versions recorded before it, the graph
    without the write's new data, the catalog as it was. A replaced video whose old version the
    graph no longer holds whole (a kill inside the engine's commit can take the delete without the
    insert) is removed from the catalog and lance; returns those videos. Its keyframe folder stays:
    the resumed build or follow (``work/<id>``) lands the video again over it."""
    _restore_tables(memory, journal)
    manifest = read_manifest(memory.path)
    listed = manifest.videos
    before = journal.replaced if journal.replaced is not None else [v for v in journal.videos
                                                                    if (e := listed.get(v)) and e.status == "ready"]
    have = graph.counts_of(journal.videos)

    def whole(counts: Mapping[str, Mapping[str, int]], vid: str) -> bool:
        entry = listed.get(vid)
        return (entry is not None and entry.status == "ready"
                and counts.get(vid, {}) == {"video": 1, **{k: int(v) for k, v in entry.counts.items() if v}})

    held = [vid for vid in before if whole(have, vid)]
    strip = [vid for vid in journal.videos if vid not in held and have.get(vid)]
    if strip:  # what the graph holds of the write's videos beyond their old versions
        _in_transaction(graph, lambda: graph.delete_videos(strip))
        fault_point("graph-stripped")
    missing = [vid for vid in before if vid not in held]
    old = kept.kept(memory.path) if missing and journal.kept else {}
    back = [old[vid] for vid in missing if vid in old]
    if back:  # the old versions the write kept aside: put back whole, then verified like the rest
        _in_transaction(graph, lambda: graph.insert(back))
        fault_point("graph-restored")
        have = graph.counts_of(missing)
    lost = [vid for vid in missing if not whole(have, vid)]
    if not lost:
        return []
    if back:
        _in_transaction(graph, lambda: graph.delete_videos(lost))  # what the put-back left of them
    memory.vectors_unchecked.delete_videos(lost)
    memory.entities.replace_videos(lost, [])
    if memory.keyframes is not None:
        memory.keyframes.replace_videos(lost, [])
    generation = journal.generation + 1  # the write's own generation: it never reached the catalog
    totals = manifest.catalog.apply({}, lost, generation)  # applied once, like a roll-forward
    manifest.generation = max(manifest.generation, generation)
    memory.manifest = manifest
    memory._commit_manifest(manifest, totals)
    frame_swap.clean(memory.path)
    return lost


def _in_transaction(graph: GraphStore, work: Callable[[], None]) -> None:
    graph.begin()
    try:
        work()
    except BaseException:
        with contextlib.suppress(StoreError):
            graph.rollback()
        raise
    graph.commit()


def _restore_tables(memory: MemoryParts, journal: Journal) -> None:
    """Put every lance table back at the version recorded before the write."""
    from memtools.store.tables.keyframe_index import KeyframeIndex

    keyframes = memory.keyframes
    if keyframes is None and journal.image_embedder is not None:  # the write was the first with frames
        keyframes = KeyframeIndex(memory.vectors_unchecked, int(journal.image_embedder["dim"]))
    tables: dict[str, Any] = {"nodes": memory.vectors_unchecked, "entities": memory.entities,
                              "keyframes": keyframes}
    for name, table in tables.items():
        before = journal.tables.get(name)
        if table is None:
            continue
        if before is None:  # the write made the table: it goes, whatever its creation reached (a kill inside
            table.restore(None)  # lance's create can leave a folder that lists as a table and cannot be opened)
        elif table.version() != before:
            table.restore(before)
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
        totals = manifest.catalog.apply(entries, (), generation, times_of(journal.entries))
        if journal.image_embedder is not None and manifest.image_embedder is None:
            manifest.image_embedder = EmbedderInfo.model_validate(journal.image_embedder)
    fault_point("catalog-recovered")
    for table in (memory.vectors_unchecked, memory.entities, memory.keyframes):  # the write folded them in
        if table is not None:  # after its commit; a memory's first write makes the indexes check expects
            table.finish_write()
    manifest.generation = generation
    memory.manifest = manifest
    memory._commit_manifest(manifest, totals)
    if journal.op == "write":
        owed.settle(memory.path, journal.videos)
    return f"finished an interrupted {journal.op} of {_names(journal.videos)}"


def _names(videos: list[str]) -> str:
    shown = ", ".join(videos[:3])
    return f"video(s) {shown}" + (f" and {len(videos) - 3} more" if len(videos) > 3 else "")
