"""``import-memdreamer``: MEMDREAMER release memories -> a memtools memory the tools answer on.
The release is made by the tests:
* ``kitchen/`` is ``kitchen_graph()`` written by ``export_memdreamer`` (nested episodes, an
  ``embeddings.json`` of another dimension) — the round trip;
* ``Lecture Hall (2)/`` is hand-written with the quirks the reference code tolerates or
  trips on: flat and nested episodes, a dict ``time_range``, string numbers, a dangling edge,
  unknown and impossible labels, ``slot``-prefixed edge ends, an episode without ``slot_id``,
  an episode with absolute times, a macro event in no super event, an episode folder without
  a subgraph file, entity unification, keyframes, and no ``embeddings.json``;
* ``broken/`` has a graph file that is not JSON: skipped, the others still import.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from memdreamer_release import LECTURE, LV, write_json, write_lecture
from memtools.cli import main
from memtools.embed import TestEmbedder
from memtools.errors import ImportFormatError
from memtools.memdreamer import (
    find_videos,
    import_memdreamer,
    read_memdreamer,
)
from memtools.memdreamer.export import export_memdreamer
from memtools.store import Memory
from memtools.testing import kitchen_graph, with_speech
from memtools.tools import MemoryTools


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("release")
    export_memdreamer(kitchen_graph(), root, embedder=TestEmbedder(8))
    write_lecture(root)
    broken = root / "broken" / "phase4" / "hierarchical_graph_final.json"
    broken.parent.mkdir(parents=True)
    broken.write_text("{not json", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def imported(release, tmp_path_factory):
    """The release imported through the CLI: (memory path, exit code, stdout, JSON report)."""
    out = tmp_path_factory.mktemp("out")
    memory, report = out / "memory", out / "report.json"
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        rc = main(["import-memdreamer", str(release), "--memory", str(memory), "--embedder", "test:64",
                   "--report", str(report)])
    return memory, rc, buffer.getvalue(), json.loads(report.read_text())


@pytest.fixture(scope="module")
def tools(imported):
    with Memory.open(imported[0]) as memory:
        yield MemoryTools(memory)


def _video(report: dict, key: str) -> dict:
    return next(v for v in report["videos"] if v["key"] == key)


# --- the round trip ------------------------------------------------------------------------


def test_export_then_read_gives_the_same_graph(tmp_path):
    original = kitchen_graph()
    folder = export_memdreamer(original, tmp_path)
    assert (folder / "phase2_topdown" / "episode_0002" / "episode_0002" / "step5_subgraph.json").is_file()
    graph = read_memdreamer(tmp_path).graphs[0]
    assert graph.video.model_dump(exclude={"fps", "width", "height"}) == \
        original.video.model_dump(exclude={"fps", "width", "height"})
    for part in ("supers", "macros", "entities", "events", "ocr"):
        assert getattr(graph, part) == getattr(original, part), part
    key = lambda e: (e.source, e.target, e.label)  # noqa: E731
    assert sorted(graph.edges, key=key) == sorted(original.edges, key=key)


def test_speech_survives_the_round_trip(tmp_path):
    original = with_speech(kitchen_graph())
    export_memdreamer(original, tmp_path)
    graph = read_memdreamer(tmp_path).graphs[0]
    assert graph.speech == original.speech and len(graph.speech) == 5
    key = lambda e: (e.source, e.target, e.label)  # noqa: E731
    assert sorted(graph.edges, key=key) == sorted(original.edges, key=key)
    assert {e.label for e in graph.edges if e.category.value == "speech"} == {"SAYS", "ABOUT"}


def test_exported_hierarchy_follows_the_reference_rules(tmp_path):
    folder = export_memdreamer(kitchen_graph(), tmp_path, video_key="vid")
    data = json.loads((folder / "phase4" / "hierarchical_graph_final.json").read_text())
    assert [s["node_id"] for s in data["super_events"]] == ["super_00", "super_01"]
    assert data["subevent_relations"][1] == {"source_id": "super_01", "target_id": "macro_0001",
                                             "relation_type": "HIERARCHICAL", "relation_label": "SUBEVENT_OF"}
    assert {r["target_id"] for r in data["root_relations"]} == {"root_001"}
    assert data["macro_events"][2]["anchors"] == {"slot_ids": [2]}
    sub = json.loads((folder / "phase2_topdown/episode_0002/episode_0002/step5_subgraph.json").read_text())
    fire = next(n for n in sub["nodes"] if n["node_id"] == "evt_001")
    assert (sub["start_sec"], fire["time_range"]) == (240, [5, 20])  # episode-relative


# --- the CLI and its report ------------------------------------------------------------


def test_cli_imports_the_readable_videos_and_reports(imported):
    _, rc, out, report = imported
    assert rc == 1  # one video was skipped
    assert "Imported 2 of 3 video(s)" in out
    assert "- kitchen: 2 super, 3 macro, 7 entity, 5 event, 1 ocr, 0 keyframe, 11 edges" in out
    assert f"- {LECTURE} -> {LV}: 2 super, 4 macro, 3 entity, 2 event, 2 ocr, 2 keyframe, 8 edges" in out
    assert "- broken: skipped — cannot read" in out
    assert "dropped" in out and "Total:" in out
    assert _video(report, "broken")["status"] == "skipped"
    assert _video(report, "kitchen")["status"] == "imported"


def test_report_counts_every_drop_and_repair(imported):
    lecture = _video(imported[3], LECTURE)
    assert lecture["dropped"] == {
        "edge: dangling endpoint": 1,
        "edge: unknown label LOOKS_AT": 1,
        "edge: LOCATED_IN cannot join event->entity": 1,
        "edge to the macro event itself (the hierarchy already links it)": 1,
        "subgraph node of unknown node_type Gesture": 1,
        "node in a subgraph without slot_id (no macro event)": 2,
        "macro relation: BEFORE cannot join macro->macro": 1,
        "super relation: dangling endpoint": 1,
    }
    repaired = lecture["repaired"]
    assert repaired["macro relation: LEADS_TO read as CAUSES"] == 1
    assert repaired["macro event placed in a super event by time"] == 1
    assert repaired["subgraph whose times were already absolute (not shifted)"] == 1
    assert repaired["time clipped into the macro event's range"] == 1
    assert any("episode folder(s) without step5_subgraph.json" in n for n in lecture["notes"])
    assert any("aliases from entity unification added to 1 entity" in n for n in lecture["notes"])
    assert lecture["id_map"]["macro_0002"] == f"{LV}/macro_0002"
    assert lecture["id_map"]["slot1_ent_001"] == f"{LV}/macro_0002/ent_001"
    kitchen = _video(imported[3], "kitchen")
    assert kitchen["dropped"] == {} and kitchen["source_embedding_dim"] == 8
    assert any("(8-d) not used" in n and "64-d" in n for n in kitchen["notes"])


# --- the tools on the imported memory --------------------------------------------------


def test_summary_and_super_events(tools):
    summary = tools.get_summary("kitchen")
    assert summary.title == "Cooking stir-fry in a small kitchen" and summary.duration == 360
    assert summary.themes == ["cooking", "kitchen safety"]
    assert [(s.id, s.label, s.macro_count) for s in summary.supers] == [
        ("kitchen/super_00", "Preparing the vegetables", 1), ("kitchen/super_01", "Frying and the pan fire", 2)]
    lecture = tools.get_summary(LV)
    assert lecture.key_entities == ["Alice", "Bob"] and lecture.duration == 300
    supers = tools.get_super_events(LV).supers
    assert [(s.label, s.t_start, s.t_end) for s in supers] == [("Introduction", 0, 150), ("Questions", 150, 300)]
    assert supers[1].macro_ids == [f"{LV}/macro_0003", f"{LV}/macro_0004"]


def test_macro_events(tools):
    macros = tools.get_macro_events(super_id="kitchen/super_01").macros
    assert [(m.id, m.label, m.t_start, m.t_end) for m in macros] == [
        ("kitchen/macro_0001", "Heating oil in the pan", 120, 240),
        ("kitchen/macro_0002", "Putting out the pan fire", 240, 360)]
    first = tools.get_macro_events(macro_ids=[f"{LV}/macro_0001"]).macros[0]
    assert first.label == "Alice writes the agenda"  # '_' -> ' ', as the reference shows it
    assert first.key_entities == ["Alice", "whiteboard"]


def test_subgraph_of_a_round_tripped_macro(tools):
    sub = tools.get_subgraph("kitchen/macro_0001")
    assert [(e.id.rsplit("/", 1)[-1], e.text) for e in sub.entities] == [
        ("ent_001", "PERSON the cook in a blue apron"), ("ent_002", "OBJECT a black frying pan on the stove")]
    assert [(e.text, e.t_start, e.t_end) for e in sub.events] == [
        ("pours oil into the pan", 130, 150), ("oil overheats and smokes", 150, 235)]
    assert [(o.text, o.t_start) for o in sub.ocr] == [('"HIGH HEAT"', 120)]
    assert {(e.source.rsplit("/", 1)[-1], e.label, e.target.rsplit("/", 1)[-1]) for e in sub.edges} == {
        ("ent_001", "PERFORMS", "evt_001"), ("evt_001", "BEFORE", "evt_002"), ("ocr_001", "ANNOTATES", "ent_002")}


def test_subgraphs_of_the_quirky_video(tools):
    first = tools.get_subgraph(f"{LV}/macro_0001")
    alice = next(e for e in first.entities if "Alice" in e.text)
    assert "aliases: Professor Alice, the teacher" in alice.detail and "clearest at 0:00:12" in alice.detail
    writes = first.events[0]
    assert (writes.t_start, writes.t_end) == (5, 20) and "Alice -> a whiteboard" in writes.detail
    assert {(e.label, e.target.rsplit("/", 1)[-1]) for e in first.edges} == {("PERFORMS", "evt_001"),
                                                                          ("ANNOTATES", "ent_002")}
    second = tools.get_subgraph(f"{LV}/macro_0002")  # flat episode: local times + 60, clipped to the macro
    assert (second.events[0].t_start, second.events[0].t_end) == (65, 150)
    assert "clearest at 0:01:10" in second.entities[0].detail
    assert [(e.label, e.source.rsplit("/", 1)[-1]) for e in second.edges] == [("PERFORMS", "ent_001")]
    third = tools.get_subgraph(f"{LV}/macro_0003")  # absolute times left alone
    assert [(o.text, o.t_start, o.t_end) for o in third.ocr] == [('"FRIDAY 9AM"', 160, 175)]
    assert tools.get_subgraph(f"{LV}/macro_0004").entities == []  # no slot: no subgraph


def test_search(tools):
    hits = tools.search_nodes("pan catches fire", top_k=3, video_id="kitchen").hits
    assert hits[0].id == "kitchen/macro_0002/evt_001" and hits[0].macro_label == "Putting out the pan fire"
    teacher = tools.search_nodes("the teacher", top_k=3, node_types=["entity"], video_id=LV).hits
    assert teacher[0].id == f"{LV}/macro_0001/ent_001"  # found by its unification alias
    exam = tools.search_nodes("exam friday", top_k=2, node_types=["ocr"]).hits
    assert {h.id for h in exam} == {f"{LV}/macro_0001/ocr_001", f"{LV}/macro_0003/ocr_001"}


def test_search_by_time(tools):
    matches = tools.search_by_time(250, 260, video_id="kitchen").matches
    assert [(m.macro.id, m.macro.super_label) for m in matches] == [("kitchen/macro_0002", "Frying and the pan fire")]
    lecture = tools.search_by_time(100, 160, video_id=LV).matches
    assert [m.macro.id for m in lecture] == [f"{LV}/macro_0002", f"{LV}/macro_0003"]


def test_relations(tools):
    causes = tools.get_relations("kitchen/macro_0001", direction="out", relation_types=["CAUSES"]).outgoing
    assert [(e.target, e.description) for e in causes] == [
        ("kitchen/macro_0002", "The overheated oil causes the pan fire.")]
    macro = tools.get_relations(f"{LV}/macro_0002", relation_types=["CAUSES"])
    assert [(e.source, e.label, e.description) for e in macro.incoming] == [
        (f"{LV}/macro_0001", "CAUSES", "The agenda makes Bob curious.")]  # their LEADS_TO
    assert macro.outgoing == []  # BEFORE between macro events was dropped
    supers = tools.get_relations(f"{LV}/super_01", direction="out", relation_types=["LEADS_TO"]).outgoing
    assert [(e.target, e.description) for e in supers] == [(f"{LV}/super_02", "The agenda prompts questions.")]
    end = tools.get_relations(f"{LV}/macro_0004", direction="in", relation_types=["CAUSES"]).incoming
    assert [e.source for e in end] == [f"{LV}/macro_0003"]  # relation_type CAUSAL without a label


def test_keyframes_are_copied_and_depict_their_entity(tools, imported):
    memory_path = imported[0]
    frames = tools.inspect_frames(LV, 0, 150, max_frames=4)
    assert [(f.t, f.source, f.macro_id) for f in frames.frames] == [
        (12, "keyframe", f"{LV}/macro_0001"), (70, "keyframe", f"{LV}/macro_0002")]
    assert all(img[:2] == b"\xff\xd8" for img in frames.images)
    assert sorted(p.name for p in (memory_path / "frames" / LV).iterdir()) == [
        "000012.00_macro_0001_ent_001.jpg", "000070.00_macro_0002_ent_001.jpg"]
    assert not any(p.name.startswith(".") for p in (memory_path / "frames").iterdir())  # no staging left
    depicts = tools.get_relations(f"{LV}/macro_0001/ent_001", direction="in", relation_types=["DEPICTS"]).incoming
    assert [e.source for e in depicts] == [f"{LV}/kf_0000"]


# --- re-import, selection, dry run, errors ---------------------------------------------


def test_reimport_one_video_replaces_it(release, tmp_path):
    memory_path = tmp_path / "memory"
    with Memory.create(memory_path, TestEmbedder(64)) as memory:
        first = import_memdreamer(memory, release, videos=[LECTURE])
        again = import_memdreamer(memory, release, videos=[LV])  # the slugified id works too
        assert [v.status for v in first.videos] == [v.status for v in again.videos] == ["imported"]
        assert memory.video_ids() == [LV]
        assert memory.manifest.videos[LV].counts["keyframe"] == 2
        assert len(list(memory.frames_dir(LV).iterdir())) == 2
        sub = MemoryTools(memory).get_subgraph(f"{LV}/macro_0001")
        assert len(sub.entities) == 2  # replaced, not doubled


def test_dry_run_writes_nothing(release, tmp_path, capsys):
    memory_path = tmp_path / "memory"
    rc = main(["import-memdreamer", str(release / LECTURE), "--memory", str(memory_path), "--dry-run"])
    out = capsys.readouterr().out
    assert rc == 0 and "Read 1 of 1 video(s)" in out and "Dry run: nothing was written." in out
    assert not memory_path.exists()


def test_unknown_video_key_is_reported(release, tmp_path, capsys):
    rc = main(["import-memdreamer", str(release), "--memory", str(tmp_path / "m"), "--embedder", "test:64",
               "--video", "kitchen", "--video", "nope"])
    out = capsys.readouterr().out
    assert rc == 1 and "Imported 1 of 2 video(s)" in out and "- nope: skipped — no video folder 'nope'" in out


def test_a_folder_without_videos_is_an_error(tmp_path, capsys):
    rc = main(["import-memdreamer", str(tmp_path), "--memory", str(tmp_path / "m"), "--embedder", "test:64"])
    assert rc == 1 and "no MEMDREAMER videos under" in capsys.readouterr().err
    with pytest.raises(ImportFormatError, match="not a folder"):
        find_videos(tmp_path / "missing")


def test_a_video_without_macro_events_is_skipped(tmp_path):
    write_json(tmp_path / "empty" / "phase4" / "hierarchical_graph.json", {"root_event": {"title": "x"}})
    report = read_memdreamer(tmp_path).report
    assert report.videos[0].status == "skipped" and "has no macro events" in report.videos[0].error


def test_keys_that_slugify_alike_keep_the_first(tmp_path):
    for key in ("trip 1", "trip_1"):
        export_memdreamer(kitchen_graph("trip_1"), tmp_path, video_key=key)
    report = read_memdreamer(tmp_path).report
    assert [(v.key, v.status) for v in report.videos] == [("trip 1", "parsed"), ("trip_1", "skipped")]
    assert "already taken by 'trip 1'" in report.videos[1].error


def test_a_killed_import_resumes_from_its_ledger(release, tmp_path):
    from memtools.importers.bulk import ImportLedger

    memory_path = tmp_path / "memory"
    with Memory.create(memory_path, TestEmbedder(64)) as memory:
        import_memdreamer(memory, release, videos=[LECTURE])
        ledger = ImportLedger(memory, "k")
        ledger.start()  # as if the run had been killed after landing the lecture
        ledger.add([LV])
        before = memory.manifest.videos[LV].updated_at
        report = import_memdreamer(memory, release, resume_key="k")
        assert memory.manifest.videos[LV].updated_at == before  # landed by the killed run: not written again
        assert {v.video_id for v in report.videos if v.status == "imported"} == set(memory.video_ids())
        assert len(memory.video_ids()) == 2 and not ledger.path.exists()
