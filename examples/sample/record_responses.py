"""Write ``responses.jsonl``: the perception answers for the sample video, in the replay format.

    python examples/make_sample_video.py
    python examples/sample/record_responses.py

The answers below are written by hand, the way a good vision-language model answers the
three construction prompts for ``sample.mp4`` (one segmentation window, four clips, one
aggregation); one of them comes wrapped in a markdown fence with a loosely written label and
an edge to an id that does not exist, as real models do, so the sample also shows the repairs.
This script runs the real pipeline with those answers behind ``RecordingVLM``, which stores
each one under the hash of the request that asked for it (prompt + frames). The sample has a
narrator, so the build recognises speech with faster-whisper tiny.en (``memtools[speech]``),
exactly as ``memtools build`` does by default, and the prompts carry the transcript; the
warehouse answer links the narrator's sentences (``u1``, ``u2``, ...) to what they are ABOUT.
The recognised words depend on the CPU, so the hash leaves them out and each line keeps the
speech it was answered for: a replay on another CPU compares them by word error rate
(``memtools.perception.replay``). Recording on any CPU gives a file that replays on all.
Run it again whenever a prompt, the sample video, the narration or the default
``BuildConfig`` changes.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from memtools.builder import BuildConfig, build_video
from memtools.builder.prompts import AGGREGATE_SYSTEM, EXTRACT_SYSTEM, SEGMENT_SYSTEM
from memtools.embed import TestEmbedder
from memtools.perception import FunctionVLM, PerceptionRequest, RecordingVLM
from memtools.speech.whisper import WhisperRecognizer
from memtools.store import Memory

HERE = Path(__file__).resolve().parent
VIDEO = HERE / "sample.mp4"
RESPONSES = HERE / "responses.jsonl"


def _e(eid, etype, description, *, name=None, attributes=None, t=None, features=(), where=""):
    return {"entity_id": eid, "name": name, "entity_type": etype, "attributes": attributes or {},
            "description": description,
            "visual_grounding": {"primary_time_sec": t, "distinctive_features": list(features), "spatial_hint": where}}


def _ev(eid, etype, start, end, subject, obj, action, description):
    return {"event_id": eid, "event_type": etype, "time_range": [start, end], "subject": subject, "object": obj,
            "action": action, "description": description}


def _edge(source, target, label, description):
    return {"source_id": source, "target_id": target, "relation_label": label, "description": description}


SEGMENTATION = {"episodes": [
    {"start_time": "00:00:00", "end_time": "00:00:40", "episode_title": "Cook prepares vegetables in the kitchen",
     "visual_evidence": "Beige kitchen with a KITCHEN sign; at 0:00:42 the frame cuts to a football pitch."},
    {"start_time": "00:00:40", "end_time": "00:01:20", "episode_title": "Player in red scores a goal",
     "visual_evidence": "Green pitch with a scoreboard; at 0:01:21 a grey warehouse with a WAREHOUSE B sign appears."},
    {"start_time": "00:01:20", "end_time": "00:02:10", "episode_title": "Red ball knocks over boxes in Warehouse B",
     "visual_evidence": "Grey warehouse interior; at 0:02:11 the scene changes to a street at night."},
    {"start_time": "00:02:10", "end_time": "00:03:00", "episode_title": "Yellow car passes the EXIT 12 sign at night",
     "visual_evidence": "Dark sky, moon, road and a green EXIT 12 sign until the end of the video."},
]}

KITCHEN = {
    "summary": "A cook in a blue apron walks across a kitchen to the wooden counter under a sign reading KITCHEN. "
               "The cook chops a green vegetable on a cutting board with quick up-and-down strokes, then moves the "
               "chopped pieces into a dark pot on the counter.",
    "key_entities": ["cook in blue apron", "green vegetable", "pot", "kitchen"],
    "entities": [
        _e("en1", "PERSON", "A cook wearing a blue apron.", attributes={"role": "cook", "clothing": "blue apron"},
           t=20, features=["blue apron", "short dark hair"], where="centre, in front of the counter"),
        _e("en2", "LOCATION", "A small kitchen with a beige wall and a wooden floor.", attributes={"type": "kitchen"},
           t=2, features=["beige wall", "KITCHEN sign"]),
        _e("en3", "OBJECT", "A wooden kitchen counter.", attributes={"color": "brown"}, t=2, where="right"),
        _e("en4", "OBJECT", "A light cutting board on the counter.", attributes={"color": "beige"}, t=16),
        _e("en5", "OBJECT", "A green vegetable, chopped into pieces.", attributes={"color": "green"}, t=26,
           features=["green", "round"]),
        _e("en6", "OBJECT", "A dark grey cooking pot on the counter.", attributes={"color": "dark grey"}, t=37,
           where="right end of the counter"),
    ],
    "micro_events": [
        _ev("ev1", "movement", 0, 15, "cook", "counter", "walks to the counter",
            "The cook in the blue apron walks from the left of the kitchen to the counter."),
        _ev("ev2", "food preparation", 15, 35, "cook", "green vegetable", "chops the vegetable",
            "At the counter the cook chops the green vegetable on the cutting board into small pieces."),
        _ev("ev3", "food preparation", 35, 38, "cook", "pot", "puts the pieces into the pot",
            "The chopped green pieces are moved from the cutting board into the pot."),
    ],
    "ocr_texts": [{"ocr_id": "tx1", "text": "KITCHEN", "time_range": [0, 40],
                   "description": "A wall sign naming the room as the kitchen."}],
    "edges": [
        _edge("en1", "ev1", "PERFORMS", "The cook is the one walking."),
        _edge("en1", "ev2", "PERFORMS", "The cook does the chopping."),
        _edge("en5", "ev2", "RECEIVES", "The vegetable is what gets chopped."),
        _edge("en1", "ev3", "PERFORMS", "The cook moves the pieces."),
        _edge("en6", "ev3", "RECEIVES", "The pieces end up in the pot."),
        _edge("ev1", "en2", "HAPPENS_IN", "The walk takes place in the kitchen."),
        _edge("ev1", "ev2", "BEFORE", "The cook reaches the counter before chopping."),
        _edge("ev2", "ev3", "BEFORE", "The vegetable is chopped before it goes into the pot."),
        _edge("en4", "en3", "LOCATED_IN", "The cutting board lies on the counter."),
        _edge("en6", "en3", "LOCATED_IN", "The pot stands on the counter."),
        _edge("tx1", "en2", "ANNOTATES", "The sign labels the room."),
    ],
}

FOOTBALL = {
    "summary": "On a green football pitch a player in a red shirt dribbles a white ball from the left towards the "
               "goal on the right and shoots. The ball flies into the goal, the scoreboard changes from HOME 0 - 0 "
               "AWAY to HOME 1 - 0 AWAY, and the player jumps in celebration.",
    "key_entities": ["player in red", "ball", "goal", "scoreboard"],
    "entities": [
        _e("p1", "PERSON", "A football player in a red shirt.", attributes={"jersey_color": "red", "role": "player"},
           t=10, features=["red shirt", "dark shorts"]),
        _e("b1", "OBJECT", "A white football.", attributes={"color": "white"}, t=12),
        _e("g1", "OBJECT", "A white goal frame on the right edge of the pitch.", attributes={"color": "white"},
           t=24, where="right edge"),
        _e("s1", "OBJECT", "A black scoreboard at the top of the screen.", attributes={"color": "black"}, t=26,
           where="top centre"),
        _e("f1", "LOCATION", "A green football pitch with a centre line and centre circle.",
           attributes={"type": "football pitch"}, t=2),
    ],
    "micro_events": [
        _ev("e1", "dribble", 0, 20, "player in red", "ball", "dribbles the ball towards the goal",
            "The player in red runs from the left with the ball at his feet towards the goal."),
        _ev("e2", "shot", 20, 21, "player in red", "ball", "shoots at the goal",
            "Close to the goal the player kicks the ball towards it."),
        _ev("e3", "goal", 21, 24, "ball", "goal", "flies into the goal", "The ball flies into the goal: a goal."),
        _ev("e4", "score change", 25, 26, "scoreboard", "", "shows the new score",
            "Because of the goal the scoreboard changes from HOME 0 - 0 AWAY to HOME 1 - 0 AWAY."),
        _ev("e5", "celebration", 25, 40, "player in red", "", "jumps in celebration",
            "After scoring, the player jumps up and down with his arm raised."),
    ],
    "ocr_texts": [
        {"ocr_id": "o1", "text": "HOME 0 - 0 AWAY", "time_range": [0, 25],
         "description": "The scoreboard before the goal: no score."},
        {"ocr_id": "o2", "text": "HOME 1 - 0 AWAY", "time_range": [25, 40],
         "description": "The scoreboard after the goal: the home side leads 1-0."},
    ],
    "edges": [
        _edge("p1", "e1", "PERFORMS", "The player dribbles."),
        _edge("b1", "e1", "RECEIVES", "The ball is dribbled."),
        _edge("p1", "e2", "PERFORMS", "The player takes the shot."),
        _edge("b1", "e3", "PERFORMS", "The ball flies into the goal."),
        _edge("e2", "e3", "CAUSES", "The shot sends the ball into the goal."),
        _edge("e3", "e4", "CAUSES", "The goal makes the score change."),
        _edge("e3", "e5", "CAUSES", "Scoring makes the player celebrate."),
        _edge("e1", "f1", "HAPPENS_IN", "The play happens on the pitch."),
        _edge("o1", "s1", "ANNOTATES", "The text is shown on the scoreboard."),
        _edge("o2", "s1", "ANNOTATES", "The text is shown on the scoreboard."),
        _edge("g1", "f1", "PART_OF", "The goal is part of the pitch."),
    ],
}

WAREHOUSE = {
    "summary": "Inside Warehouse B a red ball rolls in from the left across the concrete floor and hits a stack of "
               "three cardboard boxes. The impact knocks the stack over: the boxes tumble to the right and land on "
               "the floor while the ball bounces back. A worker in a yellow safety vest then walks in and stops "
               "next to the fallen boxes.",
    "key_entities": ["red ball", "stack of boxes", "worker in yellow vest", "Warehouse B"],
    "entities": [
        _e("ball", "OBJECT", "A red rubber ball.", attributes={"color": "red"}, t=15, features=["red", "small"]),
        _e("boxes", "OBJECT", "A stack of three brown cardboard boxes.", attributes={"color": "brown", "count": "3"},
           t=10, features=["three boxes", "stacked"], where="right"),
        _e("worker", "PERSON", "A worker wearing a yellow safety vest.", attributes={"clothing": "yellow vest",
                                                                                    "role": "worker"},
           t=45, features=["yellow vest"]),
        _e("wh", "LOCATION", "A grey warehouse interior with a concrete floor.", name="Warehouse B",
           attributes={"type": "warehouse"}, t=2),
        _e("floor", "OBJECT", "The dark concrete floor.", attributes={"color": "dark grey"}, t=2),
    ],
    "micro_events": [
        _ev("roll", "motion", 5, 20, "red ball", "stack of boxes", "rolls across the floor",
            "The red ball rolls in from the left across the warehouse floor towards the stack of boxes."),
        _ev("hit", "collision", 20, 21, "red ball", "stack of boxes", "hits the stack of boxes",
            "The rolling red ball crashes into the bottom of the stack of boxes."),
        _ev("fall", "collapse", 20, 24, "stack of boxes", "", "falls over",
            "Knocked by the ball, the three boxes tumble over to the right and land on the floor."),
        _ev("bounce", "motion", 21, 23, "red ball", "", "bounces back",
            "After the impact the ball bounces back a little to the left and stops."),
        _ev("walk", "movement", 30, 40, "worker in yellow vest", "stack of boxes", "walks to the fallen boxes",
            "A worker in a yellow vest walks in from the left and stops next to the fallen boxes."),
    ],
    "ocr_texts": [{"ocr_id": "sign", "text": "WAREHOUSE B", "time_range": [0, 50],
                   "description": "An orange wall sign naming the building as Warehouse B."}],
    "edges": [
        _edge("ball", "roll", "PERFORMS", "The ball is what rolls."),
        _edge("ball", "hit", "PERFORMS", "The ball hits the stack."),
        _edge("boxes", "hit", "RECEIVES", "The stack is what gets hit."),
        _edge("boxes", "fall", "PERFORMS", "The boxes are what fall."),
        _edge("roll", "hit", "CAUSES", "Rolling towards the stack leads to the impact."),
        _edge("hit", "fall", "CAUSES", "The impact of the ball knocks the boxes over."),
        _edge("hit", "bounce", "CAUSES", "The ball rebounds from the boxes."),
        _edge("fall", "walk", "BEFORE", "The worker arrives after the boxes have fallen."),
        _edge("worker", "walk", "PERFORMS", "The worker walks over."),
        _edge("roll", "wh", "HAPPENS_IN", "It happens inside the warehouse."),
        _edge("boxes", "floor", "located on", "The stack stands on the floor."),
        _edge("worker", "forklift", "NEXT_TO", "The worker stands by a forklift."),
        _edge("sign", "wh", "ANNOTATES", "The sign names the warehouse."),
        _edge("u1", "ball", "ABOUT", "The narrator points at the red ball."),
        _edge("u2", "hit", "ABOUT", "The narrator describes the ball hitting the boxes."),
        _edge("u2", "boxes", "ABOUT", "The narrator says the boxes fall over."),
        _edge("u3", "worker", "ABOUT", "The narrator describes the worker looking at the boxes."),
    ],
}

NIGHT = {
    "summary": "A street at night under a full moon: a yellow car drives from left to right past a street lamp and "
               "a green road sign reading EXIT 12. Some time after the car has gone, the street lamp goes out and "
               "the street stays empty and dark.",
    "key_entities": ["yellow car", "EXIT 12 sign", "street lamp", "night street"],
    "entities": [
        _e("car", "OBJECT", "A yellow car.", attributes={"color": "yellow", "type": "car"}, t=15,
           features=["yellow body", "black wheels"]),
        _e("lamp", "OBJECT", "A grey street lamp with a yellow light.", attributes={"type": "street lamp"}, t=2,
           where="left of centre"),
        _e("sign", "OBJECT", "A green road sign on a pole.", attributes={"color": "green"}, t=2, where="right"),
        _e("street", "LOCATION", "A road at night with dashed white lane markings.", attributes={"type": "street"},
           t=2),
        _e("moon", "OBJECT", "A full moon in the dark sky.", attributes={"color": "pale"}, t=2, where="top left"),
    ],
    "micro_events": [
        _ev("drive", "traffic", 5, 25, "yellow car", "", "drives from left to right",
            "A yellow car drives along the street from left to right and leaves the frame."),
        _ev("lamp_off", "change", 35, 36, "street lamp", "", "goes out",
            "The street lamp switches off and the street gets darker."),
    ],
    "ocr_texts": [{"ocr_id": "exit", "text": "EXIT 12", "time_range": [0, 50],
                   "description": "The road sign marks exit 12."}],
    "edges": [
        _edge("car", "drive", "PERFORMS", "The car is driving."),
        _edge("drive", "street", "HAPPENS_IN", "The drive is on the street."),
        _edge("lamp", "lamp_off", "PERFORMS", "The lamp is what goes out."),
        _edge("drive", "lamp_off", "BEFORE", "The car passes before the lamp goes out."),
        _edge("exit", "sign", "ANNOTATES", "The text is printed on the road sign."),
        _edge("sign", "street", "NEXT_TO", "The sign stands beside the road."),
    ],
}

AGGREGATION = {
    "super_events": [
        {"super_id": "S1", "label": "Daytime: cooking and a football goal",
         "description": "The day starts in a small kitchen, where a cook in a blue apron chops a green vegetable and "
                        "puts it into a pot under a KITCHEN sign. The scene then moves to a football pitch: a player "
                        "in a red shirt dribbles, shoots and scores, and the scoreboard changes from HOME 0 - 0 AWAY "
                        "to HOME 1 - 0 AWAY while he celebrates.",
         "sub_macro_ids": ["macro_0000", "macro_0001"],
         "key_entities": [{"name": "cook in blue apron", "type": "PERSON"},
                          {"name": "player in red", "type": "PERSON"}, {"name": "scoreboard", "type": "OBJECT"}]},
        {"super_id": "S2", "label": "Mishap in Warehouse B and a quiet night street",
         "description": "In Warehouse B a red ball rolls into a stack of three boxes and knocks it over; a worker in "
                        "a yellow vest comes to look at the fallen boxes. Night falls on a street where a yellow car "
                        "drives past an EXIT 12 road sign before the street lamp goes out.",
         "sub_macro_ids": ["macro_0002", "macro_0003"],
         "key_entities": [{"name": "red ball", "type": "OBJECT"}, {"name": "stack of boxes", "type": "OBJECT"},
                          {"name": "worker in yellow vest", "type": "PERSON"}, {"name": "yellow car",
                                                                                "type": "OBJECT"}]},
    ],
    "macro_relations": [],
    "super_relations": [
        {"source": "S1", "target": "S2", "type": "CONTRASTS_WITH",
         "reason": "The purposeful, successful daytime activities contrast with the accident and the empty night."},
    ],
    "root": {
        "title": "Four scenes: a kitchen, a football goal, a warehouse mishap and a night street",
        "description": "A cook prepares vegetables in a kitchen, and a football player in red scores a goal that "
                       "changes the scoreboard to HOME 1 - 0 AWAY. In Warehouse B a rolling red ball knocks over a "
                       "stack of boxes, which brings a worker over to look. The video ends on a street at night where "
                       "a yellow car passes an EXIT 12 sign and a street lamp goes out.",
        "themes": ["everyday activities", "cause and effect", "day and night"],
        "key_entities": ["cook in blue apron", "player in red", "scoreboard", "red ball", "stack of boxes",
                         "worker in yellow vest", "yellow car"],
        "emotional_tone": "calm, lively, quiet",
    },
}

CLIPS = {
    "Cook prepares vegetables in the kitchen": json.dumps(KITCHEN, indent=1),
    "Player in red scores a goal": json.dumps(FOOTBALL),
    # as some models do: a markdown fence and a line of chatter around the JSON
    "Red ball knocks over boxes in Warehouse B": "Here is the subgraph:\n```json\n" + json.dumps(WAREHOUSE, indent=2)
                                                 + "\n```",
    "Yellow car passes the EXIT 12 sign at night": json.dumps(NIGHT),
}


def answer(request: PerceptionRequest) -> str:
    if request.system == SEGMENT_SYSTEM:
        return json.dumps(SEGMENTATION, indent=1)
    if request.system == EXTRACT_SYSTEM:
        for title, text in CLIPS.items():
            if f'titled "{title}"' in request.prompt:
                return text
        raise KeyError(f"no answer written for this clip: {request.prompt[:120]}")
    if request.system == AGGREGATE_SYSTEM:
        return json.dumps(AGGREGATION, indent=1)
    raise KeyError(f"unexpected prompt: {request.system}")


def main() -> int:
    if not VIDEO.is_file():
        print(f"{VIDEO} is missing; run examples/make_sample_video.py first", file=sys.stderr)
        return 1
    RESPONSES.unlink(missing_ok=True)
    vlm = RecordingVLM(FunctionVLM(answer, model_name="hand-written"), RESPONSES)
    with tempfile.TemporaryDirectory() as tmp, Memory.create(Path(tmp) / "memory", TestEmbedder(64)) as memory:
        report = build_video(memory, vlm, VIDEO, config=BuildConfig.default(), speech=WhisperRecognizer())
    print(f"recorded {vlm.usage.calls} answers in {RESPONSES}; {len(report.issues)} repairs in the sample build")
    return 0


if __name__ == "__main__":
    sys.exit(main())
