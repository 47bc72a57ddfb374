"""Everything a test or an example needs instead of a real model, in one place.

The fakes live beside what they stand in for and are re-exported here (imported on first use,
so ``import memtools.testing`` stays light). Each behaves like the real part, or the tests that
use it would prove nothing:

Embedders
    ``TestEmbedder(dim)``          text -> vector by bag-of-words feature hashing: no model, no
                                   download, microseconds per text (``memtools.embed.testing``).
    ``TestImageEmbedder()``        image -> its mean colour, query -> the colours it names, so
                                   "red" finds red frames (``memtools.embed.images``).
Vision-language models (perception)
    ``FunctionVLM(fn)``            answers each request with ``fn(request)``; keeps every request
                                   (``memtools.perception.testing``).
    ``ReplayVLM(path)``            answers only requests recorded in a file (the bundled sample).
    ``block_model_requests()``     a context manager: any real model request inside raises.
Construction (build)
    ``ScriptedPerception()``       answers the segment / extract / aggregate prompts like a
                                   well-behaved model, deterministically (``memtools.builder.testing``).
    ``scripted_vlm()``             a ``FunctionVLM`` over ``ScriptedPerception`` (``memtools build
                                   --vlm python:memtools.builder.testing:scripted_vlm`` dry-runs a build).
    ``ScriptedEndpoint()``         a picklable ``ScriptedPerception`` endpoint for Ray fleet runs, with
                                   latency, a call log and a worker that dies on cue (``memtools.fleet.testing``).
Chat models (the ORA loop)
    ``ScriptedChatModel(responses=[...])``  replays replies in order; records every prompt.
    ``FunctionChatModel(func)``    replies with ``func(messages, tools)``.
    ``tool_call(name, **args)`` / ``text_reply(content)``  the replies such models return
                                   (``memtools.agent.testing``).
Speech
    ``FunctionRecognizer(fn)``     a speech recogniser that calls ``fn(chunk)`` (``memtools.speech.base``).
Data
    ``kitchen_graph()``            a hand-made 6-minute cooking video graph (below); ``with_speech(graph)``
                                   adds what the cook says.

``kitchen_graph()`` is a 6-minute cooking video: two super events, three macro events,
entities with roles, on-screen text and a cause -> effect chain (the pan catches fire because
the oil overheated; the cook puts it out with a lid). It is deliberately small enough to
read whole, and rich enough to exercise every tool. ``with_speech(graph)`` adds what the cook
says (utterances with SAYS / ABOUT edges), for the speech tools.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from memtools.schema import (
    Edge,
    EdgeCategory,
    Entity,
    EntityType,
    Grounding,
    MacroEvent,
    MicroEvent,
    OcrText,
    Speech,
    SuperEvent,
    Video,
    VideoGraph,
    entity_id,
    event_id,
    macro_id,
    ocr_id,
    speech_id,
    super_id,
)

if TYPE_CHECKING:
    from memtools.agent.testing import FunctionChatModel, ScriptedChatModel, text_reply, tool_call
    from memtools.builder.testing import ScriptedPerception, scripted_vlm
    from memtools.embed.images import TestImageEmbedder
    from memtools.embed.testing import TestEmbedder
    from memtools.fleet.testing import ScriptedEndpoint
    from memtools.perception.replay import ReplayVLM
    from memtools.perception.testing import FunctionVLM, block_model_requests
    from memtools.speech.base import FunctionRecognizer

FAKES = {
    "TestEmbedder": "memtools.embed.testing",
    "TestImageEmbedder": "memtools.embed.images",
    "FunctionVLM": "memtools.perception.testing",
    "ReplayVLM": "memtools.perception.replay",
    "block_model_requests": "memtools.perception.testing",
    "ScriptedPerception": "memtools.builder.testing",
    "scripted_vlm": "memtools.builder.testing",
    "ScriptedEndpoint": "memtools.fleet.testing",
    "ScriptedChatModel": "memtools.agent.testing",
    "FunctionChatModel": "memtools.agent.testing",
    "tool_call": "memtools.agent.testing",
    "text_reply": "memtools.agent.testing",
    "FunctionRecognizer": "memtools.speech.base",
}
"""Each re-exported fake -> the module it lives in (imported on first use: the chat fakes load
LangChain, the fleet fake Ray's helpers)."""


def __getattr__(name: str) -> Any:
    module = FAKES.get(name)
    if module is None:
        raise AttributeError(f"module 'memtools.testing' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(FAKES))


def kitchen_graph(video_id: str = "kitchen") -> VideoGraph:
    v = video_id
    s0, s1 = super_id(v, 0), super_id(v, 1)
    m0, m1, m2 = macro_id(v, 0), macro_id(v, 1), macro_id(v, 2)
    g = VideoGraph(
        video=Video(id=v, title="Cooking stir-fry in a small kitchen", duration=360.0, fps=30.0, width=640,
                    height=360, description="A cook prepares vegetables, heats oil, and handles a small pan fire.",
                    themes=["cooking", "kitchen safety"], key_entities=["cook", "frying pan", "onion"],
                    emotional_tone="calm, tense, relieved"),
        supers=[
            SuperEvent(id=s0, video_id=v, ordinal=0, label="Preparing the vegetables", t_start=0, t_end=120,
                       description="The cook washes and chops onions and peppers.", key_entities=["cook", "onion"]),
            SuperEvent(id=s1, video_id=v, ordinal=1, label="Frying and the pan fire", t_start=120, t_end=360,
                       description="Oil is heated, the pan catches fire, the cook smothers it with a lid.",
                       key_entities=["cook", "frying pan"]),
        ],
        macros=[
            MacroEvent(id=m0, video_id=v, super_id=s0, ordinal=0, label="Chopping onions", t_start=0, t_end=120,
                       summary="The cook slices two onions on a wooden cutting board.", key_entities=["cook", "onion"]),
            MacroEvent(id=m1, video_id=v, super_id=s1, ordinal=1, label="Heating oil in the pan", t_start=120,
                       t_end=240, summary="Oil is poured into a frying pan on high heat and starts to smoke.",
                       key_entities=["cook", "frying pan"]),
            MacroEvent(id=m2, video_id=v, super_id=s1, ordinal=2, label="Putting out the pan fire", t_start=240,
                       t_end=360, summary="Flames rise from the pan; the cook covers it with a metal lid.",
                       key_entities=["cook", "frying pan", "lid"]),
        ],
        entities=[
            Entity(id=entity_id(m0, 1), video_id=v, macro_id=m0, entity_type=EntityType.PERSON,
                   description="a cook in a blue apron", attributes={"role": "cook"},
                   grounding=Grounding(primary_time=30, distinctive_features=["blue apron"])),
            Entity(id=entity_id(m0, 2), video_id=v, macro_id=m0, entity_type=EntityType.OBJECT,
                   description="two yellow onions", attributes={"color": "yellow"}),
            Entity(id=entity_id(m0, 3), video_id=v, macro_id=m0, entity_type=EntityType.OBJECT,
                   description="a wooden cutting board"),
            Entity(id=entity_id(m1, 1), video_id=v, macro_id=m1, entity_type=EntityType.PERSON,
                   description="the cook in a blue apron"),
            Entity(id=entity_id(m1, 2), video_id=v, macro_id=m1, entity_type=EntityType.OBJECT,
                   description="a black frying pan on the stove"),
            Entity(id=entity_id(m2, 1), video_id=v, macro_id=m2, entity_type=EntityType.PERSON,
                   description="the cook in a blue apron"),
            Entity(id=entity_id(m2, 2), video_id=v, macro_id=m2, entity_type=EntityType.OBJECT,
                   name="Lodge", description="a metal pot lid with a Lodge logo"),
        ],
        events=[
            MicroEvent(id=event_id(m0, 1), video_id=v, macro_id=m0, t_start=10, t_end=60, event_type="preparation",
                       subject="cook", object="onions", action="slices onions",
                       description="The cook slices the onions into thin rings on the board."),
            MicroEvent(id=event_id(m1, 1), video_id=v, macro_id=m1, t_start=130, t_end=150, event_type="cooking",
                       subject="cook", object="oil", action="pours oil into the pan",
                       description="The cook pours a lot of oil into the frying pan."),
            MicroEvent(id=event_id(m1, 2), video_id=v, macro_id=m1, t_start=150, t_end=235, event_type="hazard",
                       subject="frying pan", action="oil overheats and smokes",
                       description="The oil gets too hot and starts to smoke."),
            MicroEvent(id=event_id(m2, 1), video_id=v, macro_id=m2, t_start=245, t_end=260, event_type="hazard",
                       subject="frying pan", action="pan catches fire",
                       description="Flames shoot up from the frying pan."),
            MicroEvent(id=event_id(m2, 2), video_id=v, macro_id=m2, t_start=262, t_end=275, event_type="safety",
                       subject="cook", object="lid", action="covers the pan with a lid",
                       description="The cook smothers the fire by placing a metal lid on the pan."),
        ],
        ocr=[
            OcrText(id=ocr_id(m1, 1), video_id=v, macro_id=m1, t_start=120, t_end=140, text="HIGH HEAT",
                    description="A caption warning that the stove is on high heat."),
        ],
    )
    e = EdgeCategory
    g.edges = [
        Edge(source=entity_id(m0, 1), target=event_id(m0, 1), category=e.ROLE, label="PERFORMS"),
        Edge(source=entity_id(m0, 2), target=event_id(m0, 1), category=e.ROLE, label="RECEIVES"),
        Edge(source=entity_id(m0, 2), target=entity_id(m0, 3), category=e.SPATIAL, label="LOCATED_IN",
             description="The onions lie on the board."),
        Edge(source=entity_id(m1, 1), target=event_id(m1, 1), category=e.ROLE, label="PERFORMS"),
        Edge(source=event_id(m1, 1), target=event_id(m1, 2), category=e.TEMPORAL, label="BEFORE"),
        Edge(source=ocr_id(m1, 1), target=entity_id(m1, 2), category=e.SPATIAL, label="ANNOTATES"),
        Edge(source=event_id(m2, 1), target=event_id(m2, 2), category=e.TEMPORAL, label="CAUSES",
             description="The fire makes the cook reach for the lid."),
        Edge(source=entity_id(m2, 1), target=event_id(m2, 2), category=e.ROLE, label="PERFORMS"),
        Edge(source=entity_id(m2, 2), target=event_id(m2, 2), category=e.ROLE, label="USES_TOOL"),
        Edge(source=m1, target=m2, category=e.MACRO_CAUSAL, label="CAUSES",
             description="The overheated oil causes the pan fire."),
        Edge(source=s0, target=s1, category=e.PROGRESSION, label="BEFORE"),
    ]
    g.check()
    return g


KITCHEN_SPEECH = (  # (macro ordinal, start, end, speaker, text)
    (0, 12.0, 16.5, "cook", "Today we are making a quick vegetable stir-fry."),
    (0, 40.0, 44.0, "cook", "Slice the onions thin so they cook evenly."),
    (1, 131.0, 135.5, "cook", "A good splash of oil, and the heat all the way up."),
    (2, 246.0, 248.0, None, "Whoa, the pan is on fire!"),
    (2, 263.0, 268.0, "cook", "Never use water on an oil fire: cover it with a lid."),
)


def with_speech(graph: VideoGraph) -> VideoGraph:
    """``graph`` (a ``kitchen_graph``) with the cook's words as speech nodes and SAYS / ABOUT edges."""
    v = graph.video_id
    counts: dict[str, int] = {}
    for ordinal, start, end, speaker, text in KITCHEN_SPEECH:
        m = macro_id(v, ordinal)
        counts[m] = counts.get(m, 0) + 1
        graph.speech.append(Speech(id=speech_id(m, counts[m]), video_id=v, macro_id=m, t_start=start, t_end=end,
                                   text=text, speaker=speaker))
    m0, m2 = macro_id(v, 0), macro_id(v, 2)
    e = EdgeCategory.SPEECH
    graph.edges += [
        Edge(source=entity_id(m0, 1), target=speech_id(m0, 2), category=e, label="SAYS",
             description="The cook gives the slicing tip."),
        Edge(source=speech_id(m0, 2), target=entity_id(m0, 2), category=e, label="ABOUT"),
        Edge(source=speech_id(m2, 1), target=event_id(m2, 1), category=e, label="ABOUT",
             description="The shout is about the pan catching fire."),
        Edge(source=entity_id(m2, 1), target=speech_id(m2, 2), category=e, label="SAYS"),
        Edge(source=speech_id(m2, 2), target=event_id(m2, 2), category=e, label="ABOUT"),
    ]
    graph.check()
    return graph


__all__ = [
    "KITCHEN_SPEECH", "FunctionChatModel", "FunctionRecognizer", "FunctionVLM", "ReplayVLM", "ScriptedChatModel",
    "ScriptedEndpoint", "ScriptedPerception", "TestEmbedder", "TestImageEmbedder", "block_model_requests",
    "kitchen_graph", "scripted_vlm", "text_reply", "tool_call", "with_speech",
]
