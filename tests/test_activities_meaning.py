"""Activities by meaning (issue 49): a question finds the moments a model worded its own way, every day
differently, and not the ones that do the opposite; with the real default embedder (all-MiniLM-L6-v2 from
its PyPI package, offline), as a user's memory has it."""

from __future__ import annotations

import sqlite3

import pytest

from memtools.importers.captions import Caption, CaptionedVideo, graph_from_captions
from memtools.store import Memory
from memtools.store.library import meaning
from memtools.tools import MemoryTools

DAYS = {
    "mon": ["person flipped the light switch near the door.", "a person drinks coffee from a mug."],
    "tue": ["I turned off the lamp before leaving.", "someone opens the fridge."],
    "wed": ["the person turns the lights on.", "person closes the fridge door."],
    "thu": ["a man is fixing the light on the wall.", "person sits on the sofa reading a book."],
}


def _graph(n: int, video_id: str, sentences: list[str]):
    return graph_from_captions(CaptionedVideo(
        video_id=video_id, captions=[Caption(10.0 * i, 10.0 * i + 8, s) for i, s in enumerate(sentences)],
        duration=30.0, title=video_id, recorded_at=f"2026-11-{16 + n:02d}T08:00:00+00:00"))


@pytest.fixture(scope="module")
def week(tmp_path_factory):
    from memtools.embed import default_embedder

    path = tmp_path_factory.mktemp("meaning") / "week"
    with Memory.create(path, default_embedder()) as memory:
        memory.write_videos([_graph(n, v, s) for n, (v, s) in enumerate(DAYS.items())])
    return path


def test_turning_on_a_light_finds_the_flipped_switch_not_the_lamp_turned_off(week):
    with Memory.open(week) as memory:
        chain = MemoryTools(memory).get_event_chain("turning on a light")
    found = {c.action: c for c in [*chain.chain, *chain.doubtful]}
    counted = {c.action: c for c in chain.chain}
    assert {"the person turns the lights on.", "person flipped the light switch near the door."} <= set(counted)
    assert not {"I turned off the lamp before leaving.", "a man is fixing the light on the wall."} & set(found)
    assert all(0.0 < c.score <= 1.0 for c in found.values())
    assert chain.day_list == ["2026-11-16", "2026-11-18"] and chain.days == 2
    text = chain.render()
    assert "turns the lights on" in text and "match" in text and "turned off the lamp" not in text


def test_opposite_verbs_and_particles_never_match():
    vectors: dict = {}
    on, off = meaning.parse("turning on a light"), meaning.parse("person turned off the lamp")
    assert on.verb == off.verb == "turn" and on.particles == ("on",) and off.particles == ("off",)
    assert meaning.features(on, off, 0.9, vectors)[3] == 1.0  # conflict
    opening, closing = meaning.parse("Opening a door"), meaning.parse("the person closes the door.")
    assert meaning.probability(opening, closing, 0.9, vectors) < meaning.DOUBT
    assert meaning.probability(opening, meaning.parse("person opened the door"), 0.85, vectors) >= meaning.SURE


def test_alternatives_are_asked_one_by_one():
    assert meaning.variants("Drinking from a cup/glass/bottle") == [
        "Drinking from a cup", "Drinking from a glass", "Drinking from a bottle"]
    assert meaning.variants("Watching/Reading a book") == ["Watching a book", "Reading a book"]


def test_a_question_that_names_no_known_activity_says_so(week):
    with Memory.open(week) as memory:
        chain = MemoryTools(memory).get_event_chain("washing the car")
    assert not chain.chain and "No activity in this library matches 'washing the car'" in chain.render()


def test_activities_are_grouped_by_meaning_each_member_with_its_similarity(week):
    with sqlite3.connect(f"file:{week}/library.sqlite?mode=ro", uri=True) as conn:
        rows = {label: (grp, sim) for label, grp, sim in conn.execute("SELECT label, grp, similarity FROM activities")}
    assert len(rows) == sum(len(s) for s in DAYS.values())
    leads = {label for label, (grp, _) in rows.items() if meaning.core(label) and grp == label.lower().strip(" .")}
    assert all(sim == 1.0 for label, (_, sim) in rows.items() if label in leads)
    assert all(meaning.GROUP <= sim <= 1.0 for _, sim in rows.values())
    # opposite acts never share a group
    assert rows["I turned off the lamp before leaving."][0] != rows["the person turns the lights on."][0]
