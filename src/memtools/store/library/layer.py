"""``library.sqlite``: the layer above videos (issue 31) — library entities and recurring activities.

Derived data, never the only copy of anything: every row is computed from the graph (mentions,
micro-events) and the lance ``entities`` table (canonical entities with their vectors), so a
kill at any instant loses nothing (the next writer, ``memtools recover`` or ``memtools repair``
computes it again). Tables:

* ``members``: each canonical entity (``<video>/entity_003``) and the library entity it is
  linked to (``lib/entity_0007``), with the link's evidence and confidence, its place (the
  LOCATION of its first appearance) and its vector (``memtools.store.library.link_rules``);
* ``ids``: (video, type, normalised name) -> library id, kept across re-imports, deletes and
  rebuilds, so a video written again gets its entities' library ids back;
* ``occurrences`` / ``activities``: every micro-event under its normalised action (the activity)
  with its video, times and place; per activity the vector of its core words and its group (the
  activity that leads it, with the probability it was joined with), and in ``words`` one vector per
  lemma those labels use (for finding activities by meaning, ``memtools.store.library.meaning``) and
  per entity name linking compared (``activities.stored``);
* ``clusters``: each voice, face and named-speaker cluster, its PERSON entity and its library person
  (``memtools.store.library.people``), placed again in every update;
* ``meta``: the manifest generation the layer matches, the next library and person id numbers, and
  the ``layout`` (an older layout counts as missing, so it is computed whole).

**When it is written.** Inside the journaled write (``MemoryWrites._write_batch``,
``delete_video``), after the graph's commit point and before the catalog and the manifest, in
one SQLite transaction tagged with the write's generation. Incremental when the layer matched
the generation before the write; computed whole from the graph and lance otherwise (a memory made
before this layer, or after a kill). Recovery (``store.recovery.recover``) computes it again
whenever its generation is not the manifest's (a layer lacking a table counts as missing); ``memtools
check`` reports a stale, missing or damaged layer (``memtools.store.integrity.library_check``) and ``memtools
repair`` computes it, setting a damaged file aside (``library.sqlite.damaged``) first; so does a writer that
finds a file SQLite cannot read. Readers use it only when its generation is the manifest's
(else the tools answer per video and say why). Same rollback journal, never WAL, as
``videos.sqlite``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memtools.errors import StoreError
from memtools.schema import VideoGraph
from memtools.store.faults import fault_point
from memtools.store.library import activities, meaning, people
from memtools.store.library.link_rules import LOCATION, LibEntity, Linker, Member, Profile, places_of
from memtools.store.tables.entities import _key, _norm

if TYPE_CHECKING:
    from memtools.store.base import GraphStore
    from memtools.store.catalog.parts import MemoryParts

log = logging.getLogger(__name__)

LIBRARY = "library.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS members (canonical_id TEXT PRIMARY KEY, lib_id TEXT NOT NULL, video_id TEXT NOT NULL,
  seq INTEGER NOT NULL, entity_type TEXT NOT NULL, name TEXT NOT NULL, keys TEXT NOT NULL, named TEXT NOT NULL,
  attrs TEXT NOT NULL, place TEXT, place_lib TEXT, evidence TEXT NOT NULL, confidence REAL NOT NULL, vector BLOB);
CREATE INDEX IF NOT EXISTS members_lib ON members(lib_id);
CREATE INDEX IF NOT EXISTS members_video ON members(video_id);
CREATE TABLE IF NOT EXISTS ids (video_id TEXT NOT NULL, entity_type TEXT NOT NULL, key TEXT NOT NULL,
  lib_id TEXT NOT NULL, PRIMARY KEY (video_id, entity_type, key));
CREATE TABLE IF NOT EXISTS occurrences (event_id TEXT PRIMARY KEY, video_id TEXT NOT NULL, activity TEXT NOT NULL,
  label TEXT NOT NULL, t_start REAL NOT NULL, t_end REAL NOT NULL, macro_id TEXT NOT NULL, place TEXT);
CREATE INDEX IF NOT EXISTS occurrences_activity ON occurrences(activity);
CREATE INDEX IF NOT EXISTS occurrences_video ON occurrences(video_id);
CREATE TABLE IF NOT EXISTS activities (activity TEXT PRIMARY KEY, label TEXT NOT NULL, vector BLOB,
  grp TEXT NOT NULL, similarity REAL NOT NULL);
CREATE INDEX IF NOT EXISTS activities_grp ON activities(grp);
CREATE TABLE IF NOT EXISTS words (word TEXT PRIMARY KEY, vector BLOB);
""" + people.SCHEMA
LAYOUT = 3
"""The layer's layout (``meta`` key ``layout``): 2 added people (``memtools.store.library.people``), 3 activities
by meaning (their core vectors, groups and the ``words`` vectors, ``memtools.store.library.meaning``). A layer
of an older layout counts as missing: the next write, recovery or ``memtools repair`` computes it whole
(its tables dropped first)."""
Embed = activities.Embed
_TABLES = frozenset(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", _SCHEMA))
Seed = tuple[Sequence[tuple[str, str, str, str]], Mapping[str, int]]
"""What a layer computed afresh starts from: ``ids`` rows (video, type, key, library id) and next numbers."""


@dataclass
class VideoLayer:
    """What one video adds to the layer: its canonical entities and its micro-events."""

    video_id: str
    profiles: list[Profile]
    occurrences: list[tuple[str, str, str, str, float, float, str, str | None]]
    people: people.PeopleInput | None = None


def activity_texts(graph: VideoGraph) -> list[str]:
    """The texts the layer embeds for ``graph``'s activities: each label's core and the lemmas of its
    words (a fleet worker embeds them too, so its writer embeds nothing: ``memtools.builder.bundle_vectors``)."""
    labels = [label for ev in graph.events if _norm(label := (ev.action or ev.description).strip())]
    return [*dict.fromkeys(meaning.core(label) for label in labels), *sorted(meaning.words_of(labels))]


def video_layer(graph: VideoGraph, rows: Iterable[Mapping[str, Any]]) -> VideoLayer:
    """The layer input of one video from its graph and its ``entities`` rows (with vectors)."""
    rows = [{**r, "timeline": _json(r["timeline"]), "mentions": _json(r["mentions"])} for r in rows]
    by_macro, first_place = places_of(rows)
    mentions = {e.id: e for e in graph.entities}
    profiles = []
    for r in rows:
        group = [mentions[m] for m in r["mentions"] if m in mentions]
        attrs: dict[str, str] = {}
        for e in group:
            for k, v in e.attributes.items():
                attrs.setdefault(_norm(k), _norm(v))
        first_macro = r["timeline"][0]["macro_id"] if r["timeline"] else ""
        place = None if r["entity_type"] == LOCATION else by_macro.get(first_macro, first_place)
        vector = r.get("vector")
        profiles.append(Profile(
            r["id"], graph.video_id, r["entity_type"], r["name"], {k for e in group if (k := _key(e))} or
            {_norm(r["name"])}, {n for e in group if (n := _norm(e.name))}, attrs,
            None if vector is None else np.asarray(vector, dtype=np.float32), place))
    occurrences = [(ev.id, graph.video_id, activity, (ev.action or ev.description).strip(), float(ev.t_start),
                    float(ev.t_end), ev.macro_id, by_macro.get(ev.macro_id, first_place))
                   for ev in graph.events if (activity := _norm(ev.action or ev.description))]
    return VideoLayer(graph.video_id, profiles, occurrences, people.people_input(graph, rows))


def _json(value: Any) -> Any:
    return json.loads(value or "[]") if isinstance(value, str) else value


# --- the file ----------------------------------------------------------------------------

def _connect(folder: Path, *, write: bool) -> sqlite3.Connection:
    file = folder / LIBRARY
    if write:
        conn = sqlite3.connect(file, timeout=60.0, isolation_level=None)
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("PRAGMA synchronous=FULL")
        _drop_older_layout(conn)
        conn.executescript(_SCHEMA)
        return conn
    return sqlite3.connect(f"file:{file}?mode=ro", uri=True, timeout=10.0, isolation_level=None)


def _drop_older_layout(conn: sqlite3.Connection) -> None:
    """A layer of an older layout is computed whole: its tables go first (their columns differ)."""
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'layout'").fetchone()
    except sqlite3.OperationalError:
        return  # a new file
    if row is not None and int(row[0]) == LAYOUT:
        return
    tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    for table in tables:
        conn.execute(f'DROP TABLE IF EXISTS "{table}"')


def generation(folder: Path) -> int | None:
    """The manifest generation the layer matches (None: there is no layer, it cannot be read, or it lacks a
    table: readers then answer per video, and the next writer computes it whole instead of adding to it)."""
    if not (folder / LIBRARY).is_file():
        return None
    try:
        with contextlib.closing(_connect(folder, write=False)) as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
            layout = conn.execute("SELECT value FROM meta WHERE key = 'layout'").fetchone()
            tables = {t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error as exc:
        log.debug("library layer of %s unreadable: %s", folder, exc)
        return None
    whole = tables >= _TABLES
    return None if row is None or layout is None or int(layout[0]) != LAYOUT or not whole else int(row[0])


def _meta(conn: sqlite3.Connection, key: str, default: int) -> int:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return default if row is None else int(row[0])


_blob = activities.blob


def _load(conn: sqlite3.Connection, embed: Embed | None = None) -> Linker:
    libs: dict[str, LibEntity] = {}
    for (cid, lib_id, vid, etype, name, keys, named, attrs, place, place_lib, evidence, confidence,
         vector) in conn.execute("SELECT canonical_id, lib_id, video_id, entity_type, name, keys, named, attrs, "
                                 "place, place_lib, evidence, confidence, vector FROM members ORDER BY seq"):
        profile = Profile(cid, vid, etype, name, set(json.loads(keys)), set(json.loads(named)), json.loads(attrs),
                          None if vector is None else np.frombuffer(vector, dtype=np.float32), place)
        lib = libs.setdefault(lib_id, LibEntity(lib_id, etype))
        lib.add(Member(profile, lib_id, json.loads(evidence), confidence, place_lib))
    ids = {(v, t, k): lib for v, t, k, lib in conn.execute("SELECT video_id, entity_type, key, lib_id FROM ids")}
    return Linker(libs.values(), ids, _meta(conn, "next_number", 1), embed=embed)


def _store(conn: sqlite3.Connection, linker: Linker, layers: Sequence[VideoLayer], touched: set[str],
           embed: Embed | None, gen: int) -> None:
    marks = ", ".join("?" for _ in touched)
    conn.execute(f"DELETE FROM members WHERE video_id IN ({marks})", tuple(touched))
    conn.execute(f"DELETE FROM occurrences WHERE video_id IN ({marks})", tuple(touched))
    seq = _meta(conn, "seq", 0)
    for layer in layers:
        for m in (linker.of_canonical[p.id] for p in layer.profiles):
            seq += 1
            p = m.profile
            conn.execute("INSERT INTO members VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", (
                p.id, m.lib_id, p.video_id, seq, p.entity_type, p.name, json.dumps(sorted(p.keys)),
                json.dumps(sorted(p.named)), json.dumps(p.attrs, sort_keys=True), p.place, m.place_lib,
                json.dumps(m.evidence), m.confidence, _blob(p.vector)))
        conn.executemany("INSERT OR REPLACE INTO occurrences VALUES (?,?,?,?,?,?,?,?)", layer.occurrences)
    conn.executemany("INSERT OR REPLACE INTO ids VALUES (?,?,?,?)",
                     [(v, t, k, lib) for (v, t, k), lib in linker.ids.items() if v in touched])
    new: dict[str, str] = {}
    for layer in layers:
        for occ in layer.occurrences:
            new.setdefault(occ[2], occ[3])
    for known in _known_activities(conn, list(new)):
        new.pop(known, None)
    if new:
        activities.add(conn, new, embed)
    for key, value in (("generation", gen), ("next_number", linker.next_number), ("seq", seq), ("layout", LAYOUT)):
        conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))


def _known_activities(conn: sqlite3.Connection, activities: Sequence[str], chunk: int = 900) -> Iterator[str]:
    """Those of ``activities`` the layer already holds, asked ``chunk`` at a time (SQLite's limit on
    parameters): a write reads its own, never the whole table (a caption import makes each caption an
    activity: reading them all made every batch slower than the one before)."""
    for start in range(0, len(activities), chunk):
        part = activities[start:start + chunk]
        marks = ", ".join("?" for _ in part)
        yield from (a for (a,) in conn.execute(f"SELECT activity FROM activities WHERE activity IN ({marks})", part))


@contextlib.contextmanager
def _transaction(folder: Path) -> Iterator[sqlite3.Connection]:
    """One write transaction on ``library.sqlite`` (``BEGIN IMMEDIATE``): committed when the block ends,
    rolled back when it raises; SQLite's errors as ``StoreError``."""
    try:
        with contextlib.closing(_connect(folder, write=True)) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise
    except sqlite3.Error as exc:
        raise StoreError(f"the library layer ({LIBRARY}) could not be written: {exc}") from exc


def update(folder: Path, layers: Sequence[VideoLayer], removed: Iterable[str], gen: int,
           embed: Embed | None = None, *, whole: bool = False) -> None:
    """Apply one write to a layer that matches the generation before it: the videos of ``layers``
    (placed in that order) replace their old versions, ``removed`` go (``whole``: every video of
    the layer goes first, so ``layers`` is the whole library). One SQLite transaction."""
    touched = {*removed, *(layer.video_id for layer in layers)}
    with _transaction(folder) as conn:
        if whole:
            touched |= {v for (v,) in conn.execute("SELECT DISTINCT video_id FROM members")}
            touched |= {v for (v,) in conn.execute("SELECT DISTINCT video_id FROM occurrences")}
        linker = _load(conn, None if embed is None else activities.stored(conn, embed))
        linker.remove_videos(touched)
        linker.expect(p for layer in layers for p in layer.profiles)
        for layer in layers:
            linker.add_video(layer.profiles)
        _store(conn, linker, layers, touched, embed, gen)
        conn.execute(f"DELETE FROM clusters WHERE video_id IN ({', '.join('?' for _ in touched)})", tuple(touched))
        for layer in layers:
            if layer.people is not None:
                people.store_video(conn, folder, layer.people)
        people.relink(conn, folder)
        fault_point("library-linking")  # linked, not committed: the transaction is lost


def relink_people(folder: Path) -> bool:
    """Place the people again in their own transaction (``forget_person`` removed centroids); False when
    the layer is missing or stale (the next write, recovery or repair computes it whole)."""
    if generation(folder) is None:
        return False
    with _transaction(folder) as conn:
        people.relink(conn, folder)
    return True


def stored_layers(memory: MemoryParts, graph: GraphStore, video_ids: Iterable[str]) -> Iterator[VideoLayer]:
    """The layer input of these videos read back from the graph and the lance ``entities`` table."""
    table = memory.entities.table()
    for vid in video_ids:
        video = graph.video_graph(vid)
        if video is None:
            continue
        rows: list[dict[str, Any]] = []
        if table is not None:
            where = "video_id = '" + vid.replace("'", "''") + "'"
            rows = table.search().where(where).limit(1_000_000).to_list()
        yield video_layer(video, sorted(rows, key=lambda r: r["id"]))


def rebuild(memory: MemoryParts, graph: GraphStore, gen: int, *, afresh: bool = False,
            seed: Seed = ((), {})) -> None:
    """Compute the whole layer again from the graph and lance (library ids kept by ``ids``). ``afresh`` (a layer
    ``memtools check`` found damaged), or a file SQLite cannot use (it would fail every write): the file is set
    aside as ``library.sqlite.damaged`` and the layer computed into a new one, given only ``seed``: the ``ids``
    rows and next numbers (``meta``) repair could still read from the old one."""
    if afresh or not _sound(memory.path / LIBRARY):
        _set_aside(memory.path, seed)
    order = sorted(graph.video_ids())
    layers = list(stored_layers(memory, graph, order))
    update(memory.path, layers, (), gen, _embedder(memory), whole=True)


def _sound(file: Path) -> bool:
    """Missing (a new one is made), or an SQLite file that passes ``quick_check``. Opened read-write, so that
    a killed writer's journal is rolled back first (that is a sound file, not damage)."""
    if not file.exists() and not file.is_symlink():
        return True
    try:
        with contextlib.closing(sqlite3.connect(f"file:{file}?mode=rw", uri=True, timeout=60.0)) as conn:
            return file.is_file() and conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    except sqlite3.Error:
        return False


def _set_aside(folder: Path, seed: Seed) -> None:
    """Move the file and its journal to ``library.sqlite.damaged`` (an older one goes), then start a new file
    holding ``seed``."""
    aside = folder / f"{LIBRARY}.damaged"
    for old, new in ((folder / LIBRARY, aside), (folder / f"{LIBRARY}-journal", folder / f"{aside.name}-journal")):
        if new.is_dir() and not new.is_symlink():
            shutil.rmtree(new)
        new.unlink(missing_ok=True)
        if old.exists() or old.is_symlink():
            os.replace(old, new)
    rows, _ = seed
    seed_layer(folder, seed)
    log.warning("the library layer of %s was set aside as %s; computing it again (%d library ids kept)",
                folder, aside.name, len(rows))


def seed_layer(folder: Path, seed: Seed) -> None:
    """Record ``seed`` (``ids`` rows, next numbers) without a generation: the next write computes the layer with
    those library ids (a damaged layer set aside; a new memory an export is imported into, ``memtools.archive``)."""
    rows, counters = seed
    with _transaction(folder) as conn:
        conn.executemany("INSERT OR REPLACE INTO ids VALUES (?,?,?,?)", rows)
        conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [*counters.items(), ("layout", LAYOUT)])


def _embedder(memory: MemoryParts, cache: dict[str, object] | None = None) -> Embed:
    """Label vectors by the memory's embedder, through a write's cache of text vectors."""
    def embed(texts: list[str]) -> Sequence[Any]:
        rows: list[dict] = [{"text": t} for t in texts]
        memory._embed_rows(rows, {} if cache is None else cache)
        return [r["vector"] for r in rows]
    return embed


def after_write(memory: MemoryParts, graph: GraphStore, graphs: Sequence[VideoGraph],
                profiles: Iterable[Mapping[str, Any]], removed: Iterable[str], before: int,
                cache: dict[str, object] | None = None) -> None:
    """The layer after a committed write at generation ``before + 1`` (``graphs`` written with their
    ``entities`` rows ``profiles``, ``removed`` replaced or deleted): incremental when the layer
    matched ``before`` (a new memory's first write counts as matching), else computed whole."""
    have = generation(memory.path)
    if have == before or (have is None and before == 0):
        rows: dict[str, list[Mapping[str, Any]]] = {}
        for row in profiles:
            rows.setdefault(row["video_id"], []).append(row)
        layers = [video_layer(g, rows.get(g.video_id, [])) for g in graphs]
        update(memory.path, layers, removed, before + 1, _embedder(memory, cache))
    else:
        rebuild(memory, graph, before + 1)


def bring_up_to_date(memory: MemoryParts, graph: GraphStore, gen: int) -> bool:
    """Compute the layer again if it does not match generation ``gen`` (recovery, repair). A failure
    is logged, never raised: the layer is derived, and the next writer tries again. True if done."""
    if generation(memory.path) == gen:
        return False
    try:
        rebuild(memory, graph, gen)
    except Exception as exc:  # noqa: BLE001 - derived data: never fails the recovery or repair around it
        log.warning("the library layer of %s could not be computed (%s); the next write tries again",
                    memory.path, exc)
        return False
    return True
