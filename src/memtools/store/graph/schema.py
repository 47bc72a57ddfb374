"""The kuzu tables behind ``KuzuGraph``: node tables per kind, the one REL TABLE GROUP, the
per-macro detail rows, and how models are encoded into rows and decoded back."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from memtools.schema import (
    KIND_OF,
    Entity,
    Grounding,
    Keyframe,
    MacroEvent,
    MicroEvent,
    Node,
    NodeKind,
    OcrText,
    Speech,
    SuperEvent,
    Video,
    VideoGraph,
)

# table name, model, [(column, kuzu type, arrow type)]; JSON columns are encoded dicts.
_S, _D, _I, _L = "STRING", "DOUBLE", "INT64", "STRING[]"
_ARROW = {_S: pa.string(), _D: pa.float64(), _I: pa.int64(), _L: pa.list_(pa.string())}


@dataclass(frozen=True)
class _Table:
    name: str
    kind: NodeKind
    model: type[Node]
    columns: tuple[tuple[str, str], ...]
    json_columns: tuple[str, ...] = ()

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([(c, _ARROW[t]) for c, t in self.columns])


TABLES: dict[NodeKind, _Table] = {
    t.kind: t
    for t in (
        _Table("Video", NodeKind.VIDEO, Video, (
            ("id", _S), ("video_id", _S), ("title", _S), ("description", _S), ("themes", _L),
            ("key_entities", _L), ("emotional_tone", _S), ("duration", _D), ("fps", _D),
            ("width", _I), ("height", _I), ("source_path", _S), ("content_hash", _S),
            ("recorded_at", _S))),
        _Table("SuperEvent", NodeKind.SUPER, SuperEvent, (
            ("id", _S), ("video_id", _S), ("ordinal", _I), ("label", _S), ("description", _S),
            ("key_entities", _L), ("t_start", _D), ("t_end", _D))),
        _Table("MacroEvent", NodeKind.MACRO, MacroEvent, (
            ("id", _S), ("video_id", _S), ("super_id", _S), ("ordinal", _I), ("label", _S),
            ("summary", _S), ("key_entities", _L), ("t_start", _D), ("t_end", _D))),
        _Table("Entity", NodeKind.ENTITY, Entity, (
            ("id", _S), ("video_id", _S), ("macro_id", _S), ("name", _S), ("entity_type", _S),
            ("attributes", _S), ("description", _S), ("grounding", _S)),
            json_columns=("attributes", "grounding")),
        _Table("MicroEvent", NodeKind.EVENT, MicroEvent, (
            ("id", _S), ("video_id", _S), ("macro_id", _S), ("event_type", _S), ("subject", _S),
            ("object", _S), ("action", _S), ("description", _S), ("t_start", _D), ("t_end", _D))),
        _Table("OcrText", NodeKind.OCR, OcrText, (
            ("id", _S), ("video_id", _S), ("macro_id", _S), ("text", _S), ("description", _S),
            ("t_start", _D), ("t_end", _D))),
        _Table("Speech", NodeKind.SPEECH, Speech, (
            ("id", _S), ("video_id", _S), ("macro_id", _S), ("text", _S), ("speaker", _S),
            ("t_start", _D), ("t_end", _D))),
        _Table("Keyframe", NodeKind.KEYFRAME, Keyframe, (
            ("id", _S), ("video_id", _S), ("t", _D), ("path", _S), ("macro_id", _S))),
    )
}
_BY_NAME = {t.name: t for t in TABLES.values()}
_DETAIL = "MacroDetail"  # per macro event: its subgraph as JSON (see _details; store/graph/navigation.py)

# Every (source table, target table) pair an edge may join; one REL TABLE GROUP holds them all.
_PAIRS = (
    ("Video", "SuperEvent"), ("SuperEvent", "MacroEvent"), ("MacroEvent", "Entity"),
    ("MacroEvent", "MicroEvent"), ("MacroEvent", "OcrText"), ("Entity", "Entity"),
    ("Entity", "OcrText"), ("OcrText", "Entity"), ("OcrText", "OcrText"),
    ("Entity", "MicroEvent"), ("MicroEvent", "Entity"), ("MicroEvent", "MicroEvent"),
    ("MacroEvent", "MacroEvent"), ("SuperEvent", "SuperEvent"), ("Keyframe", "MacroEvent"),
    ("Keyframe", "Entity"),
)
# Added with speech (issue 12): memories made before get them with ALTER TABLE on their next write.
_SPEECH_PAIRS = (("MacroEvent", "Speech"), ("Entity", "Speech"), ("Speech", "Entity"), ("Speech", "MicroEvent"))


def _schema_ddl() -> list[str]:
    ddl = []
    for table in TABLES.values():
        cols = ", ".join(f"{c} {t}" for c, t in table.columns)
        ddl.append(f"CREATE NODE TABLE IF NOT EXISTS {table.name}({cols}, PRIMARY KEY(id))")
    pairs = ", ".join(f"FROM {a} TO {b}" for a, b in (*_PAIRS, *_SPEECH_PAIRS))
    ddl.append(f"CREATE REL TABLE IF NOT EXISTS Rel({pairs}, category STRING, label STRING, description STRING)")
    ddl += [f"ALTER TABLE Rel ADD IF NOT EXISTS FROM {a} TO {b}" for a, b in _SPEECH_PAIRS]
    ddl.append("ALTER TABLE Video ADD IF NOT EXISTS recorded_at STRING")  # wall-clock time (issue 31)
    return ddl  # the navigation rows (MacroDetail and the rest) live in navigation.sqlite


def _details(graph: VideoGraph) -> list[dict[str, str]]:
    """One row per macro event: its children and the edges among them, as JSON, so get_subgraph
    is one primary-key lookup (a traversal costs ~20 ms at 1,000 h on kuzu 0.11.3)."""
    children: dict[str, list[Entity | MicroEvent | OcrText | Speech]] = defaultdict(list)
    for node in graph.macro_children():
        children[node.macro_id].append(node)
    owner = {n.id: n.macro_id for nodes in children.values() for n in nodes}
    edges: dict[str, list[list[str]]] = defaultdict(list)
    for e in graph.edges:
        macro = owner.get(e.source)
        if macro is not None and owner.get(e.target) == macro:
            edges[macro].append([e.source, e.target, e.category.value, e.label, e.description])
    rows = []
    for m in graph.macros:
        nodes = sorted(children.get(m.id, []), key=lambda n: n.id)
        encoded = [{**_encode(TABLES[KIND_OF[type(n)]], n), "_label": TABLES[KIND_OF[type(n)]].name} for n in nodes]
        rows.append({"id": m.id, "video_id": graph.video_id, "children": json.dumps(encoded, ensure_ascii=False),
                     "edges": json.dumps(sorted(edges.get(m.id, [])), ensure_ascii=False)})
    return rows


def _encode(table: _Table, node: Any) -> dict[str, Any]:
    data = node.model_dump(mode="json")
    if table.kind is NodeKind.VIDEO:
        data["video_id"] = node.id
    for col in table.json_columns:
        data[col] = json.dumps(data[col], ensure_ascii=False, sort_keys=True)
    return {c: data.get(c) for c, _ in table.columns}


def _decode(row: dict[str, Any]) -> Node:
    table = _BY_NAME[row["_label"] if "_label" in row else row["_LABEL"]]  # kuzu: _label, ladybug: _LABEL
    data: dict[str, Any] = {c: row.get(c) for c, _ in table.columns}
    for col in table.json_columns:
        data[col] = json.loads(data[col]) if data[col] else {}
    if table.kind is NodeKind.VIDEO:
        data.pop("video_id")
    if table.kind is NodeKind.ENTITY:
        data["grounding"] = Grounding(**data["grounding"])
    if table.kind is NodeKind.VIDEO and not data.get("recorded_at"):
        data["recorded_at"] = None  # a memory made before recording times (or a video without one)
    for key in ("themes", "key_entities"):
        if key in data and data[key] is None:
            data[key] = []
    return table.model.model_construct(**data) if table.kind is not NodeKind.ENTITY else table.model(**data)
