"""``memtools check --deep``: the derived files computed again from the graph and compared, row by row.

The quick check (``library_check``, ``navigation_check``) counts rows and compares the tables with each
other; a row edited in place with its counterpart (a cluster's person and the id the layer remembers for
it, a navigation row's JSON) passes it. The deep check reads every ready video back from the graph once,
in chunks, and compares:

* ``navigation.sqlite``: every row of the video, exactly as ``store.graph.rows`` builds it (videos whose
  rows are still in kuzu's own tables, written before the file, are left to the counts);
* ``library.sqlite``: what each video gives the layer (``layer.video_layer``), its members' own cells (name,
  keys, attributes, place, vector), its occurrences, its clusters (what they are attached to) and, over
  the whole library, the person each cluster is placed in (``identity.assign``, with the ids the layer
  remembers, as every update places them). Library ids, link evidence and activity groups depend on the
  order videos came in, so they are checked for consistency by the quick check, never recomputed here.

Time: one read of every video's graph and of the ``entities`` table: 2 s for 500 caption-imported videos, whose
quick check takes 0.2 s (``memtools repair`` always checks deep; ``memtools check`` when given ``--deep``).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from memtools.store.graph.navigation import NAVIGATION
from memtools.store.graph.rows import DERIVED, columns, rows_for
from memtools.store.integrity.library_check import EXAMPLES, connect, damage
from memtools.store.integrity.navigation_check import DIFFER
from memtools.store.integrity.navigation_check import PART as NAVIGATION_PART
from memtools.store.library import layer, people
from memtools.store.library.identity import Cluster, assign
from memtools.store.problems import Problem, Report

if TYPE_CHECKING:
    from memtools.schema import VideoGraph
    from memtools.store.catalog.parts import MemoryParts

CHUNK = 100  # videos read back at a time
MEMBER_CELLS = "video_id, entity_type, name, keys, named, attrs, place, vector"
OCCURRENCE_CELLS = "video_id, activity, label, t_start, t_end, macro_id, place"
CLUSTER_CELLS = "name, user_named, spans, canonical_id, sources, confidence"


class Differences:
    """Rows one table should hold (by key) against those it holds: missing, extra, different."""

    def __init__(self) -> None:
        self.missing: list[str] = []
        self.extra: list[str] = []
        self.changed: list[str] = []

    def add(self, want: Mapping[Any, tuple], have: Mapping[Any, tuple]) -> None:
        self.missing += sorted(_name(k) for k in want.keys() - have.keys())
        self.extra += sorted(_name(k) for k in have.keys() - want.keys())
        self.changed += sorted(_name(k) for k in want.keys() & have.keys() if want[k] != have[k])

    def text(self, table: str) -> str | None:
        parts = [f"{len(rows)} row(s) {what}" for rows, what in
                 ((self.missing, "missing"), (self.extra, "extra"), (self.changed, "different")) if rows]
        if not parts:
            return None
        shown = ", ".join([*self.missing, *self.extra, *self.changed][:EXAMPLES])
        return f"{table} differ from what the graph gives ({', '.join(parts)}; e.g. {shown})"


def _name(key: Any) -> str:
    return "/".join(map(str, key)) if isinstance(key, tuple) else str(key)


class LayerComparison:
    """The library layer's per-video rows computed again and compared, a chunk of videos at a time."""

    def __init__(self, memory: MemoryParts, conn: sqlite3.Connection) -> None:
        self.memory, self.conn = memory, conn
        self.tables = {name: Differences() for name in ("members", "occurrences", "clusters")}
        self.clusters: list[Cluster] = []
        self.blind = False  # the entities table could not be read: nothing to compare with

    def _rows(self, query: str, videos: list[str]) -> list[tuple]:
        marks = ", ".join("?" for _ in videos)
        return self.conn.execute(f"{query} WHERE video_id IN ({marks})", videos).fetchall()  # noqa: S608

    def add(self, graphs: Iterable[VideoGraph]) -> None:
        if self.blind:
            return
        try:
            layers = [layer.video_layer(g, rows) for g, rows in _entity_rows(self.memory, list(graphs))]
        except Exception:  # noqa: BLE001 - the entities table cannot be read: its own check reports that
            self.blind = True
            return
        videos = [v.video_id for v in layers]
        self.tables["members"].add(
            {p.id: _member_cells(p) for v in layers for p in v.profiles},
            {r[0]: tuple(r[1:]) for r in self._rows(f"SELECT canonical_id, {MEMBER_CELLS} FROM members", videos)})
        self.tables["occurrences"].add(
            {o[0]: tuple(o[1:]) for v in layers for o in v.occurrences},
            {r[0]: tuple(r[1:]) for r in self._rows(f"SELECT event_id, {OCCURRENCE_CELLS} FROM occurrences",
                                                    videos)})
        clusters = [c for v in layers if v.people is not None for c in people.clusters_of(self.memory.path, v.people)]
        self.clusters += clusters
        self.tables["clusters"].add(
            {c.key: (c.name, int(c.user_named), json.dumps(c.spans), c.canonical_id, json.dumps(c.sources),
                     c.confidence) for c in clusters},
            {tuple(r[:3]): tuple(r[3:]) for r in self._rows(f"SELECT video_id, kind, label, {CLUSTER_CELLS} "
                                                             "FROM clusters", videos)})

    def problems(self) -> list[Problem]:
        """Each table that differs, and the people placed again over the whole library (as ``people.relink``)."""
        if self.blind:
            return []
        remembered = {(v, t.split(":", 1)[1], k): lib for v, t, k, lib in self.conn.execute(
            "SELECT video_id, entity_type, key, lib_id FROM ids WHERE entity_type LIKE 'person:%'")}
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'next_person'").fetchone()
        _, links, _ = assign(self.clusters, sorted({c.video_id for c in self.clusters}), remembered,
                             1 if row is None else int(row[0]))
        placed = Differences()
        placed.add({key: (pid, json.dumps(ev), conf) for key, (pid, ev, conf) in links.items()},
                   {tuple(r[:3]): tuple(r[3:]) for r in self.conn.execute(
                       "SELECT video_id, kind, label, person_id, link, link_confidence FROM clusters")
                    if tuple(r[:3]) in links})
        texts = [t for name, d in self.tables.items() if (t := d.text(name))]
        if (t := placed.text("the people of clusters")) is not None:
            texts.append(t)
        return [damage(t) for t in texts]


def _member_cells(p: Any) -> tuple:
    """A member's own cells as ``layer._store`` writes them (its library id and link are history)."""
    return (p.video_id, p.entity_type, p.name, json.dumps(sorted(p.keys)), json.dumps(sorted(p.named)),
            json.dumps(p.attrs, sort_keys=True), p.place, layer._blob(p.vector))


def _entity_rows(memory: MemoryParts, graphs: list[VideoGraph]) -> Iterable[tuple[VideoGraph, list[dict]]]:
    """Each graph with its ``entities`` rows (vectors included), one query for the chunk."""
    table = memory.entities.table()
    by_video: dict[str, list[dict]] = {}
    if table is not None and graphs:
        where = "video_id IN (" + ", ".join("'" + g.video_id.replace("'", "''") + "'" for g in graphs) + ")"
        for row in table.search().where(where).limit(None).to_list():
            by_video.setdefault(row["video_id"], []).append(row)
    for g in graphs:
        yield g, sorted(by_video.get(g.video_id, []), key=lambda r: r["id"])


class NavigationComparison:
    """``navigation.sqlite``'s rows of each video against those its graph gives."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.wrong: list[str] = []

    def add(self, graphs: list[VideoGraph]) -> None:
        for graph in graphs:
            have = {name: self._held(name, graph.video_id) for name in DERIVED}
            if not any(have.values()):
                continue  # rows kept in kuzu's own tables (written before the file): the counts compare them
            want = rows_for([graph])
            if any(have[name] != {tuple(row[c] for c in columns(name)) for row in want[name]} for name in DERIVED):
                self.wrong.append(graph.video_id)

    def _held(self, table: str, video_id: str) -> set[tuple]:
        query = f"SELECT {', '.join(columns(table))} FROM {table} WHERE video_id = ?"  # noqa: S608 - names are ours
        return set(self.conn.execute(query, (video_id,)).fetchall())

    def problems(self) -> list[Problem]:
        found = [Problem(NAVIGATION_PART, f"{vid}: navigation rows {DIFFER}; navigation tools would show what the "
                         "video does not hold", True, vid) for vid in self.wrong[:EXAMPLES]]
        if len(self.wrong) > EXAMPLES:
            found.append(Problem(NAVIGATION_PART, f"{len(self.wrong) - EXAMPLES} more video(s) whose navigation rows "
                                 f"{DIFFER}", True))
        return found


def _navigation(memory: MemoryParts, report: Report, stack: contextlib.ExitStack) -> NavigationComparison | None:
    """A comparison of ``navigation.sqlite``'s rows, when SQLite reads the file whole (else that is reported)."""
    file = memory.path / NAVIGATION
    if not file.is_file():
        return None
    try:
        conn = stack.enter_context(contextlib.closing(sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True)))
        verdict = str(conn.execute("PRAGMA quick_check").fetchone()[0])
    except sqlite3.Error as exc:
        verdict = str(exc)
    if verdict == "ok":
        return NavigationComparison(conn)
    report.problems.append(Problem(NAVIGATION_PART, f"{NAVIGATION} cannot be read whole (the file is damaged or cut "
                                   "short); navigation tools fall back to slower queries", True))
    return None


def check_deep(memory: MemoryParts, ready: list[str], report: Report, *, library: bool) -> None:
    """Compare the derived files with the graph, video by video (``library``: the layer passed the quick
    check, so its rows can be compared; the navigation rows are compared unless their file was reported)."""
    navigation = not any(p.part == NAVIGATION_PART and not p.video_id for p in report.problems)
    library = library and not any(p.part == "entities" and not p.index_only for p in report.problems)
    with contextlib.ExitStack() as stack:
        layer_cmp = LayerComparison(memory, stack.enter_context(contextlib.closing(connect(memory.path)))) \
            if library else None
        nav_cmp = _navigation(memory, report, stack) if navigation else None
        if layer_cmp is None and nav_cmp is None:
            return
        with memory.reading(guard=False) as graph:
            for start in range(0, len(ready), CHUNK):
                graphs = list(graph.video_graphs(ready[start:start + CHUNK]).values())
                if nav_cmp is not None:
                    nav_cmp.add(graphs)
                if layer_cmp is not None:
                    layer_cmp.add(graphs)
        found = [*(nav_cmp.problems() if nav_cmp else []), *(layer_cmp.problems() if layer_cmp else [])]
    report.problems += found
    report.parts["deep"] = f"{len(ready)} video(s) read back: derived rows compared with the graph"
