"""The hand-written MEMDREAMER release video of tests/test_import_memdreamer.py: ``Lecture Hall (2)``,
with the quirks the reference code tolerates or trips on (see that module's docstring)."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np

LECTURE = "Lecture Hall (2)"
LV = "Lecture_Hall_2"  # its video id


def write_jpeg(path: Path, shade: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    ok, data = cv2.imencode(".jpg", np.full((24, 32, 3), shade, np.uint8))
    assert ok
    path.write_bytes(data.tobytes())


def write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def write_lecture(root: Path) -> Path:
    """The quirky video, as hand-written dicts."""
    video = root / LECTURE
    write_json(video / "phase4" / "hierarchical_graph_final.json", {
        "root_event": {"title": "A lecture on graph memory", "description": "Alice teaches; Bob asks.",
                       "time_range": {"start": "0", "end": "300"}, "themes": ["teaching", "memory"],
                       "key_entities": ["Alice", {"name": "Bob"}], "emotional_tone": "curious"},
        "super_events": [
            # a dict time_range (their loader would crash on float() of it)
            {"node_id": "super_01", "label": "Introduction", "description": "Alice opens the lecture.",
             "time_range": {"start": 0, "end": 150}, "key_entities": ["Alice"],
             "sub_macro_ids": ["macro_0001", "macro_0002"]},
            # string numbers; its macros come from subevent_relations and from time
            {"node_id": "super_02", "label": "Questions", "description": "Bob asks about the exam.",
             "time_range": ["150", "300"], "key_entities": ["Bob"]},
        ],
        "macro_events": [
            {"node_id": "macro_0001", "label": "Alice_writes_the_agenda", "summary": "Alice writes the agenda.",
             "time_range": [0, 60], "anchors": {"slot_ids": [0]}, "key_entity_names": ["Alice", "whiteboard"]},
            {"node_id": "macro_0002", "label": "Bob raises his hand", "summary": "Bob raises his hand to ask.",
             "time_range": ["60", "150"], "anchors": {"slot_ids": ["1"]}, "key_entities": ["Bob"]},
            {"node_id": "macro_0003", "label": "The exam date", "summary": "Alice points at the exam date.",
             "time_range": [150, 220], "anchors": {"slot_ids": [2]}},
            # in no super event's sub_macro_ids and no subevent relation: placed by time
            {"node_id": "macro_0004", "label": "Class ends", "summary": "Everyone leaves the hall.",
             "time_range": [220, 300]},
        ],
        "super_relations": [
            {"source_id": "super_01", "target_id": "super_02", "relation_type": "PROGRESSION",
             "relation_label": "LEADS_TO", "reason": "The agenda prompts questions."},
            {"source_id": "super_01", "target_id": "super_09", "relation_label": "LEADS_TO"},  # dangling
        ],
        "macro_relations": [
            {"source_id": "macro_0001", "target_id": "macro_0002", "relation_type": "CAUSAL",
             "relation_label": "LEADS_TO", "reason": "The agenda makes Bob curious."},  # -> CAUSES
            {"source_id": "macro_0002", "target_id": "macro_0003", "relation_label": "BEFORE"},  # dropped
            {"source_id": "macro_0003", "target_id": "macro_0004", "relation_type": "CAUSAL",
             "reason": "The date ends the class."},  # no label: CAUSAL reads as CAUSES
        ],
        "subevent_relations": [{"source_id": "super_02", "target_id": "macro_0003", "relation_label": "SUBEVENT_OF"}],
        "root_relations": [{"source_id": "super_01", "target_id": "root_001"}],
    })
    write_json(video / "phase4" / "intermediate" / "step2p5_entity_unification.json", {"entity_mappings": [
        {"canonical_name": "Alice", "canonical_type": "PERSON", "variants": ["Professor Alice", "the teacher"]}]})
    phase2 = video / "phase2_topdown"
    nested = phase2 / "episode_0000" / "episode_0000"
    write_json(nested / "step5_subgraph.json", {
        "slot_id": 0, "start_sec": 0, "end_sec": 60,
        "nodes": [
            {"node_type": "MacroEvent", "node_id": "macro_0001"},
            {"node_type": "Entity", "node_id": "ent_001", "name": "Alice", "entity_type": "person",
             "description": "a lecturer in a red scarf", "attributes": {"role": "teacher"},
             "visual_grounding": {"primary_time_sec": 12, "distinctive_features": ["red scarf"]}},
            {"node_type": "Entity", "node_id": "ent_002", "name": None, "entity_type": "OBJECT",
             "description": "a whiteboard"},
            {"node_type": "Event", "node_id": "evt_001", "event_type": "writing", "action": "writes the agenda",
             "description": "Alice writes the agenda on the whiteboard.", "time_range": [5, 20],
             "subject_entity_ids": ["ent_001"], "object_entity_ids": ["ent_002"]},
            {"node_type": "OCRText", "node_id": "ocr_001", "text": "EXAM ON FRIDAY", "ocr_type": "handwriting",
             "time_range": [10, 30]},
            {"node_type": "Gesture", "node_id": "g_1"},  # unknown node type
        ],
        "edges": [
            {"source_id": "ent_001", "target_id": "evt_001", "relation_type": "SEMANTIC", "relation_label": "PERFORMS"},
            {"source_id": "ocr_001", "target_id": "ent_002", "relation_label": "ANNOTATES"},
            {"source_id": "ent_001", "target_id": "ent_099", "relation_label": "NEXT_TO"},  # dangling
            {"source_id": "ent_001", "target_id": "ent_002", "relation_label": "LOOKS_AT"},  # unknown label
            {"source_id": "evt_001", "target_id": "ent_002", "relation_label": "LOCATED_IN"},  # impossible pair
            {"source_id": "evt_001", "target_id": "macro_0001", "relation_label": "SUBEVENT_OF"},  # the hierarchy
        ],
    })
    write_jpeg(nested / "features" / "ent_001" / "best_frame.jpg", 200)
    flat = phase2 / "episode_0001"  # flat layout, string numbers, slot-prefixed edge ends
    write_json(flat / "step5_subgraph.json", {
        "slot_id": "1", "start_sec": "60", "end_sec": "150",
        "nodes": [
            {"node_type": "Entity", "entity_id": "ent_001", "name": "Bob", "entity_type": "PERSON",
             "description": "a student in a green hoodie", "visual_grounding": {"primary_time_sec": "10"}},
            {"node_type": "Event", "node_id": "evt_001", "action": "raises his hand",
             "time_range": {"start": 5, "end": 200}, "subject_entity_ids": ["ent_001"]},  # clipped to 150
        ],
        "edges": [{"source_id": "slot1_ent_001", "target_id": "slot1_evt_001", "relation_label": "performs"}],
    })
    write_jpeg(flat / "features" / "ent_001" / "best_frame.jpg", 90)
    write_json(phase2 / "episode_0002" / "episode_0002" / "step5_subgraph.json", {  # absolute times
        "slot_id": 2, "start_sec": 150, "end_sec": 220,
        "nodes": [{"node_type": "OCRText", "node_id": "ocr_001", "text": "FRIDAY 9AM", "time_range": [160, 175]}],
    })
    write_json(phase2 / "episode_0003" / "step5_subgraph.json", {  # no slot_id: its nodes have no macro event
        "start_sec": 220, "end_sec": 300,
        "nodes": [{"node_type": "Entity", "node_id": "ent_001", "entity_type": "OBJECT", "description": "a door"},
                  {"node_type": "Event", "node_id": "evt_001", "action": "leaves", "time_range": [0, 5]}],
    })
    (phase2 / "episode_0004").mkdir()  # no subgraph file
    return video
