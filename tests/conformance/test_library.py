"""The library layer (issue 31) on every graph engine: canonical entities linked across videos into
library entities with evidence, refusals under conflicting evidence, library ids that survive a
re-import, and a memory made before the layer that gains it through ``memtools repair``."""

from __future__ import annotations

import json
import shutil
import sqlite3

from library_support import day, days, library_ids
from memtools.cli import main
from memtools.embed import TestEmbedder
from memtools.schema import EntityType
from memtools.store import Memory
from memtools.tools import MemoryTools


def _links(path) -> dict[str, tuple[str, list[str], float]]:
    with sqlite3.connect(f"file:{path}/library.sqlite?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT canonical_id, lib_id, evidence, confidence FROM members").fetchall()
    return {c: (lib, json.loads(ev), conf) for c, lib, ev, conf in rows}


def test_things_and_places_link_across_days_with_their_evidence(days_path):
    ids = library_ids(days_path)
    assert ids["day1/entity_001"] == ids["day3/entity_001"]  # the cup, seen again in the kitchen
    assert ids["day1/entity_002"] == ids["day3/entity_002"]  # "Kitchen" and "kitchen"
    assert len({ids["day1/entity_001"], ids["day2/entity_001"], ids["day1/entity_002"], ids["day2/entity_002"]}) == 4
    lib, evidence, confidence = _links(days_path)["day3/entity_001"]
    assert evidence == ["name", "place"] and confidence == 0.95  # "cup" and "a cup", both in the Kitchen
    assert _links(days_path)["day1/entity_001"][1] == ["first"]
    with Memory.open(days_path) as memory:
        timeline = MemoryTools(memory).get_entity_timeline(name="cup")
        assert [t.entity.id for t in timeline.library] == [lib] and timeline.timelines == []
        item = timeline.library[0]
        first, last = item.entity.first_seen, item.entity.last_seen
        assert (item.entity.videos, first and first.video_id, last and last.video_id) == (2, "day1", "day3")
        assert [(a.video_id, a.place) for a in item.appearances] == [("day1", "Kitchen"), ("day3", "Kitchen")]
        found = MemoryTools(memory).search_entities("cup").entities
        assert found[0].id == lib and found[0].videos == 2
        per_video = MemoryTools(memory).get_entity_timeline(name="cup", video_id="day3")
        assert [t.entity.id for t in per_video.timelines] == ["day3/entity_001"] and per_video.library == []
        again = MemoryTools(memory).get_entity_timeline(entity_id=lib, video_id="day1")
        assert [t.entity.id for t in again.timelines] == ["day1/entity_001"]


def test_an_activity_is_one_chain_across_days(days_path):
    with Memory.open(days_path) as memory:
        chain = MemoryTools(memory).get_event_chain("Cooking on a stove")
        assert [c.video_id for c in chain.chain] == ["day1", "day3"] and chain.videos == 2
        assert chain.places == ["Kitchen"] and chain.days is None  # no recording dates: videos are counted
        door = MemoryTools(memory).get_event_chain("opening a door")
        assert [(c.video_id, c.place) for c in door.chain] == [("day1", "Kitchen"), ("day2", "Bedroom")]


def test_with_recording_starts_the_order_is_the_clock_and_days_are_dates(fresh):
    stove = [(0, 10, "Cooking on a stove")]
    kitchen = [("pan", EntityType.OBJECT), ("Kitchen", EntityType.LOCATION)]
    for vid, at in (("a-evening", "2026-11-21T20:00:00+01:00"), ("b-morning", "2026-11-20T08:00:00+01:00"),
                    ("c-breakfast", "2026-11-21T07:30:00+01:00")):
        fresh.write_video(day(vid, stove, kitchen, recorded_at=at))
    with Memory.open(fresh.path) as memory:
        chain = MemoryTools(memory).get_event_chain("cooking on a stove")
        assert [c.video_id for c in chain.chain] == ["b-morning", "c-breakfast", "a-evening"]
        assert (chain.videos, chain.days, chain.places) == (3, 2, ["Kitchen"])
        assert chain.chain[0].recorded_at == "2026-11-20T08:00:00+01:00"
        pan = MemoryTools(memory).get_entity_timeline(name="pan").library[0].entity
        assert (pan.days, pan.first_seen and pan.first_seen.video_id, pan.last_seen and pan.last_seen.video_id) == (
            2, "b-morning", "a-evening")


def test_conflicting_evidence_is_never_merged(fresh):
    fresh.write_video(day("a", entities=[("cup", EntityType.OBJECT), ("Kitchen", EntityType.OBJECT)],
                          attributes={"cup": {"color": "red"}}))
    fresh.write_video(day("b", entities=[("cup", EntityType.OBJECT), ("Kitchen", EntityType.LOCATION)],
                          attributes={"cup": {"color": "white"}}))
    fresh.write_video(day("c", entities=[("cup", EntityType.OBJECT)], attributes={"cup": {"color": "Red"}}))
    ids = library_ids(fresh.path)
    assert ids["a/entity_001"] != ids["b/entity_001"]  # a red cup is not the white one
    assert ids["a/entity_002"] != ids["b/entity_002"]  # a thing called Kitchen is not the place
    assert ids["c/entity_001"] == ids["a/entity_001"]  # the red cup again
    with Memory.open(fresh.path) as memory:
        assert len(MemoryTools(memory).get_entity_timeline(name="cup").library) == 2


def test_a_reimport_or_a_delete_and_readd_keeps_library_ids(fresh):
    fresh.write_videos(days(), batch_size=1)
    before = library_ids(fresh.path)
    fresh.write_video(day("day1"))  # re-imported: replaced
    assert library_ids(fresh.path) == before
    fresh.delete_video("day1")
    fresh.delete_video("day3")  # the cup's and the kitchen's library entities are empty now
    assert "day1/entity_001" not in library_ids(fresh.path)
    fresh.write_videos([day("day3"), day("day1")])  # back, in the other order
    assert library_ids(fresh.path) == before


def test_a_memory_made_before_the_layer_gains_it_through_repair(tmp_path, days_path, capsys):
    old = tmp_path / "old"
    shutil.copytree(days_path, old)
    (old / "library.sqlite").unlink()  # what a memory written before the layer holds: everything else
    with Memory.open(old, TestEmbedder(64)) as memory:
        timeline = MemoryTools(memory).get_entity_timeline(name="cup")
        assert timeline.library == [] and len(timeline.timelines) == 2 and "memtools repair" in timeline.note
        before = MemoryTools(memory).search_nodes("cooking on a stove", top_k=5).render()
    assert main(["check", "--memory", str(old)]) == 1
    assert "library layer" in capsys.readouterr().out
    assert main(["repair", "--memory", str(old)]) == 0
    assert "computed the library layer again" in capsys.readouterr().out
    assert main(["check", "--memory", str(old)]) == 0
    assert library_ids(old) == library_ids(days_path)
    with Memory.open(old, TestEmbedder(64)) as memory:
        tools = MemoryTools(memory)
        assert sorted(memory.video_ids()) == ["day1", "day2", "day3"]
        assert tools.search_nodes("cooking on a stove", top_k=5).render() == before
        assert len(tools.get_entity_timeline(name="cup").library) == 1


def test_a_write_reads_its_own_activities_not_every_one_the_library_holds(fresh, monkeypatch):
    # a caption import makes each caption an activity: reading them all in every batch made each
    # batch slower than the one before (issue 34); a batch asks for its own and embeds only new ones
    from memtools.store.library import layer

    statements: list[str] = []
    connect = layer._connect

    def traced(folder, **kwargs):
        conn = connect(folder, **kwargs)
        conn.set_trace_callback(statements.append)
        return conn

    monkeypatch.setattr(layer, "_connect", traced)
    embedded: list[list[str]] = []
    fresh.write_videos([day("day1")])
    embed = layer._embedder

    def counting(memory_parts, cache=None):
        inner = embed(memory_parts, cache)
        return lambda texts: embedded.append(list(texts)) or inner(texts)

    monkeypatch.setattr(layer, "_embedder", counting)
    fresh.write_videos([day("day3")])
    reads = [s for s in statements if "FROM activities" in s and s.lstrip().upper().startswith("SELECT")]
    assert reads and all("WHERE" in s.upper() for s in reads), reads
    # day3's only activity (cooking) was day1's: nothing of it is embedded again (the linker embeds names)
    assert not set(layer.activity_texts(day("day3"))) & {t for batch in embedded for t in batch}, embedded
    assert [c.video_id for c in MemoryTools(fresh).get_event_chain("Cooking on a stove").chain] == ["day1", "day3"]
