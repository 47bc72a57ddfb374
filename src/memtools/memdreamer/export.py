"""Write a memtools ``VideoGraph`` in the MEMDREAMER release layout (formats/memdreamer.md §1.9).

Used to make release-shaped fixtures for the importer's tests, and to hand a memtools memory
to the MEMDREAMER reference code (``MemoryBase`` loads what this writes). What the layout
cannot hold is left out: the video's fps/size/source, edges between nodes of different
macro events, and keyframes that depict a macro event rather than an entity. Speech (not
in the reference layout) is written as subgraph nodes of ``node_type`` "Speech" with their
text, speaker and time range, and SAYS / ABOUT edges of ``relation_type`` "SPEECH"; the
importer reads them back.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from memtools.memdreamer.files import EMBEDDINGS_FILE, GRAPH_FILES, PHASE2_DIR, PHASE_DIRS, UNIFICATION_FILE
from memtools.memdreamer.subgraph import BEST_FRAME
from memtools.schema import EdgeCategory, Entity, MacroEvent, MicroEvent, OcrText, Speech, SuperEvent, VideoGraph

# relation_type written for each of our categories (their vocabulary, formats §1.2).
_TYPES = {EdgeCategory.SPATIAL: "SPATIAL", EdgeCategory.ROLE: "SEMANTIC", EdgeCategory.TEMPORAL: "TEMPORAL",
          EdgeCategory.MACRO_CAUSAL: "CAUSAL", EdgeCategory.PROGRESSION: "PROGRESSION",
          EdgeCategory.SPEECH: "SPEECH"}


def _their_id(our_id: str, prefix: str, width: int, fallback: int) -> str:
    match = re.search(rf"{prefix}_(\d+)$", our_id)
    return f"{prefix}_{int(match.group(1)) if match else fallback:0{width}d}"


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")


def export_memdreamer(graph: VideoGraph, root: str | Path, *, video_key: str | None = None,
                      memory_path: str | Path | None = None, embedder=None) -> Path:
    """Write ``graph`` under ``<root>/<video_key>/`` and return that folder.

    ``memory_path`` (the memory folder) lets keyframe images that DEPICT an entity be copied
    to ``features/<ent>/best_frame.jpg``. ``embedder`` (any memtools ``Embedder``) writes an
    ``embeddings.json`` of subgraph nodes with the reference's text format (§1.5).
    """
    folder = Path(root) / (video_key or graph.video_id)
    supers = {s.id: _their_id(s.id, "super", 2, s.ordinal) for s in graph.supers}
    macros = {m.id: _their_id(m.id, "macro", 4, m.ordinal) for m in graph.macros}
    slots = {m.id: slot for slot, m in enumerate(sorted(graph.macros, key=lambda m: m.ordinal))}
    _write_json(folder / PHASE_DIRS[0] / GRAPH_FILES[0], _hierarchy(graph, supers, macros, slots))
    unification = _unification(graph.entities)
    if unification:
        _write_json(folder / PHASE_DIRS[0] / UNIFICATION_FILE, {"entity_mappings": unification})
    children: dict[str, list[Entity | MicroEvent | OcrText | Speech]] = {m.id: [] for m in graph.macros}
    for node in graph.macro_children():
        children[node.macro_id].append(node)
    for macro in graph.macros:
        slot = slots[macro.id]
        episode = folder / PHASE2_DIR / f"episode_{slot:04d}" / f"episode_{slot:04d}"
        _write_json(episode / "step5_subgraph.json", _subgraph(graph, macro, slot, children[macro.id]))
    if memory_path is not None:
        _copy_keyframes(graph, Path(memory_path), folder, slots)
    if embedder is not None:
        _write_embeddings(graph, folder / EMBEDDINGS_FILE, slots, embedder)
    return folder


def _hierarchy(graph: VideoGraph, supers: dict[str, str], macros: dict[str, str],
               slots: dict[str, int]) -> dict[str, Any]:
    v = graph.video

    def relations(category: EdgeCategory, ids: dict[str, str]) -> list[dict[str, str]]:
        return [{"source_id": ids[e.source], "target_id": ids[e.target], "relation_type": _TYPES[category],
                 "relation_label": e.label, "reason": e.description}
                for e in graph.edges if e.category is category]

    def super_item(s: SuperEvent) -> dict[str, Any]:
        return {"node_id": supers[s.id], "label": s.label, "description": s.description,
                "time_range": [s.t_start, s.t_end], "key_entities": list(s.key_entities),
                "sub_macro_ids": [macros[m.id] for m in graph.macros if m.super_id == s.id]}

    def macro_item(m: MacroEvent) -> dict[str, Any]:
        return {"node_id": macros[m.id], "label": m.label, "summary": m.summary,
                "time_range": [m.t_start, m.t_end], "anchors": {"slot_ids": [slots[m.id]]},
                "key_entity_names": list(m.key_entities)}

    return {
        "root_event": {"node_id": "root_001", "title": v.title, "description": v.description,
                       "time_range": {"start": 0.0, "end": v.duration}, "themes": list(v.themes),
                       "key_entities": list(v.key_entities), "emotional_tone": v.emotional_tone},
        "super_events": [super_item(s) for s in graph.supers],
        "macro_events": [macro_item(m) for m in graph.macros],
        "super_relations": relations(EdgeCategory.PROGRESSION, supers),
        "macro_relations": relations(EdgeCategory.MACRO_CAUSAL, macros),
        "subevent_relations": [{"source_id": supers[m.super_id], "target_id": macros[m.id],
                                "relation_type": "HIERARCHICAL", "relation_label": "SUBEVENT_OF"}
                               for m in graph.macros],
        "root_relations": [{"source_id": supers[s.id], "target_id": "root_001", "relation_type": "HIERARCHICAL",
                            "relation_label": "SUBEVENT_OF"} for s in graph.supers],
    }


def _local(node_id: str) -> str:
    return node_id.rsplit("/", 1)[-1]


def _subgraph(graph: VideoGraph, macro: MacroEvent, slot: int,
              nodes: list[Entity | MicroEvent | OcrText | Speech]) -> dict[str, Any]:
    offset = macro.t_start
    items: list[dict[str, Any]] = []
    for node in nodes:
        if isinstance(node, Entity):
            g = node.grounding
            grounding: dict[str, Any] = {"distinctive_features": list(g.distinctive_features)}
            if g.primary_time is not None:
                grounding["primary_time_sec"] = g.primary_time - offset
            if g.spatial_hint:
                grounding["spatial_hint"] = g.spatial_hint
            attributes = {k: v for k, v in node.attributes.items() if k != "aliases"}
            items.append({"node_type": "Entity", "node_id": _local(node.id), "name": node.name,
                          "entity_type": node.entity_type.value, "description": node.description,
                          "attributes": attributes, "visual_grounding": grounding})
        elif isinstance(node, MicroEvent):
            items.append({"node_type": "Event", "node_id": _local(node.id), "event_type": node.event_type,
                          "action": node.action, "description": node.description,
                          "time_range": [node.t_start - offset, node.t_end - offset],
                          "subject": node.subject, "object": node.object,
                          "subject_entity_ids": [], "object_entity_ids": []})
        elif isinstance(node, Speech):
            items.append({"node_type": "Speech", "node_id": _local(node.id), "text": node.text,
                          "speaker": node.speaker, "time_range": [node.t_start - offset, node.t_end - offset]})
        else:
            items.append({"node_type": "OCRText", "node_id": _local(node.id), "text": node.text,
                          "description": node.description, "time_range": [node.t_start - offset, node.t_end - offset]})
    inside = {n.id for n in nodes}
    edges = [{"source_id": _local(e.source), "target_id": _local(e.target), "relation_type": _TYPES[e.category],
              "relation_label": e.label, "reason": e.description}
             for e in graph.edges if e.source in inside and e.target in inside]
    return {"slot_id": slot, "start_sec": macro.t_start, "end_sec": macro.t_end, "nodes": items, "edges": edges}


def _unification(entities: list[Entity]) -> list[dict[str, Any]]:
    groups: dict[str, dict[str, Any]] = {}
    for e in entities:
        aliases = [a.strip() for a in e.attributes.get("aliases", "").split(",") if a.strip()]
        if e.name and aliases:
            group = groups.setdefault(e.name.lower(), {"canonical_name": e.name,
                                                       "canonical_type": e.entity_type.value, "variants": []})
            group["variants"] += [a for a in aliases if a not in group["variants"]]
    return list(groups.values())


def _copy_keyframes(graph: VideoGraph, memory_path: Path, folder: Path, slots: dict[str, int]) -> None:
    entities = {e.id: e for e in graph.entities}
    keyframes = {k.id: k for k in graph.keyframes}
    done: set[str] = set()
    for edge in graph.edges:
        if edge.category is EdgeCategory.GROUNDING and edge.target in entities and edge.target not in done:
            source = memory_path / keyframes[edge.source].path
            if not source.is_file():
                continue
            slot = slots[entities[edge.target].macro_id]
            episode = folder / PHASE2_DIR / f"episode_{slot:04d}" / f"episode_{slot:04d}"
            target = episode / "features" / _local(edge.target) / BEST_FRAME
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            done.add(edge.target)


def _write_embeddings(graph: VideoGraph, path: Path, slots: dict[str, int], embedder) -> None:
    """``{slot{N}_<local id>: vector}`` over the reference's text (label | description | Type: ...)."""
    keys, texts = [], []
    for node in graph.macro_children():
        if isinstance(node, Speech):
            continue
        if isinstance(node, Entity):
            parts = [node.name or f"{node.entity_type.value}: {node.description}", node.description,
                     f"Type: {node.entity_type.value}", "Visual: " + ", ".join(node.grounding.distinctive_features)]
        elif isinstance(node, MicroEvent):
            parts = [node.action or node.description, node.description, f"Type: {node.event_type}"]
        else:
            parts = [node.text, node.description, f"Keywords: {node.text}"]
        keys.append(f"slot{slots[node.macro_id]}_{_local(node.id)}")
        texts.append(" | ".join(parts))
    vectors = embedder.embed_documents(texts) if texts else []
    _write_json(path, {k: [float(x) for x in v] for k, v in zip(keys, vectors, strict=True)})


__all__ = ["export_memdreamer"]
