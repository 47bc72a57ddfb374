"""A deterministic synthetic video library with realistic sizes and varied, searchable text.

Per hour of video, on average (MEMDREAMER-like builds): 12 macro events (~5 min each), 3
super events (~4 macros each), and per macro event 13 entities, 16 micro-events, 5 on-screen
texts and 30 typed edges (temporal chain, roles, spatial), plus a keyframe every ~2 min.

Text is built from word lists: every sentence is drawn from a bounded pool of generated
clauses (so ``ClauseEmbedder`` needs few real model calls), but payloads combine several
clauses, subjects, objects, attributes and places, so full-text and vector search see a
large, varied corpus. ``queries()`` phrases questions over the same vocabulary.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise

from memtools.schema import (
    Edge,
    EdgeCategory,
    Entity,
    EntityType,
    Grounding,
    Keyframe,
    MacroEvent,
    MicroEvent,
    OcrText,
    SuperEvent,
    Video,
    VideoGraph,
    entity_id,
    event_id,
    keyframe_id,
    macro_id,
    ocr_id,
    super_id,
)

PEOPLE = """the woman in the red coat|a man with glasses|the chef|a small child|the cashier|an elderly man|
the mechanic|a teenager in a grey hoodie|the nurse|the delivery driver|a girl with a ponytail|the teacher|
the security guard|a waiter in a black apron|the host|a bearded man|the photographer|a woman in a green dress|
the plumber|a boy on a scooter|the librarian|an old woman with a cane|the gardener|the bus driver|
a man in a blue suit|the receptionist|a jogger|the baker|a tourist with a backpack|the electrician|
a woman with curly hair|the janitor|the florist|a man in overalls|the pharmacist|a student with headphones|
the barista|a firefighter|the tailor|a woman carrying a baby""".replace("\n", "").split("|")

VERBS = """picks up|puts down|opens|closes|washes|cuts|carries|throws away|hands over|reads|inspects|repairs|
paints|drops|pours water into|wipes|folds|plugs in|unlocks|photographs|stirs|weighs|measures|hides|
unpacks|wraps|lifts|pushes|pulls|examines|cleans|polishes|sorts|stacks|fills|empties|adjusts|ties|
tapes shut|signs|scans|labels|returns|borrows|sells|buys|drags|rinses|sharpens|assembles""".replace("\n", "").split("|")

OBJECTS = """cup|laptop|bicycle|knife|onion|letter|umbrella|phone|toolbox|painting|guitar|suitcase|
kettle|frying pan|notebook|wallet|lamp|chair|ladder|bucket|camera|map|bottle of wine|cardboard box|
hammer|drill|flower pot|backpack|newspaper|tablet|blender|cutting board|loaf of bread|bag of rice|
watering can|vase|mirror|clock|keyboard|printer|envelope|receipt|shopping cart|stroller|basketball|
tennis racket|skateboard|helmet|jacket|scarf|towel|blanket|pillow|teapot|mug|plate|bowl|spoon|
fork|whisk|saucepan|oven tray|microwave|fridge door|trash bag|broom|mop|vacuum cleaner|extension cord|
light bulb|screwdriver|wrench|paint brush|canvas|sketchbook|pencil case|calculator|stapler|folder|
binder|coffee machine|water jug|fruit bowl|banana|apple|tomato|carrot|lemon|cheese block|egg carton|
milk carton|cereal box|medicine bottle|first aid kit|key ring|padlock|remote control|game controller|
headphones|speaker|microphone|tripod|projector|whiteboard marker|sticky note|calendar|photo frame|
candle|matchbox|lighter|ashtray|plant|fish tank|dog leash|cat bowl|bird cage|garden hose|rake|shovel|
wheelbarrow|toy car|doll|puzzle box|chess board|deck of cards""".replace("\n", "").split("|")

ADJECTIVES = """red|blue|green|yellow|black|white|grey|orange|purple|brown|silver|golden|small|large|old|new|
broken|shiny|wooden|plastic|metal|glass|striped|dusty|wet|heavy|empty|full|folded|torn""".replace("\n", "").split("|")

PLACES = """kitchen|garage|living room|parking lot|office|supermarket aisle|garden|bathroom|bedroom|
hallway|balcony|workshop|classroom|cafe|bakery|library|train platform|bus stop|laundry room|basement|
attic|rooftop|park bench|playground|hospital corridor|hotel lobby|elevator|staircase|reception desk|
restaurant terrace|flower shop|pharmacy counter|gym|swimming pool|backyard|street corner|market stall|
car repair shop|warehouse|dining room""".replace("\n", "").split("|")

PREPOSITIONS = ["in the", "near the door of the", "at the back of the", "on the table in the",
                "by the window of the", "in a corner of the", "on the floor of the", "outside the"]
MANNERS = ["slowly", "quickly", "carefully", "angrily", "happily", "nervously", "quietly", "absent-mindedly"]
WHILES = ["while talking on the phone", "while a radio plays", "while the lights flicker", "before leaving",
          "after a short pause", "while someone watches", "while it starts to rain", "as the alarm rings",
          "while laughing", "without noticing the spill"]
EVENT_TYPES = ["manipulation", "movement", "communication", "cooking", "cleaning", "repair", "transaction",
               "observation"]
ROLES = ["PERFORMS", "RECEIVES", "USES_TOOL", "HAPPENS_IN", "CONTEXT_FOR"]
SPATIAL = ["LOCATED_IN", "NEXT_TO", "ATTACHED_TO", "PART_OF", "IS_SAME_AS"]
SIGN_WORDS = """EXIT|OPEN|CLOSED|SALE|PUSH|PULL|NO PARKING|PLATFORM|FRESH BREAD|COFFEE|PHARMACY|WET FLOOR|
STAFF ONLY|CASH ONLY|WELCOME|HOTEL|BAKERY|TICKETS|LOBBY|GYM|POOL|GARDEN CENTRE|REPAIRS|DELIVERIES|
LIBRARY|QUIET PLEASE|KEEP LEFT|DANGER|FIRE DOOR|RECEPTION""".replace("\n", "").split("|")
NAMES = """Maria|Tom|ACME|Dr. Patel|Joe's Garage|Nina|Cafe Luna|Mr. Okafor|Grandma Rose|Sunrise Bakery|
Leo|Hana|City Library|Max the dog|Sofia|Blue Line Bus|Ahmed|Green Grocers|Kenji|
Pharmacy Plus""".replace("\n", "").split("|")
MOODS = ["calm", "tense", "cheerful", "busy", "melancholic", "playful", "focused"]


def _pool(rng: random.Random, size: int, make) -> list[str]:
    seen: dict[str, None] = {}
    for _ in range(size * 50):  # bounded: a pool larger than its word lists allow stops short
        seen[make(rng)] = None
        if len(seen) >= size:
            break
    return list(seen)


@dataclass
class Pools:
    """Bounded sentence pools every payload draws its clauses from."""

    actions: list[str]
    descriptions: list[str]
    entity_desc: list[str]
    features: list[str]
    signs: list[str]
    sign_desc: list[str]
    macro_labels: list[str]
    super_labels: list[str]
    reasons: list[str]

    @classmethod
    def make(cls, seed: int) -> Pools:
        rng = random.Random(seed)
        return cls(
            actions=_pool(rng, 3000, lambda r: f"{r.choice(PEOPLE)} {r.choice(VERBS)} the {r.choice(ADJECTIVES)} "
                                               f"{r.choice(OBJECTS)} {r.choice(PREPOSITIONS)} {r.choice(PLACES)}"),
            descriptions=_pool(rng, 1500, lambda r: f"{r.choice(PEOPLE).capitalize()} {r.choice(MANNERS)} "
                                                    f"{r.choice(VERBS)} the {r.choice(OBJECTS)} {r.choice(WHILES)}"),
            entity_desc=_pool(rng, 1200, lambda r: f"{r.choice(ADJECTIVES)} {r.choice(ADJECTIVES)} {r.choice(OBJECTS)} "
                                                   f"{r.choice(PREPOSITIONS)} {r.choice(PLACES)}"),
            features=_pool(rng, 400, lambda r: f"{r.choice(ADJECTIVES)} handle, {r.choice(ADJECTIVES)} label"),
            signs=_pool(rng, 500, lambda r: f"{r.choice(SIGN_WORDS)} {r.randint(1, 99)}"),
            sign_desc=_pool(rng, 300, lambda r: f"a sign on the {r.choice(ADJECTIVES)} wall of the {r.choice(PLACES)}"),
            macro_labels=_pool(rng, 800, lambda r: f"{r.choice(PEOPLE).capitalize()} works with the "
                                                   f"{r.choice(OBJECTS)} in the {r.choice(PLACES)}"),
            super_labels=_pool(rng, 200, lambda r: f"A {r.choice(MOODS)} afternoon in the {r.choice(PLACES)}"),
            reasons=_pool(rng, 200,
                          lambda r: f"the {r.choice(OBJECTS)} is {r.choice(PREPOSITIONS)} {r.choice(PLACES)}"),
        )


@dataclass(frozen=True)
class Shape:
    macros_per_hour: float = 12.0
    macros_per_super: int = 4
    entities: int = 13
    events: int = 16
    ocr: int = 5
    edges: int = 30
    keyframe_every_sec: float = 120.0


def plan_videos(hours: float, seed: int) -> list[tuple[str, float]]:
    """(video id, duration in seconds) for a library of ``hours``: videos of 1-3 h each."""
    rng = random.Random(seed * 7919 + 1)
    plan, left, n = [], hours, 0
    while left > 1e-9:
        h = min(left, rng.choice([1.0, 2.0, 3.0]))
        plan.append((f"vid{n:04d}", h * 3600.0))
        left -= h
        n += 1
    return plan


def _around(rng: random.Random, mean: int) -> int:
    return max(1, mean + rng.randint(-2, 2))


def video_graph(video_id: str, duration: float, pools: Pools, seed: int, shape: Shape = Shape(),
                keyframe_path: str | None = None) -> VideoGraph:
    """One synthetic video; deterministic for (video_id, seed)."""
    rng = random.Random(f"{seed}:{video_id}")
    mean_len = 3600.0 / shape.macros_per_hour
    bounds, t = [], 0.0
    while t < duration - 1:
        length = min(rng.uniform(0.66, 1.33) * mean_len, duration - t)
        bounds.append((t, t + length))
        t += length
    place = rng.choice(PLACES)
    people = rng.sample(PEOPLE, 3)
    graph = VideoGraph(video=Video(
        id=video_id, title=f"{people[0].capitalize()} in the {place}", duration=duration, fps=30.0,
        width=1920, height=1080,
        description=f"A long recording of {people[0]}, {people[1]} and {people[2]} around the {place}. "
                    + " ".join(rng.choice(pools.descriptions) + "." for _ in range(3)),
        themes=rng.sample(EVENT_TYPES, 3), key_entities=people + rng.sample(OBJECTS, 4),
        emotional_tone=rng.choice(MOODS)))
    groups, i = [], 0
    while i < len(bounds):
        size = max(1, shape.macros_per_super + rng.randint(-1, 1))
        groups.append(list(range(i, min(i + size, len(bounds)))))
        i += size
    for s_ord, members in enumerate(groups):
        sid = super_id(video_id, s_ord)
        graph.supers.append(SuperEvent(
            id=sid, video_id=video_id, ordinal=s_ord, label=rng.choice(pools.super_labels),
            description=" ".join(rng.choice(pools.descriptions) + "." for _ in range(2)),
            t_start=bounds[members[0]][0], t_end=bounds[members[-1]][1], key_entities=rng.sample(people, 2)))
        previous_macro = None
        for m_ord in members:
            mid = macro_id(video_id, m_ord)
            start, end = bounds[m_ord]
            _macro(graph, rng, pools, shape, sid, mid, m_ord, start, end)
            if previous_macro and rng.random() < 0.3:
                graph.edges.append(Edge(source=previous_macro, target=mid, category=EdgeCategory.MACRO_CAUSAL,
                                        label=rng.choice(["CAUSES", "ENABLES"]),
                                        description=rng.choice(pools.reasons)))
            previous_macro = mid
    for a, b in pairwise(graph.supers):
        graph.edges.append(Edge(source=a.id, target=b.id, category=EdgeCategory.PROGRESSION, label="BEFORE"))
    if keyframe_path:
        n, t = 0, rng.uniform(0, shape.keyframe_every_sec)
        while t < duration:
            m_ord = next(k for k, (s, e) in enumerate(bounds) if s <= t <= e)
            kid = keyframe_id(video_id, n)
            graph.keyframes.append(Keyframe(id=kid, video_id=video_id, t=round(t, 2), path=keyframe_path,
                                            macro_id=macro_id(video_id, m_ord)))
            graph.edges.append(Edge(source=kid, target=macro_id(video_id, m_ord),
                                    category=EdgeCategory.GROUNDING, label="DEPICTS"))
            n += 1
            t += rng.uniform(0.5, 1.5) * shape.keyframe_every_sec
    return graph


def _macro(graph: VideoGraph, rng: random.Random, pools: Pools, shape: Shape, sid: str, mid: str, ordinal: int,
           start: float, end: float) -> None:
    vid = graph.video.id
    actions = [rng.choice(pools.actions) for _ in range(_around(rng, shape.events))]
    label = rng.choice(pools.macro_labels)
    graph.macros.append(MacroEvent(
        id=mid, video_id=vid, super_id=sid, ordinal=ordinal, label=label, t_start=start, t_end=end,
        summary=". ".join(a[0].upper() + a[1:] for a in rng.sample(actions, 3)) + ".",
        key_entities=[rng.choice(PEOPLE), rng.choice(OBJECTS)]))
    entities = []
    for n in range(1, _around(rng, shape.entities) + 1):
        etype = rng.choices([EntityType.PERSON, EntityType.OBJECT, EntityType.LOCATION, EntityType.GROUP],
                            [4, 7, 1, 1])[0]
        if etype is EntityType.PERSON:
            desc = rng.choice(PEOPLE)
        elif etype is EntityType.LOCATION:
            desc = f"the {rng.choice(PLACES)}"
        elif etype is EntityType.GROUP:
            desc = f"a group of {rng.choice(['three', 'four', 'five'])} people"
        else:
            desc = rng.choice(pools.entity_desc)
        ent = Entity(
            id=entity_id(mid, n), video_id=vid, macro_id=mid, entity_type=etype,
            name=rng.choice(NAMES) if rng.random() < 0.25 else None, description=desc,
            attributes={"color": rng.choice(ADJECTIVES[:12]), "state": rng.choice(ADJECTIVES[12:])}
            if etype is EntityType.OBJECT else {},
            grounding=Grounding(primary_time=round(rng.uniform(start, end), 2),
                                distinctive_features=[rng.choice(pools.features)], spatial_hint="center left"))
        graph.entities.append(ent)
        entities.append(ent.id)
    events = []
    times = sorted(rng.uniform(start, max(start, end - 5)) for _ in actions)
    for n, (action, t0) in enumerate(zip(actions, times, strict=True), 1):
        ev = MicroEvent(id=event_id(mid, n), video_id=vid, macro_id=mid, t_start=round(t0, 2),
                        t_end=round(min(end, t0 + rng.uniform(3, 40)), 2), event_type=rng.choice(EVENT_TYPES),
                        action=action, description=rng.choice(pools.descriptions),
                        subject=rng.choice(PEOPLE), object=rng.choice(OBJECTS))
        graph.events.append(ev)
        events.append(ev.id)
    ocr = []
    for n in range(1, _around(rng, shape.ocr) + 1):
        t0 = rng.uniform(start, max(start, end - 5))
        item = OcrText(id=ocr_id(mid, n), video_id=vid, macro_id=mid, text=rng.choice(pools.signs),
                       description=rng.choice(pools.sign_desc), t_start=round(t0, 2),
                       t_end=round(min(end, t0 + rng.uniform(2, 30)), 2))
        graph.ocr.append(item)
        ocr.append(item.id)
    edges: list[Edge] = []
    for a, b in pairwise(events):  # the temporal chain (~15)
        edges.append(Edge(source=a, target=b, category=EdgeCategory.TEMPORAL,
                          label=rng.choices(["BEFORE", "CAUSES", "OVERLAP"], [6, 1, 1])[0],
                          description=rng.choice(pools.reasons) if rng.random() < 0.3 else ""))
    budget = _around(rng, shape.edges) - len(edges)
    while budget > 0:
        if rng.random() < 0.65:  # roles (~10)
            ent, ev = rng.choice(entities), rng.choice(events)
            label = rng.choice(ROLES)
            src, dst = (ev, ent) if label == "RECEIVES" else (ent, ev)
            edges.append(Edge(source=src, target=dst, category=EdgeCategory.ROLE, label=label,
                              description=rng.choice(pools.reasons) if rng.random() < 0.5 else ""))
        else:  # spatial (~5), occasionally an on-screen text annotating an entity
            a, b = rng.sample(entities, 2)
            if ocr and rng.random() < 0.2:
                edges.append(Edge(source=rng.choice(ocr), target=a, category=EdgeCategory.SPATIAL, label="ANNOTATES"))
            else:
                edges.append(Edge(source=a, target=b, category=EdgeCategory.SPATIAL, label=rng.choice(SPATIAL),
                                  description=rng.choice(pools.reasons) if rng.random() < 0.5 else ""))
        budget -= 1
    graph.edges.extend(edges)


def library(hours: float, seed: int, keyframe_path: str | None = None,
            only: set[str] | None = None) -> Iterator[VideoGraph]:
    """The library's videos in order; ``only``: just these ids (each video is the same either way)."""
    pools = Pools.make(seed)
    for vid, duration in plan_videos(hours, seed):
        if only is None or vid in only:
            yield video_graph(vid, duration, pools, seed, keyframe_path=keyframe_path)


QUERY_TEMPLATES = [
    "when does {person} {verb} the {obj}",
    "{obj} in the {place}",
    "who {verb} the {adj} {obj}",
    "where is the {adj} {obj}",
    "sign that says {sign}",
    "{person} {place}",
    "someone {manner} {verb} a {obj} {while_}",
]


def queries(n: int, seed: int) -> list[str]:
    """``n`` distinct search queries over the library's vocabulary (none repeats, so the
    embedder's query cache never answers)."""
    rng = random.Random(seed * 31 + 5)
    out: dict[str, None] = {}
    while len(out) < n:
        template = rng.choice(QUERY_TEMPLATES)
        out[template.format(person=rng.choice(PEOPLE), verb=rng.choice(VERBS), obj=rng.choice(OBJECTS),
                            place=rng.choice(PLACES), adj=rng.choice(ADJECTIVES), sign=rng.choice(SIGN_WORDS),
                            manner=rng.choice(MANNERS), while_=rng.choice(WHILES))] = None
    return list(out)
