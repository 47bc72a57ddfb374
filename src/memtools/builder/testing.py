"""A scripted perception model for tests, benchmarks and dry runs of the pipeline.

``ScriptedPerception`` answers the three construction prompts the way a well-behaved model
would, from the request alone (no model, deterministic): windows are cut into episodes of
``episode_sec``, every clip gets two entities, two micro-events joined by a CAUSES edge and
one on-screen text (and, when the prompt carries speech, a speaker who SAYS the first
utterance, which is ABOUT the first event), and macro events are grouped into super events
of ``per_super``::

    vlm = FunctionVLM(ScriptedPerception(episode_sec=30))
    build_video(memory, vlm, "clip.mp4")
"""

from __future__ import annotations

import json
import re
from itertools import pairwise

from memtools.builder.prompts import AGGREGATE_SYSTEM, EXTRACT_SYSTEM, SEGMENT_SYSTEM, hms
from memtools.builder.responses import parse_seconds
from memtools.perception import PerceptionRequest

_STRETCH = re.compile(r"stretch (\d+:\d+:\d+) - (\d+:\d+:\d+)")
_CLIP = re.compile(r'clip titled "(.*?)"\. The clip lasts (\d+) seconds')
_MACRO_LINE = re.compile(r"^- (macro_\d+) \[", re.MULTILINE)
_SUPER_LINE = re.compile(r"^- (super_\d+) \[", re.MULTILINE)
_UTTERANCE_LINE = re.compile(r"^- (u\d+) \[", re.MULTILINE)


class ScriptedPerception:
    """Call it with a ``PerceptionRequest``; it returns the answer text."""

    def __init__(self, *, episode_sec: float = 30.0, per_super: int = 3) -> None:
        self.episode_sec = episode_sec
        self.per_super = per_super

    def __call__(self, request: PerceptionRequest) -> str:
        if request.system == SEGMENT_SYSTEM:
            return self.segment(request)
        if request.system == EXTRACT_SYSTEM:
            return self.extract(request)
        if request.system == AGGREGATE_SYSTEM:
            return self.aggregate(request)
        raise ValueError(f"ScriptedPerception does not know the prompt {request.system!r}")

    def segment(self, request: PerceptionRequest) -> str:
        match = _STRETCH.search(request.prompt)
        assert match, "not a segmentation prompt"
        start, end = (parse_seconds(g) or 0.0 for g in match.groups())
        episodes = []
        t = start
        while t < end - 1e-6:
            stop = min(end, t + self.episode_sec)
            episodes.append({"start_time": hms(t), "end_time": hms(stop), "episode_title": f"Scene at {hms(t)}",
                             "visual_evidence": "the background changes", "complete": True})
            t = stop
        return json.dumps({"episodes": episodes})

    def extract(self, request: PerceptionRequest) -> str:
        match = _CLIP.search(request.prompt)
        assert match, "not an extraction prompt"
        title, length = match.group(1), float(match.group(2))
        mid = round(length / 2, 1)
        answer = self._subgraph(title, length, mid)
        said = _UTTERANCE_LINE.findall(request.prompt)
        if said:
            answer["entities"].append({"entity_id": "en3", "name": None, "entity_type": "PERSON",
                                       "description": "the narrator"})
            answer["edges"] += [
                {"source_id": "en3", "target_id": said[0], "relation_label": "SAYS",
                 "description": "The narrator speaks."},
                {"source_id": said[0], "target_id": "ev1", "relation_label": "ABOUT",
                 "description": "What is said is about the ball rolling."},
            ]
        return json.dumps(answer)

    def _subgraph(self, title: str, length: float, mid: float) -> dict:
        return ({
            "summary": f"In '{title}' a red ball rolls across the floor and knocks over a stack of boxes.",
            "key_entities": ["red ball", "boxes"],
            "entities": [
                {"entity_id": "en1", "name": None, "entity_type": "OBJECT", "attributes": {"color": "red"},
                 "description": "a red ball", "visual_grounding": {"primary_time_sec": 0,
                                                                    "distinctive_features": ["red", "round"]}},
                {"entity_id": "en2", "name": None, "entity_type": "OBJECT", "attributes": {"color": "brown"},
                 "description": "a stack of cardboard boxes"},
            ],
            "micro_events": [
                {"event_id": "ev1", "event_type": "motion", "time_range": [0, mid], "subject": "red ball",
                 "object": "boxes", "action": "rolls into the boxes",
                 "description": "The red ball rolls across the floor and hits the boxes."},
                {"event_id": "ev2", "event_type": "collapse", "time_range": [mid, length], "subject": "boxes",
                 "action": "fall over", "description": "The stack of boxes falls over because the ball hit it."},
            ],
            "ocr_texts": [{"ocr_id": "tx1", "text": title.upper()[:20], "time_range": [0, length],
                           "description": "a caption naming the scene"}],
            "edges": [
                {"source_id": "en1", "target_id": "ev1", "relation_label": "PERFORMS",
                 "description": "The ball is what rolls."},
                {"source_id": "en2", "target_id": "ev2", "relation_label": "PERFORMS",
                 "description": "The boxes are what fall."},
                {"source_id": "ev1", "target_id": "ev2", "relation_label": "CAUSES",
                 "description": "The impact knocks the boxes over."},
                {"source_id": "tx1", "target_id": "en2", "relation_label": "ANNOTATES",
                 "description": "The caption is shown over the boxes."},
            ],
        })

    def aggregate(self, request: PerceptionRequest) -> str:
        macros = _MACRO_LINE.findall(request.prompt)
        if not macros:  # the root of a chunked build
            supers = _SUPER_LINE.findall(request.prompt)
            relations = [{"source": a, "target": b, "type": "LEADS_TO", "reason": "One phase leads to the next."}
                         for a, b in pairwise(supers)]
            return json.dumps({"super_relations": relations, "root": _root()})
        groups = [macros[i:i + self.per_super] for i in range(0, len(macros), self.per_super)]
        supers = [{"super_id": f"S{k + 1}", "label": f"Phase {k + 1}", "sub_macro_ids": group,
                   "description": f"Phase {k + 1}: balls and boxes.", "key_entities": ["red ball", "boxes"]}
                  for k, group in enumerate(groups)]
        macro_relations = [{"source": g[0], "target": g[1], "type": "ENABLES", "reason": "The first sets up the next."}
                           for g in groups if len(g) > 1]
        super_relations = [{"source": f"S{k}", "target": f"S{k + 1}", "type": "LEADS_TO",
                            "reason": "One phase leads to the next."} for k in range(1, len(groups))]
        with_root = "root - a video-level summary" in request.prompt
        return json.dumps({"super_events": supers, "macro_relations": macro_relations,
                           "super_relations": super_relations, "root": _root() if with_root else None})


def _root() -> dict:
    return {"title": "Balls knocking over boxes", "description": "A red ball keeps knocking over boxes.",
            "themes": ["cause and effect", "physics"], "key_entities": ["red ball", "boxes"],
            "emotional_tone": "playful"}


def scripted_vlm(episode_sec: float = 30.0, per_super: int = 3):
    """A ``FunctionVLM`` answering with ``ScriptedPerception``: ``memtools build --vlm
    python:memtools.builder.testing:scripted_vlm`` dry-runs the whole pipeline without a model."""
    from memtools.perception import FunctionVLM

    return FunctionVLM(ScriptedPerception(episode_sec=episode_sec, per_super=per_super), model_name="scripted")
