"""Who is who across the library: voice clusters of two videos matched into one person (lib/person_0001),
never against conflicting evidence (two clusters of one video, different names the user gave, a face that
contradicts a voice); the user names and forgets people; the tools show it; ids survive a re-import; a
memory whose layer was made before people gains them on repair."""

from __future__ import annotations

import sqlite3
import sys
import types

import numpy as np
import pytest

from memtools.changes import change_log, forget_person, label_person, merge_entities, undo_change
from memtools.embed.testing import TestEmbedder
from memtools.errors import ToolError, ToolNotFound
from memtools.store import Memory
from memtools.store.library import people as people_layer
from memtools.store.tables.voices import load_voices
from memtools.tools import MemoryTools
from people_support import near, people, save, talk, voice


def library(path, voices: dict[str, dict[str, np.ndarray]], recorded: dict[str, str] | None = None) -> Memory:
    memory = Memory.create(path, TestEmbedder(32))
    for vid, centroids in voices.items():
        save(path, vid, centroids)
        graph = talk(vid)
        graph.video.recorded_at = (recorded or {}).get(vid)
        memory.write_video(graph)
    return memory


def test_the_same_voice_in_two_videos_is_one_person_and_other_voices_are_not(tmp_path):
    with library(tmp_path / "m", {"mon": {"S1": voice(1), "S2": voice(2)},
                                  "tue": {"S1": near(2, 5), "S2": near(3, 5)}}):
        found = people(tmp_path / "m")
    assert found[("mon", "S2")] == found[("tue", "S1")]
    assert len({found[("mon", "S1")], found[("mon", "S2")], found[("tue", "S2")]}) == 3


def test_two_clusters_of_one_video_are_never_one_person(tmp_path):
    """Two labels of one video with the same voice (a clustering that split one speaker) stay two people:
    the clustering told them apart, and only the user may say otherwise."""
    with library(tmp_path / "m", {"mon": {"S1": voice(1), "S2": near(1, 9)}, "tue": {"S1": near(1, 5)}}):
        found = people(tmp_path / "m")
    assert found[("mon", "S1")] != found[("mon", "S2")]
    assert found[("tue", "S1")] in {found[("mon", "S1")], found[("mon", "S2")]}


def test_different_names_given_by_the_user_refuse_a_voice_match(tmp_path):
    with library(tmp_path / "m", {"mon": {"S1": voice(1)}, "tue": {"S1": near(1, 5)}}) as memory:
        assert people(memory.path)[("mon", "S1")] == people(memory.path)[("tue", "S1")]
        label_person(memory, "mon/S1", "Ada")
        label_person(memory, "tue/S1", "Bea")
        apart = people(memory.path)
        assert apart[("mon", "S1")] != apart[("tue", "S1")]
        undo_change(memory, change_log(memory)[0].id)  # Bea goes: the voices are one person again
        assert people(memory.path)[("mon", "S1")] == people(memory.path)[("tue", "S1")]


def test_the_same_name_given_by_the_user_links_even_different_voices(tmp_path):
    with library(tmp_path / "m", {"mon": {"S1": voice(1)}, "tue": {"S1": voice(4)}}) as memory:
        assert people(memory.path)[("mon", "S1")] != people(memory.path)[("tue", "S1")]
        label_person(memory, "mon/S1", "Ada")
        label_person(memory, "tue/S1", "ada")
        rows = sqlite3.connect(memory.path / "library.sqlite").execute(
            "SELECT video_id, person_id, link, sources FROM clusters WHERE label = 'S1' ORDER BY video_id").fetchall()
    assert rows[0][1] == rows[1][1] and rows[1][2] == '["user"]' and rows[1][3] == '["user"]'


def test_a_face_that_contradicts_the_voice_refuses_the_match(tmp_path, monkeypatch):
    """Faces plug in through one loader (``people.FACE_LOADER``): here a stand-in for faces.py."""
    faces = {"mon": [("F1", voice(7))], "tue": [("F1", voice(8))]}  # two different faces
    module = types.ModuleType("people_test_faces")

    def load_faces(memory_path, video_id):
        return [types.SimpleNamespace(label=label, centroid=list(c), sightings=[{"t": 12.0}])
                for label, c in faces.get(video_id, [])]

    module.load_faces = load_faces  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "people_test_faces", module)
    monkeypatch.setattr(people_layer, "FACE_LOADER", "people_test_faces")
    one = [("S1", 10.0, 14.0, "Slice the onions thin.")]
    with Memory.create(tmp_path / "m", TestEmbedder(32)) as memory:
        for vid, v in (("mon", voice(1)), ("tue", near(1, 5))):
            save(memory.path, vid, {"S1": v})
            memory.write_video(talk(vid, one))
        found = people(memory.path)
        with sqlite3.connect(memory.path / "library.sqlite") as conn:
            kinds = conn.execute("SELECT video_id, kind, label, canonical_id FROM clusters ORDER BY 1, 2").fetchall()
    assert [k[1] for k in kinds] == ["face", "voice", "face", "voice"] and kinds[0][3] == kinds[1][3]
    assert found[("mon", "S1")] != found[("tue", "S1")]  # same voice, but the face says another person


def test_label_person_names_the_lines_and_the_identity_and_undoes(tmp_path):
    with library(tmp_path / "m", {"mon": {"S1": voice(1), "S2": voice(2)}, "tue": {"S1": near(2, 5)}},
                 {"mon": "2026-11-16T08:00:00+01:00", "tue": "2026-11-17T08:00:00+01:00"}) as memory:
        tools = MemoryTools(memory)
        person = people(memory.path)[("tue", "S1")]
        applied = label_person(memory, person, "Ada")  # a library person: its first cluster is named
        assert applied.summary == "named voice S2 of mon 'Ada'"
        lines = tools.get_transcript("mon", 0, 360).lines
        assert [u.speaker for u in lines] == ["S1", "Ada", "S1"]
        timeline = tools.get_entity_timeline(entity_id=person)
        (p,) = timeline.people
        assert p.name == "Ada" and [(k.video_id, k.label) for k in p.links] == [("mon", "S2"), ("tue", "S1")]
        assert p.links[0].attached_by == ["user"] and p.links[1].linked_by == ["voice"]
        assert p.links[0].recorded_at == "2026-11-16T08:00:00+01:00"
        text = timeline.render()
        assert f"Person {person} 'Ada': heard or seen in 2 video(s)" in text
        assert "tue (recorded 2026-11-17T08:00:00+01:00) [0:00:10-0:04:15]: voice S1" in text
        by_name = tools.get_entity_timeline(name="Ada")
        assert [x.person_id for x in by_name.people] == [person]
        relations = tools.get_relations("tue/macro_0000/utt_001")
        assert relations.identities[0].person_id == person and "Identity: tue" in relations.render()
        label_person(memory, "mon/S2", "Ada King")  # named again: the same mention, renamed
        assert [u.speaker for u in tools.get_transcript("mon", 0, 360).lines] == ["S1", "Ada King", "S1"]
        undo_change(memory, change_log(memory)[0].id)
        undo_change(memory, applied.change_id)
        assert [u.speaker for u in tools.get_transcript("mon", 0, 360).lines] == ["S1", "S2", "S1"]
        assert people(memory.path)[("mon", "S2")] == person  # the id stays


def test_label_person_refuses_what_is_not_there(tmp_path):
    with library(tmp_path / "m", {"mon": {"S1": voice(1)}}) as memory:
        with pytest.raises(ToolNotFound, match="has no voice 'S7'"):
            label_person(memory, "mon/S7", "Ada")
        with pytest.raises(ToolError, match="not a person or a cluster"):
            label_person(memory, "mon/entity_001", "Ada")
        with pytest.raises(ToolNotFound, match="no person 'lib/person_0099'"):
            forget_person(memory, "lib/person_0099")
        assert change_log(memory) == []


def test_forget_person_deletes_the_vectors_for_good_and_keeps_the_transcript(tmp_path):
    with library(tmp_path / "m", {"mon": {"S1": voice(1), "S2": voice(2)}, "tue": {"S1": near(2, 5)}}) as memory:
        (memory.work_dir("mon") / "speakers").mkdir(parents=True)
        (memory.work_dir("mon") / "speakers" / "done.json").write_text("{}")
        person = people(memory.path)[("tue", "S1")]
        applied = forget_person(memory, person)
        assert [v.label for v in load_voices(memory.path, "mon")] == ["S1"]
        assert load_voices(memory.path, "tue") == []
        assert not (memory.work_dir("mon") / "speakers").exists()
        found = people(memory.path)
        assert found[("mon", "S2")] != found[("tue", "S1")]  # nothing left to match them by
        said = MemoryTools(memory).get_transcript("mon", 0, 360).lines
        assert [(u.speaker, u.text) for u in said][1] == ("S2", "The oil is smoking.")
        with pytest.raises(ToolError, match="for good"):
            undo_change(memory, applied.change_id)
        assert change_log(memory)[0].action == "forget_person" and change_log(memory)[0].state == "done"


def test_merging_two_person_entities_makes_their_voices_one_person(tmp_path):
    with library(tmp_path / "m", {"mon": {"S1": voice(1), "S2": voice(2)}}) as memory:
        label_person(memory, "mon/S1", "Ada")
        label_person(memory, "mon/S2", "Ada's double")
        assert people(memory.path)[("mon", "S1")] != people(memory.path)[("mon", "S2")]
        ada = next(r.id for r in memory.entities.of_video("mon") if r.name == "Ada")
        double = next(r.id for r in memory.entities.of_video("mon") if r.name == "Ada's double")
        merge_entities(memory, ada, double)
        assert people(memory.path)[("mon", "S1")] == people(memory.path)[("mon", "S2")]


def test_person_ids_stay_when_a_video_is_written_again(tmp_path):
    with library(tmp_path / "m", {"mon": {"S1": voice(1), "S2": voice(2)}, "tue": {"S1": near(2, 5)}}) as memory:
        before = people(memory.path)
        memory.delete_video("mon")
        save(memory.path, "mon", {"S1": voice(1), "S2": voice(2)})
        memory.write_video(talk("mon"))
        assert people(memory.path) == before


def test_a_layer_made_before_people_gains_them_on_repair(tmp_path, capsys):
    from memtools.cli import main

    with library(tmp_path / "m", {"mon": {"S1": voice(1)}, "tue": {"S1": near(1, 5)}}):
        pass
    with sqlite3.connect(tmp_path / "m" / "library.sqlite") as conn:  # as memtools before people left it
        conn.execute("DROP TABLE clusters")
        conn.execute("DELETE FROM meta WHERE key IN ('layout', 'next_person')")
        conn.execute("DELETE FROM ids WHERE entity_type LIKE 'person:%'")
    with Memory.open(tmp_path / "m", TestEmbedder(32)) as memory:
        tools = MemoryTools(memory)
        assert tools.search_nodes("slice the onions", top_k=3).hits
        assert tools.get_entity_timeline(name="cook").people == []
    assert main(["check", "--memory", str(tmp_path / "m")]) != 0
    assert "library layer" in capsys.readouterr().out
    assert main(["repair", "--memory", str(tmp_path / "m")]) == 0
    found = people(tmp_path / "m")
    assert found[("mon", "S1")] == found[("tue", "S1")]
    with Memory.open(tmp_path / "m", TestEmbedder(32)) as memory:
        assert len(memory.manifest.videos) == 2 and MemoryTools(memory).get_entity_timeline(name="cook").people


def test_real_voice_vectors_of_one_synthetic_voice_link_across_videos_and_two_voices_do_not(tmp_path):
    """GE2E on espeak-ng voices (synthetic, stated as such): each video's cluster is the centroid of other
    sentences, as a build keeps it; the same voice is one person, another voice is not."""
    from memtools.speech.synthetic import VOICES, espeak_available, speak
    from memtools.speech.voice_weights import weights_path

    if not espeak_available() or weights_path() is None:
        pytest.skip("needs espeak-ng and the voice encoder's weights (pip install --no-deps resemblyzer)")
    from memtools.speech.voice import VoiceEncoder

    encoder = VoiceEncoder()

    def cluster(voice_n: int, sentences: list[str]) -> np.ndarray:
        c = encoder.embed([speak(s, VOICES[voice_n]) for s in sentences]).mean(axis=0)
        return c / np.linalg.norm(c)

    monday = ["The meeting starts at nine in the main hall.", "Could you pass me the report from last week?"]
    tuesday = ["Has anyone seen the keys to the storage room?", "The train was twenty minutes late this morning."]
    with library(tmp_path / "m", {"mon": {"S1": cluster(0, monday), "S2": cluster(1, monday)},
                                  "tue": {"S1": cluster(1, tuesday), "S2": cluster(2, tuesday)}}):
        found = people(tmp_path / "m")
    assert found[("mon", "S2")] == found[("tue", "S1")]
    assert len({found[("mon", "S1")], found[("mon", "S2")], found[("tue", "S2")]}) == 3


def test_splitting_a_named_entity_parts_its_voices(tmp_path):
    from memtools.changes import split_entity

    with library(tmp_path / "m", {"mon": {"S1": voice(1), "S2": voice(2)}}) as memory:
        label_person(memory, "mon/S1", "Ada")
        label_person(memory, "mon/S2", "Ada")  # the user says both voices are Ada: one entity, one person
        assert people(memory.path)[("mon", "S1")] == people(memory.path)[("mon", "S2")]
        ada = next(r for r in memory.entities.of_video("mon") if r.name == "Ada")
        second = next(m for m in ada.mentions if m.startswith("mon/macro_0001/"))
        split_entity(memory, ada.id, [second], "Bea")
        assert people(memory.path)[("mon", "S1")] != people(memory.path)[("mon", "S2")]


def test_speakers_named_by_subtitles_are_one_person_across_videos_by_name(tmp_path):
    lines = [("Roger Bingham", 10.0, 14.0, "Welcome to the show."), ("Ada", 130.0, 134.0, "Thank you.")]
    with Memory.create(tmp_path / "m", TestEmbedder(32)) as memory:
        memory.write_video(talk("mon", lines))
        memory.write_video(talk("tue", lines[:1]))
        found = people(memory.path)
        with sqlite3.connect(memory.path / "library.sqlite") as conn:
            kinds = {r[0] for r in conn.execute("SELECT kind FROM clusters")}
    assert kinds == {"name"}
    assert found[("mon", "Roger Bingham")] == found[("tue", "Roger Bingham")] != found[("mon", "Ada")]
