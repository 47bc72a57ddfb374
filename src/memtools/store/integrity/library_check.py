"""``memtools check`` / ``repair`` of ``library.sqlite``, the library layer (``memtools.store.library.layer``).

The layer is derived from the graph, the lance ``entities`` table and the voice (and face) files, but part
of it is history: the library ids it hands out are kept across re-imports and deletes (table ``ids``, the
next numbers in ``meta``), and the groups of activities depend on the order they came in. So check
cannot simply compute the layer again and compare bytes. It verifies, quickly (no video read back):

* the file is a file, SQLite reads it and ``PRAGMA quick_check`` passes (garbage, cut short, a folder);
* it matches the manifest's generation (else it is stale: the next writer or repair computes it);
* every table and column of its layout is there (a dropped ``clusters`` table would lose every person);
* the tables agree with each other: each member's library id is the one ``ids`` remembers for its keys,
  each place's library id is its place's, each cluster's person is the one ``ids`` remembers for it, each
  occurrence's activity has its row, each activity group its leader, the next numbers are past every id;
* its videos are the memory's: per video as many members as the ``entities`` table has rows, and no
  rows of a video the memory does not hold.

``memtools check --deep`` (``derived_check``) also reads every video back and compares what each table
holds for it with what the graph gives. Repair sets a damaged file aside (``library.sqlite.damaged``) and
computes the layer whole into a new one, keeping the library ids the old file still remembers.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from memtools.store.library import layer
from memtools.store.library.layer import LIBRARY
from memtools.store.problems import Problem, Report

if TYPE_CHECKING:
    from memtools.store.base import GraphStore
    from memtools.store.catalog.manifest import Manifest
    from memtools.store.catalog.parts import MemoryParts

log = logging.getLogger(__name__)

PART = "library"
DAMAGE = f"{LIBRARY}:"  # the start of every problem after which repair sets the file aside
EXAMPLES = 3
ENTITY, PERSON = "lib/entity_", "lib/person_"


def damage(text: str) -> Problem:
    """A problem of the layer's content: repair sets the file aside and computes the layer afresh."""
    return Problem(PART, f"{DAMAGE} {text}; the library layer's answers across videos (people, entities, "
                         "activities) may be wrong", True)


def connect(folder: Path) -> sqlite3.Connection:
    """A read-only connection to the layer (raises ``sqlite3.Error`` when SQLite cannot open it)."""
    return sqlite3.connect(f"file:{folder / LIBRARY}?mode=ro", uri=True, timeout=10.0, isolation_level=None)


def check_library(memory: MemoryParts, manifest: Manifest, ready: list[str], report: Report) -> bool:
    """Append the layer's problems; True when it is sound enough to compare with the graph (``--deep``)."""
    folder, file = memory.path, memory.path / LIBRARY
    if not manifest.video_totals().in_graph:
        return False
    if file.exists() and not file.is_file():
        report.problems.append(damage("a folder, not a file, is in its place"))
        return False
    if file.is_file() and (verdict := _verdict(folder)) != "ok":
        log.debug("%s: %s", file, verdict)
        report.problems.append(damage("SQLite cannot read it whole (the file is damaged, cut short or not a "
                                       "database)"))
        return False
    if file.is_file():
        with contextlib.closing(connect(folder)) as conn:
            layout = _read(conn, "SELECT value FROM meta WHERE key = 'layout'")
            missing = _missing_tables(conn) if layout == [(layer.LAYOUT,)] else []  # an older layout: stale
        if missing:
            report.problems += [damage(text) for text in missing]
            return False
    have = layer.generation(folder)
    if have != manifest.generation:
        what = "is missing" if have is None else f"matches generation {have}, not the memory's {manifest.generation}"
        report.problems.append(Problem(PART, f"the library layer ({LIBRARY}: entities linked across videos, "
                                       f"activities) {what}; the entity tools answer per video until it is computed",
                                       True))
        return False
    with contextlib.closing(connect(folder)) as conn:
        try:
            found = _disagreements(conn) + _videos(memory, conn, ready)
            report.parts[PART] = _summary(conn)
        except (sqlite3.Error, ValueError, TypeError, AttributeError) as exc:  # a cell edited into nonsense
            log.debug("%s: %s", LIBRARY, exc)
            found = [f"its rows cannot be read (a cell holds what its column cannot: {type(exc).__name__})"]
    report.problems += [damage(text) for text in found]
    return not found


def _verdict(folder: Path) -> str:
    """``PRAGMA quick_check``'s first line, or SQLite's error."""
    try:
        with contextlib.closing(connect(folder)) as conn:
            return str(conn.execute("PRAGMA quick_check").fetchone()[0])
    except sqlite3.Error as exc:
        return str(exc)


def _missing_tables(conn: sqlite3.Connection) -> list[str]:
    """Each table or column of the layout the file lacks."""
    with contextlib.closing(sqlite3.connect(":memory:")) as want:
        want.executescript(layer._SCHEMA)
        tables = [t for (t,) in want.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        columns = {t: [c[1] for c in want.execute(f'PRAGMA table_info("{t}")')] for t in tables}
    found = []
    for table in tables:
        have = [c[1] for c in conn.execute(f'PRAGMA table_info("{table}")')]
        if not have:
            found.append(f"table {table} is missing")
        elif lost := [c for c in columns[table] if c not in have]:
            found.append(f"table {table} lacks column(s) {', '.join(lost)}")
    return found


def _some(items: list[str]) -> str:
    return ", ".join(items[:EXAMPLES]) + (f" and {len(items) - EXAMPLES} more" if len(items) > EXAMPLES else "")


def _disagreements(conn: sqlite3.Connection) -> list[str]:
    """Where the tables contradict each other (no video read back)."""
    ids = {(v, t, k): lib for v, t, k, lib in conn.execute("SELECT video_id, entity_type, key, lib_id FROM ids")}
    members = conn.execute("SELECT canonical_id, lib_id, video_id, entity_type, keys, place, place_lib "
                           "FROM members").fetchall()
    lib_of = {m[0]: m[1] for m in members}
    claimed: dict[tuple[str, str, str], set[tuple[str, str]]] = {}
    for cid, lib, v, t, keys, _, _ in members:
        for k in json.loads(keys):
            claimed.setdefault((v, t, k), set()).add((lib, cid))
    found = []
    wrong = sorted({cid for key, owners in claimed.items() for _, cid in owners
                    if ids.get(key) not in {lib for lib, _ in owners}})
    if wrong:
        found.append(f"members differ from the library ids the layer remembers (table ids) in {len(wrong)} row(s): "
                     f"{_some(wrong)}")
    places = sorted(cid for cid, _, _, _, _, place, place_lib in members
                    if place is not None and lib_of.get(place) != place_lib)
    if places:
        found.append(f"members give {len(places)} entity(ies) a place other than their place's library entity: "
                     f"{_some(places)}")
    clusters = sorted(f"{v}/{label} ({kind})" for v, kind, label, person, canonical in conn.execute(
        "SELECT video_id, kind, label, person_id, canonical_id FROM clusters")
        if person is None or ids.get((v, f"person:{kind}", label)) != person
        or (canonical is not None and canonical not in lib_of))
    if clusters:
        found.append(f"clusters differ from the people the layer remembers (table ids) in {len(clusters)} row(s): "
                     f"{_some(clusters)}")
    found += _activity_disagreements(conn)
    found += _numbers(conn, list(ids.values()))
    return found


def _activity_disagreements(conn: sqlite3.Connection) -> list[str]:
    found = []
    lost = [a for (a,) in conn.execute("SELECT DISTINCT activity FROM occurrences WHERE activity NOT IN "
                                       "(SELECT activity FROM activities) ORDER BY activity")]
    if lost:
        found.append(f"occurrences name {len(lost)} activity(ies) the activities table lacks: {_some(lost)}")
    leaderless = [a for (a,) in conn.execute(
        "SELECT a.activity FROM activities a WHERE NOT EXISTS (SELECT 1 FROM activities b WHERE b.activity = a.grp "
        "AND b.grp = b.activity) OR NOT (a.similarity BETWEEN 0 AND 1) ORDER BY a.activity")]
    if leaderless:
        found.append(f"activities put {len(leaderless)} activity(ies) in a group without its leader: "
                     f"{_some(leaderless)}")
    return found


def _numbers(conn: sqlite3.Connection, used: list[str]) -> list[str]:
    """The next library and person numbers (``meta``) must be past every id in use."""
    found = []
    meta = dict(conn.execute("SELECT key, value FROM meta"))
    for prefix, key in ((ENTITY, "next_number"), (PERSON, "next_person")):
        numbers = [int(i[len(prefix):]) for i in used if isinstance(i, str) and i.startswith(prefix)
                   and i[len(prefix):].isdigit()]
        if numbers and not (type(meta.get(key)) is int and meta[key] > max(numbers)):
            found.append(f"meta {key} is {meta.get(key)!r}, not past {prefix}{max(numbers):04d} (the next id "
                         "would be one in use)")
    return found


def _videos(memory: MemoryParts, conn: sqlite3.Connection, ready: list[str]) -> list[str]:
    """Rows of videos the memory does not hold; members per video against the ``entities`` table's rows."""
    held = set(ready)
    found = []
    for table in ("members", "occurrences", "clusters"):
        stray = sorted(v for (v,) in conn.execute(f"SELECT DISTINCT video_id FROM {table}") if v not in held)
        if stray:
            found.append(f"{table} hold rows of {len(stray)} video(s) the memory does not hold: {_some(stray)}")
    rows = _entity_rows(memory)
    if rows is not None:
        have = dict(conn.execute("SELECT video_id, count(*) FROM members GROUP BY video_id"))
        wrong = sorted(f"{v} ({have.get(v, 0)} vs {rows.get(v, 0)})" for v in held
                       if have.get(v, 0) != rows.get(v, 0))
        if wrong:
            found.append(f"members of {len(wrong)} video(s) differ in number from the entities table's rows: "
                         f"{_some(wrong)}")
    return found


def _entity_rows(memory: MemoryParts) -> dict[str, int] | None:
    """Rows per video of the lance ``entities`` table (None: it cannot be read; its own check says so)."""
    try:
        table = memory.entities.table()
        if table is None:
            return {}
        column = table.search().select(["video_id"]).limit(None).to_arrow().column("video_id")
        return dict(Counter(column.to_pylist()))
    except Exception:  # noqa: BLE001 - an unreadable table is check_entities' to report
        return None


def _summary(conn: sqlite3.Connection) -> str:
    count = {t: conn.execute(q).fetchone()[0] for t, q in (
        ("entities", "SELECT count(DISTINCT lib_id) FROM members"),
        ("people", "SELECT count(DISTINCT person_id) FROM clusters"),
        ("activities", "SELECT count(*) FROM activities"))}
    return (f"{LIBRARY}: {count['entities']} library entities, {count['people']} people, "
            f"{count['activities']} activities")


# --- repair ------------------------------------------------------------------------------

def salvage(file: Path) -> layer.Seed:
    """What a damaged layer still tells: the library ids it remembers (its ``ids`` rows; when that table is lost,
    its members' and clusters' ids) and its next numbers, so a layer computed again keeps them. Nothing when
    SQLite cannot read the file whole."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{file}?mode=ro", uri=True)) as conn:
            if not file.is_file() or conn.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                return (), {}
            rows = _remembered(conn)
            meta = dict(_read(conn, "SELECT key, value FROM meta WHERE key IN ('next_number', 'next_person')"))
    except sqlite3.Error:
        return (), {}
    kept = [r for r in rows if all(isinstance(x, str) for x in r) and any(
        r[3].startswith(p) and r[3][len(p):].isdigit() for p in (ENTITY, PERSON))]
    counters = {}
    for prefix, key in ((ENTITY, "next_number"), (PERSON, "next_person")):
        numbers = [int(r[3][len(prefix):]) + 1 for r in kept if r[3].startswith(prefix)]
        given = meta.get(key)
        counters[key] = max([given if type(given) is int and given > 0 else 1, *numbers])
    return kept, counters


def _read(conn: sqlite3.Connection, query: str) -> list[tuple]:
    try:
        return conn.execute(query).fetchall()
    except sqlite3.Error:
        return []


def _remembered(conn: sqlite3.Connection) -> list[tuple]:
    rows = _read(conn, "SELECT video_id, entity_type, key, lib_id FROM ids")
    if rows:
        return rows
    members = _read(conn, "SELECT video_id, entity_type, keys, lib_id FROM members")
    rows = [(v, t, k, lib) for v, t, keys, lib in members for k in _keys(keys)]
    return rows + [(v, f"person:{kind}", label, p) for v, kind, label, p in _read(
        conn, "SELECT video_id, kind, label, person_id FROM clusters WHERE person_id IS NOT NULL")]


def _keys(text: object) -> list[str]:
    try:
        keys = json.loads(text) if isinstance(text, str) else []
    except ValueError:
        return []
    return [k for k in keys if isinstance(k, str)] if isinstance(keys, list) else []


def repair_library(memory: MemoryParts, graph: GraphStore, gen: int, problems: list[Problem], done: list[str]) -> None:
    """A damaged layer is set aside and computed whole again; a stale or missing one is computed again. A
    failure is logged, not raised (the layer is derived): the check after the repair reports it."""
    if not any(p.part == PART and p.text.startswith(DAMAGE) for p in problems):
        if layer.bring_up_to_date(memory, graph, gen):
            done.append("computed the library layer again (entities across videos, activities)")
        return
    seed = salvage(memory.path / LIBRARY)
    try:
        layer.rebuild(memory, graph, gen, afresh=True, seed=seed)
    except Exception as exc:  # noqa: BLE001 - derived data: the check after the repair reports it
        log.warning("the library layer of %s could not be computed (%s)", memory.path, exc)
        return
    kept = f", keeping the {len(seed[0])} library id(s) it remembered" if seed[0] else ""
    done.append(f"set the damaged {LIBRARY} aside ({LIBRARY}.damaged) and computed the library layer again from the "
                f"graph and the tables{kept}")
