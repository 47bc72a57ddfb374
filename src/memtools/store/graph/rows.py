"""Navigation rows: per-video and per-node rows derived from a video's graph, so the navigation
tools answer with a few primary-key lookups however large the library grows.

Kuzu 0.11.3 answers a primary-key lookup in well under a millisecond at any size, but a
``WHERE n.video_id = $vid`` filter scans the whole node table and a traversal through the
edge table group to an unlabeled node materialises every node table: at 1,000 h (420k nodes)
the first outline of a video took ~10 ms and ``get_relations`` ~15 ms. Three tables hold what
those reads need, kept in ``navigation.sqlite`` beside the graph (``store/graph/navigation.py``
says why there and when they are written) and counted and rebuilt by ``memtools check`` /
``memtools repair`` (``store/integrity/navigation_check.py``):

* ``MacroDetail`` (one row per macro event, ``graph_schema._details``): its children and the
  edges among them, for ``get_subgraph``;
* ``VideoOutline`` (one row per video): the root, its super events and its macro events, for
  the outline every navigation tool starts from;
* ``NodeEdges`` (one row per node, also for nodes without edges, so a missing row means "written
  before these rows existed"): every edge at the node. The node at the far end is not copied
  (that would double the graph); each edge says where to find it: the macro event whose
  ``MacroDetail`` lists it (leaves), its video's ``VideoOutline`` (root, super and macro
  events), or the node itself inline (keyframes, which are small).

This module builds and decodes the rows. Memories written before ``navigation.sqlite`` keep them
in kuzu node tables of the same names, which ``store/graph/cypher.py`` still reads; a video with
no row anywhere is answered by the original queries, and ``memtools repair`` adds its rows.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from memtools.schema import (
    KIND_OF,
    EdgeCategory,
    Entity,
    MacroEvent,
    MicroEvent,
    Node,
    OcrText,
    Speech,
    SuperEvent,
    Video,
    VideoGraph,
)
from memtools.store.graph.schema import _DETAIL, TABLES, _decode, _details, _encode

OUTLINE, EDGES = "VideoOutline", "NodeEdges"
DERIVED = (_DETAIL, OUTLINE, EDGES)  # every derived table, in the order they are written

# (table, columns after id and video_id); every column is a JSON string
_COLUMNS: dict[str, tuple[str, ...]] = {_DETAIL: ("children", "edges"), OUTLINE: ("video", "supers", "macros"),
                                        EDGES: ("edges",)}


def columns(table: str) -> tuple[str, ...]:
    return ("id", "video_id", *_COLUMNS[table])


def _encoded(node: Node) -> dict[str, Any]:
    table = TABLES[KIND_OF[type(node)]]
    return {**_encode(table, node), "_label": table.name}


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def outline_row(graph: VideoGraph) -> dict[str, str]:
    return {"id": graph.video_id, "video_id": graph.video_id, "video": _dumps(_encoded(graph.video)),
            "supers": _dumps([_encoded(s) for s in sorted(graph.supers, key=lambda s: s.ordinal)]),
            "macros": _dumps([_encoded(m) for m in sorted(graph.macros, key=lambda m: m.ordinal)])}


def edge_rows(graph: VideoGraph) -> list[dict[str, str]]:
    """One row per node: ``[source, target, category, label, description, where]`` per edge at it,
    ``where`` saying how to find the far end (see the module docstring)."""
    leaves: list[Entity | MicroEvent | OcrText | Speech] = [*graph.entities, *graph.events, *graph.ocr, *graph.speech]
    leaf_macro = {n.id: n.macro_id for n in leaves}
    keyframes = {k.id: _encoded(k) for k in graph.keyframes}
    at: dict[str, list[list[Any]]] = defaultdict(list)
    for e in [*graph.hierarchy_edges(), *graph.edges]:
        ends = ((e.source, e.target),) if e.source == e.target else ((e.source, e.target), (e.target, e.source))
        for node, other in ends:  # an edge to itself is listed once
            where = leaf_macro.get(other) or keyframes.get(other)
            at[node].append([e.source, e.target, e.category.value, e.label, e.description, where])
    return [{"id": node.id, "video_id": graph.video_id, "edges": _dumps(sorted(at.get(node.id, []), key=_order))}
            for node in graph.nodes()]


def _order(edge: list[Any]) -> tuple[str, str, str, str, str]:
    return edge[2], edge[0], edge[1], edge[3], edge[4]


def rows_for(graphs: Sequence[VideoGraph]) -> dict[str, list[dict[str, str]]]:
    """Every derived row of these videos, by table."""
    rows: dict[str, list[dict[str, str]]] = {name: [] for name in DERIVED}
    for graph in graphs:
        rows[_DETAIL] += _details(graph)
        rows[OUTLINE].append(outline_row(graph))
        rows[EDGES] += edge_rows(graph)
    return rows


def expected_counts(counts: dict[str, int]) -> dict[str, int]:
    """Derived rows a video should have, from its node counts (the manifest's ``counts``)."""
    nodes = 1 + sum(counts.get(kind.value, 0) for kind in TABLES if kind.value != "video")
    return {_DETAIL: counts.get("macro", 0), OUTLINE: 1, EDGES: nodes}


# --- reading ------------------------------------------------------------------------------


class Outline:
    """A ``VideoOutline`` row, decoded on demand."""

    def __init__(self, video: str, supers: str, macros: str) -> None:
        self._raw = (video, supers, macros)
        self._nodes: dict[str, Node] | None = None

    def video(self) -> Video:
        return _decode(json.loads(self._raw[0]))  # type: ignore[return-value]

    def supers(self) -> list[SuperEvent]:
        return [_decode(row) for row in json.loads(self._raw[1])]  # type: ignore[misc]

    def macros(self) -> list[MacroEvent]:
        return [_decode(row) for row in json.loads(self._raw[2])]  # type: ignore[misc]

    def node(self, node_id: str) -> Node | None:
        if self._nodes is None:
            nodes: list[Node] = [self.video(), *self.supers(), *self.macros()]
            self._nodes = {n.id: n for n in nodes}
        return self._nodes.get(node_id)


EdgeTuple = tuple[str, str, EdgeCategory, str, str, Node]


def read_edges(node_id: str, raw: str, direction: str, categories: Sequence[str] | None,
               labels: Sequence[str] | None, limit: int, outline: Callable[[str], Outline | None],
               children: Callable[[str], dict[str, dict]]) -> list[EdgeTuple]:
    """The edges of a ``NodeEdges`` row, filtered and ordered as ``KuzuGraph.edges`` returns them
    (per direction by category and far-end id, at most ``limit``), with the far ends decoded.
    ``outline(video_id)`` and ``children(macro_id)`` (id -> encoded node) fetch the rows they live in."""
    cats, labs = set(categories or ()), set(labels or ())
    wanted = [e for e in json.loads(raw) if (not cats or e[2] in cats) and (not labs or e[3] in labs)]
    picked = []
    if direction in ("out", "both"):
        picked += sorted((e for e in wanted if e[0] == node_id), key=lambda e: (e[2], e[1]))[:limit]
    if direction in ("in", "both"):
        picked += sorted((e for e in wanted if e[1] == node_id), key=lambda e: (e[2], e[0]))[:limit]
    details: dict[str, dict[str, dict]] = {}
    outlines: dict[str, Outline | None] = {}
    result = []
    for source, target, category, label, description, where in picked:
        other_id = target if source == node_id else source
        if isinstance(where, dict):
            other: Node | None = _decode(where)
        elif where:
            if where not in details:
                details[where] = children(where)
            found = details[where].get(other_id)
            other = _decode(found) if found is not None else None
        else:
            video_id = other_id.split("/", 1)[0]
            if video_id not in outlines:
                outlines[video_id] = outline(video_id)
            row = outlines[video_id]
            other = row.node(other_id) if row is not None else None
        if other is None:  # a derived row out of step with the graph: memtools check reports it
            continue
        result.append((source, target, EdgeCategory(category), label, description or "", other))
    return result
