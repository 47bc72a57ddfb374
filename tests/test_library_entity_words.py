"""Entities and places across days in other words (issue 49, item 4): library linking by head noun and
by the meaning of names (``memtools.store.library.heads``, ``link_rules``), the guards of before kept.

The memories are imported as the caption importer makes them (``library_support.day``), embedded by
the bag-of-words ``TestEmbedder``, whose vectors never bring two different wordings to 0.9: what links
them here is the head noun. Meaning evidence is shown on the linker itself, with a fake embedder of
names (a fake that behaves like the real one: unit vectors, close for "sofa" and "couch")."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

from library_support import day
from memtools.embed import TestEmbedder
from memtools.schema import EntityType
from memtools.store import Memory
from memtools.store.library.heads import Head, agree, head
from memtools.store.library.link_rules import BY_NAME, Linker, Profile

OBJECT, PLACE = EntityType.OBJECT, EntityType.LOCATION


@pytest.fixture()
def memory(tmp_path):
    with Memory.create(tmp_path / "memory", TestEmbedder(64)) as m:
        yield m


def _links(path) -> dict[str, tuple[str, list[str], float]]:
    with sqlite3.connect(f"file:{path}/library.sqlite?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT canonical_id, lib_id, evidence, confidence FROM members").fetchall()
    return {c: (lib, json.loads(ev), conf) for c, lib, ev, conf in rows}


def _entity(links, graph, wording: str) -> tuple[str, list[str], float]:
    """The library link of the entity ``wording`` of ``graph`` (its canonical id is its order: entity_00n)."""
    n = [e.description for e in graph.entities].index(wording) + 1
    return links[f"{graph.video.id}/entity_{n:03d}"]


def test_a_switch_in_other_words_is_one_library_entity_and_a_door_is_not_a_window(memory):
    days = [day("d1", entities=[("light switch", OBJECT), ("door", OBJECT), ("Kitchen", PLACE)]),
            day("d2", entities=[("the switch by the door", OBJECT), ("the window", OBJECT), ("kitchen", PLACE)]),
            day("d3", entities=[("light switches", OBJECT), ("a door", OBJECT)])]
    memory.write_videos(days)
    links = _links(memory.path)
    switch = _entity(links, days[0], "light switch")[0]
    by_the_door = _entity(links, days[1], "the switch by the door")
    assert by_the_door == (switch, ["head", "place"], 0.85)  # the same head noun, in the same kitchen
    assert _entity(links, days[2], "light switches")[:2] == (switch, ["head"])  # a plural is the same noun
    door, window = _entity(links, days[0], "door")[0], _entity(links, days[1], "the window")[0]
    assert len({switch, door, window}) == 3  # "the switch by the door" names a switch, not the door
    assert _entity(links, days[2], "a door")[:2] == (door, ["name"])


def test_a_head_noun_of_another_kind_or_with_another_attribute_stays_apart(memory):
    days = [day("d1", entities=[("the coffee table", OBJECT), ("living room", PLACE)],
                attributes={"the coffee table": {"color": "white"}}),
            day("d2", entities=[("a kitchen table", OBJECT), ("the dining room", PLACE)]),
            day("d3", entities=[("a table by the sofa", OBJECT)],
                attributes={"a table by the sofa": {"color": "black"}}),
            day("d4", entities=[("a wooden table", OBJECT), ("the living room", PLACE)])]
    memory.write_videos(days)
    links = _links(memory.path)
    coffee, kitchen = _entity(links, days[0], "the coffee table")[0], _entity(links, days[1], "a kitchen table")[0]
    assert coffee != kitchen  # two kinds of table
    assert _entity(links, days[0], "living room")[0] != _entity(links, days[1], "the dining room")[0]
    black = _entity(links, days[2], "a table by the sofa")
    assert black[0] == kitchen and black[1] == ["head"]  # a white table is not a black one: the other table
    assert _entity(links, days[3], "a wooden table")[:2] == (coffee, ["head", "place"])  # in the coffee table's room
    assert _entity(links, days[3], "the living room")[:2] == (_entity(links, days[0], "living room")[0], ["name"])


def test_names_proper_and_people_are_not_linked_by_their_nouns(memory):
    d1 = day("d1", entities=[("cafe", PLACE), ("a man in a red shirt", EntityType.PERSON)])
    d2 = day("d2", entities=[("cafe", PLACE), ("a man with glasses", EntityType.PERSON)])
    d1.entities[0].name, d2.entities[0].name = "Blue Bottle Cafe", "Red Bottle Cafe"
    memory.write_videos([d1, d2])
    ids = {c: lib for c, (lib, _, _) in _links(memory.path).items()}
    assert ids["d1/entity_001"] != ids["d2/entity_001"]  # two named places, whatever their nouns say
    assert ids["d1/entity_002"] != ids["d2/entity_002"]  # two men: people are told apart by voice and face


@pytest.mark.parametrize(("text", "expected"), [
    ("a white light switch on the wall next to the door", Head("switch", "light")),
    ("the lights", Head("light", None)),
    ("a man holding a cup", Head("man", None)),
    ("a sliding door", Head("door", "sliding")),
    ("the cabinet opened", Head("cabinet", None)),
    ("the stairs", Head("stair", None)),
])
def test_the_head_noun_of_a_wording(text, expected):
    assert head(text) == expected


def test_heads_agree_unless_their_kinds_differ_and_a_vague_noun_needs_its_kind():
    assert agree(Head("switch", "light"), Head("switch", None))
    assert not agree(Head("table", "coffee"), Head("table", "kitchen"))
    assert not agree(Head("door", None), Head("window", None))
    assert not agree(Head("room", None), Head("room", "living"))
    assert agree(Head("room", "living"), Head("room", "living"))


NAMES = {"sofa": [1.0, 0.0, 0.0], "the couch": [0.9, 0.43589, 0.0], "door": [0.0, 1.0, 0.0],
         "the doorway": [0.0, 0.8, 0.6]}


def _embed_names(texts: list[str]) -> np.ndarray:
    return np.array([NAMES[t] for t in texts], dtype=np.float32)


def _profile(video: str, name: str, vector: list[float]) -> Profile:
    return Profile(f"{video}/entity_001", video, "OBJECT", name, {name.removeprefix("the ")}, set(), {},
                   np.array(vector, dtype=np.float32))


@pytest.mark.parametrize(("first", "then", "linked"), [("sofa", "the couch", True), ("door", "the doorway", False)])
def test_names_that_mean_the_same_link_by_meaning(first, then, linked):
    profiles = [_profile("d1", first, [1.0, 0.0]), _profile("d2", then, [0.8, 0.6])]  # profile cosine 0.8
    linker = Linker(embed=_embed_names)
    a, b = (linker.add_video([p])[0] for p in profiles)
    assert (a.lib_id == b.lib_id) is linked
    if linked:
        assert b.evidence == ["meaning"] and b.confidence == 0.9  # the names' cosine, at least LINK_MEANING 0.825
    without = Linker(embed=None)
    c, d = (without.add_video([p])[0] for p in profiles)
    assert c.lib_id != d.lib_id  # no embedder of names: no meaning evidence
    before = Linker(rules=BY_NAME, embed=_embed_names)
    e, f = (before.add_video([p])[0] for p in profiles)
    assert e.lib_id != f.lib_id  # the rules before issue 49
