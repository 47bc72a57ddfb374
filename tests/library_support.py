"""Three days of one home, imported from captions (the caption importer's path), for the library
layer's tests (``tests/conformance/test_library.py``, ``tests/faults/test_faults_library.py``).

day1: cooking, then opening a door, in the Kitchen with a cup; day2: a book in the Bedroom,
opening a door; day3: cooking again in the kitchen, the same cup. Golden calls (``CALLS``) read it.
"""

from __future__ import annotations

from memtools.importers.captions import Caption, CaptionedVideo, graph_from_captions
from memtools.schema import EntityType, VideoGraph

DAYS = {
    "day1": ([(0, 10, "Cooking on a stove"), (12, 20, "Opening a door")],
             [("cup", EntityType.OBJECT), ("Kitchen", EntityType.LOCATION)]),
    "day2": ([(0, 8, "Putting a book somewhere"), (9, 15, "Opening a door")],
             [("book", EntityType.OBJECT), ("Bedroom", EntityType.LOCATION)]),
    "day3": ([(2, 14, "Cooking on a stove")],
             [("a cup", EntityType.OBJECT), ("kitchen", EntityType.LOCATION)]),
}


def day(video_id: str, captions=None, entities=None, attributes: dict[str, dict[str, str]] | None = None,
        recorded_at: str | None = None) -> VideoGraph:
    """One day as the caption importer makes it; ``attributes``: entity description -> attributes."""
    caps, ents = DAYS.get(video_id, ([(0, 10, "Drinking from a cup")], []))
    graph = graph_from_captions(CaptionedVideo(
        video_id=video_id, captions=[Caption(float(s), float(e), t) for s, e, t in (captions or caps)],
        duration=30.0, title=video_id, entities=entities or ents, recorded_at=recorded_at))
    for e in graph.entities:
        e.attributes.update((attributes or {}).get(e.description, {}))
    return graph


def days() -> list[VideoGraph]:
    return [day(v) for v in DAYS]


def library_ids(path) -> dict[str, str]:
    """canonical entity id -> library id, as the layer holds them."""
    import sqlite3

    with sqlite3.connect(f"file:{path}/library.sqlite?mode=ro", uri=True) as conn:
        return dict(conn.execute("SELECT canonical_id, lib_id FROM members ORDER BY canonical_id").fetchall())


CALLS = {
    "search_entities_library": lambda t: t.search_entities("cup", top_k=3),
    "get_entity_timeline_library": lambda t: t.get_entity_timeline(name="kitchen"),
    "get_event_chain": lambda t: t.get_event_chain("cooking on a stove"),
}
