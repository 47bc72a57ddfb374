"""Model output is untrusted: every kind of bad answer is repaired or dropped and reported,
never a crash and never a dangling edge."""

from __future__ import annotations

import asyncio
import json

import pytest

from memtools.builder import BuildConfig, parse_answer
from memtools.builder.aggregate import chunks, clean_chunk, target_supers
from memtools.builder.calls import ModelCalls
from memtools.builder.checkpoint import Checkpoints
from memtools.builder.extract import MacroSpan, clean_subgraph
from memtools.builder.prompts import MacroBrief, extraction_prompt
from memtools.builder.repair import AnswerError, canonical_label, extract_json
from memtools.builder.report import Usage
from memtools.builder.responses import Aggregation, Segmentation, Subgraph, parse_seconds
from memtools.builder.segment import Window, clean_window, plan_window
from memtools.perception import FunctionVLM
from memtools.schema import LABELS, EdgeCategory

# --- finding and repairing JSON -------------------------------------------------------------

NEAR_JSON = [
    ('```json\n{"a": [1, 2,],}\n```', {"a": [1, 2]}),
    ("Sure! Here it is: {'a': True, 'b': None, c: 'it\\'s'} Hope this helps.", {"a": True, "b": None, "c": "it's"}),
    ('<think>maybe {"a": 0}</think>{"a": 1} // final', {"a": 1}),
    ('{"t": 00:01:05, "u": 12s, "v": .5, "w": NaN}', {"t": "00:01:05", "u": "12s", "v": 0.5, "w": None}),
    ('{"text": "line one\nline two\ttab"}', {"text": "line one\nline two\ttab"}),
    ('{"a": 1} {"b": 2}', {"a": 1}),
    ('/* note */ [1, 2, 3]', [1, 2, 3]),
]


@pytest.mark.parametrize("text,expected", NEAR_JSON)
def test_near_json_is_repaired(text, expected):
    value, _notes = extract_json(text)
    assert value == expected


@pytest.mark.parametrize("text,expected", [
    ('{"a": [{"x": 1}, {"x": 2, "y": "cut off here', {"a": [{"x": 1}, {"x": 2, "y": "cut off here"}]}),
    ('{"a": [{"x": 1}, {"x": 2, "y":', {"a": [{"x": 1}, {"x": 2}]}),
    ('{"a": [{"x": 1}, {"x": 2}, {"x"', {"a": [{"x": 1}, {"x": 2}]}),
    ("[1, 2, 3", [1, 2, 3]),
])
def test_truncated_json_is_closed(text, expected):
    value, notes = extract_json(text)
    assert value == expected
    assert any("truncated" in n for n in notes)


@pytest.mark.parametrize("text", ["", "   ", "I cannot help with that.", '{"a": 1 "b": 2}'])
def test_hopeless_answers_raise_answer_error(text):
    with pytest.raises(AnswerError) as info:
        extract_json(text)
    assert "JSON" in str(info.value)


def test_times_in_every_common_form():
    assert parse_seconds("01:02:03") == 3723
    assert parse_seconds("02:03") == 123
    assert parse_seconds("65.5s") == 65.5
    assert parse_seconds(12) == 12.0
    assert parse_seconds("soon") is None and parse_seconds(None) is None and parse_seconds(True) is None


# --- validating item by item ---------------------------------------------------------------------


def test_a_bare_list_becomes_the_list_field_and_bad_items_are_dropped():
    text = json.dumps([{"start_time": "00:00:00", "end_time": "00:00:40", "episode_title": "A"},
                       {"start_time": "later", "end_time": "00:01:00", "episode_title": "B"}])
    answer, notes = parse_answer(text, Segmentation)
    assert [e.episode_title for e in answer.episodes] == ["A"]
    assert any(n.startswith("dropped episodes[1]") for n in notes)


def test_wrapped_answers_are_unwrapped():
    answer, notes = parse_answer(json.dumps({"result": {"summary": "s", "entities": []}}), Subgraph)
    assert answer.summary == "s" and any("unwrapped" in n for n in notes)


def test_wrong_schema_is_an_answer_error():
    with pytest.raises(AnswerError, match="summary"):
        parse_answer('{"foo": 1}', Subgraph)
    with pytest.raises(AnswerError, match="JSON"):
        parse_answer('"just a string"', Subgraph)


def test_loose_labels_are_mapped():
    spatial = LABELS[EdgeCategory.SPATIAL]
    assert canonical_label("located in", spatial) == ("LOCATED_IN", False)
    assert canonical_label("Near", spatial) == ("NEXT_TO", False)
    assert canonical_label("caused-by", LABELS[EdgeCategory.TEMPORAL]) == ("CAUSES", True)
    assert canonical_label("AFTER", LABELS[EdgeCategory.TEMPORAL]) == ("BEFORE", True)
    assert canonical_label("LOVES", spatial) == (None, False)


# --- extraction: ids, times, labels ---------------------------------------------------------------

MACRO = MacroSpan(id="v/macro_0003", ordinal=3, t_start=100.0, t_end=140.0, label="Ball and boxes")


def _subgraph(**overrides) -> Subgraph:
    data = {
        "summary": "A ball hits boxes.",
        "entities": [
            {"entity_id": "E1", "entity_type": "object", "description": "red ball", "name": "null",
             "visual_grounding": {"primary_time_sec": "00:05"}},
            {"entity_id": "E2", "entity_type": "Stuff", "description": "boxes"},
            {"entity_id": "E3", "entity_type": "place", "description": "warehouse"},
        ],
        "micro_events": [
            {"event_id": "V2", "time_range": [30, 90], "action": "boxes fall"},  # ends past the clip
            {"event_id": "V1", "time_range": ["00:10", "00:05"], "action": "ball hits boxes"},  # reversed
        ],
        "ocr_texts": [{"ocr_id": "T1", "text": "WAREHOUSE B", "time_range": [0, 40]},
                      {"text": " ", "time_range": [0, 1]}],
        "edges": [
            {"source_id": "V1", "target_id": "V2", "relation_label": "causes"},
            {"source_id": "V2", "target_id": "V1", "relation_label": "after"},  # -> V1 BEFORE V2
            {"source_id": "E1", "target_id": "V1", "relation_label": "performed"},
            {"source_id": "V1", "target_id": "E3", "relation_label": "HAPPENS_IN"},
            {"source_id": "E9", "target_id": "V1", "relation_label": "PERFORMS"},  # hallucinated id
            {"source_id": "E1", "target_id": "E2", "relation_label": "LOVES"},  # unknown label
            {"source_id": "E1", "target_id": "V2", "relation_label": "CAUSES"},  # wrong endpoint kinds
            {"source_id": "T1", "target_id": "E3", "relation_label": "annotates"},
            {"source_id": "red ball", "target_id": "V2", "relation_label": "RECEIVES"},  # by description
            {"source_id": "E1", "target_id": "E1", "relation_label": "IS_SAME_AS"},  # self loop
            {"source_id": "V1", "target_id": "V2", "relation_label": "CAUSES"},  # duplicate
        ],
    }
    data.update(overrides)
    answer, _ = parse_answer(json.dumps(data), Subgraph)
    return answer


def test_extraction_maps_ids_times_and_labels():
    x = clean_subgraph(_subgraph(), MACRO, "v")
    assert [e.id for e in x.entities] == ["v/macro_0003/ent_001", "v/macro_0003/ent_002", "v/macro_0003/ent_003"]
    assert [e.entity_type.value for e in x.entities] == ["OBJECT", "OBJECT", "LOCATION"]
    assert x.entities[0].name is None and x.entities[0].grounding.primary_time == 105.0
    # events in time order, local -> absolute, reversed range fixed, clipped into the macro event
    assert [(e.action, e.t_start, e.t_end) for e in x.events] == [("ball hits boxes", 105.0, 110.0),
                                                                    ("boxes fall", 130.0, 140.0)]
    assert [o.text for o in x.ocr] == ["WAREHOUSE B"]
    edges = {(e.source.rsplit("/", 1)[-1], e.label, e.target.rsplit("/", 1)[-1]) for e in x.edges}
    assert edges == {("evt_001", "CAUSES", "evt_002"), ("evt_001", "BEFORE", "evt_002"),
                     ("ent_001", "PERFORMS", "evt_001"), ("evt_001", "HAPPENS_IN", "ent_003"),
                     ("ocr_001", "ANNOTATES", "ent_003"), ("ent_001", "RECEIVES", "evt_002")}
    details = " | ".join(i.detail for i in x.issues)
    assert "no node 'E9'" in details and "unknown relation label" in details
    assert "CAUSES cannot join entity and event" in details and "unknown type 'Stuff'" in details
    assert "clipped 1 time(s)" in details
    ids = {n.id for n in [*x.entities, *x.events, *x.ocr]}
    assert all(e.source in ids and e.target in ids for e in x.edges)


def test_absolute_times_are_recognised():
    answer = _subgraph(micro_events=[{"event_id": "V1", "time_range": [110, 120], "action": "a"},
                                     {"event_id": "V2", "time_range": [125, 139], "action": "b"}])
    x = clean_subgraph(answer, MACRO, "v")
    assert [(e.t_start, e.t_end) for e in x.events] == [(110, 120), (125, 139)]
    assert any("video clock" in i.detail for i in x.issues)


def test_no_answer_keeps_the_macro_event_without_a_subgraph():
    x = clean_subgraph(None, MACRO, "v")
    assert x.entities == [] and x.edges == [] and x.issues[0].severity == "fallback"


# --- segmentation windows ------------------------------------------------------------------------

CFG = BuildConfig(window_sec=100, min_episode_sec=10, max_episode_sec=40, frames_per_window=20)


def _seg(*episodes) -> Segmentation:
    answer, _ = parse_answer(json.dumps({"episodes": [
        {"start_time": a, "end_time": b, "episode_title": t, **({"complete": c} if c is not None else {})}
        for a, b, t, c in episodes]}), Segmentation)
    return answer


def _spans(window: Window) -> list[tuple[float, float]]:
    return [(e.t_start, e.t_end) for e in window.episodes]


def test_windows_cover_the_video_and_the_unfinished_episode_moves_to_the_next():
    w = plan_window(0, 0.0, 300.0, CFG)
    assert (w.start, w.end, w.at_end) == (0, 100, False)
    out = clean_window(w, _seg((0, 30, "A", None), (28, 55, "B", None), (60, 100, "C", None)), CFG, 5)
    assert _spans(out) == [(0, 28), (28, 60)]  # overlap cut, gap absorbed, C deferred
    assert out.next_start == 60
    out = clean_window(w, _seg((0, 30, "A", None), (30, 60, "B", False)), CFG, 5)
    assert out.next_start == 30  # the model said B goes on


def test_the_last_window_runs_to_the_end_and_takes_a_short_tail():
    w = plan_window(3, 250.0, 355.0, CFG)  # only 5 s would be left after 350: take them
    assert (w.end, w.at_end) == (355.0, True)
    out = clean_window(w, _seg((250, 300, "A", None), (300, 320, "B", False)), CFG, 5)
    assert _spans(out)[-1][1] == 355.0 and out.next_start == 355.0


def test_short_episodes_merge_and_long_ones_split():
    w = plan_window(0, 0.0, 100.0, CFG)
    out = clean_window(w, _seg((0, 4, "tiny", None), (4, 100, "long", None)), CFG, 5)
    assert _spans(out) == [(0, 100 / 3), (100 / 3, 200 / 3), (200 / 3, 100)]
    assert out.episodes[0].title == "long (part 1/3)"
    assert {i.severity for i in out.issues} == {"repaired"}


def test_window_relative_times_are_shifted_and_junk_falls_back_to_equal_parts():
    w = plan_window(1, 100.0, 300.0, CFG)
    out = clean_window(w, _seg((0, 40, "A", None), (40, 100, "B", None)), CFG, 5)
    assert _spans(out)[0] == (100, 140)
    out = clean_window(w, _seg((900, 950, "outside", None)), CFG, 5)
    assert [i.severity for i in out.issues] == ["dropped", "fallback"]
    assert out.next_start > 100
    out = clean_window(w, None, CFG, 5)
    assert _spans(out)[0][0] == 100 and out.next_start > 100


# --- aggregation -----------------------------------------------------------------------------------

BRIEFS = [MacroBrief(macro_id=f"macro_{i:04d}", label=f"M{i}", t_start=10 * i, t_end=10 * i + 10, summary="",
                     key_entities=["x"], event_types=[], ocr_texts=[]) for i in range(6)]


def _agg(data) -> Aggregation:
    answer, _ = parse_answer(json.dumps(data), Aggregation)
    return answer


def test_aggregation_partitions_every_macro_event_into_contiguous_supers():
    answer = _agg({
        "super_events": [
            {"super_id": "S1", "label": "First", "sub_macro_ids": ["macro_0000", "macro_0001", "macro_0004"]},
            {"super_id": "S2", "label": "Second", "sub_macro_ids": ["2", "vid/macro_0003", "macro_0001", "m99"]},
        ],
        "macro_relations": [
            {"source": "macro_0000", "target": "macro_0001", "type": "causes", "reason": "r"},
            {"source": "macro_0001", "target": "macro_0002", "type": "ENABLES"},  # across supers
            {"source": "macro_0002", "target": "macro_0003", "type": "BEFORE"},  # never taken
            {"source": "macro_0002", "target": "macro_0077", "type": "CAUSES"},  # hallucinated
        ],
        "super_relations": [{"source": "S1", "target": "Second", "type": "leads to"},
                            {"source": "S2", "target": "S9", "type": "RESOLVES"}],
    })
    result = clean_chunk(0, answer, BRIEFS)
    assert [d.macros for d in result.supers] == [["macro_0000", "macro_0001"], ["macro_0002", "macro_0003"],
                                                 ["macro_0004", "macro_0005"]]
    assert [d.label for d in result.supers] == ["First", "Second", "First (continued)"]
    assert [(r.source, r.label, r.target) for r in result.macro_relations] == [("macro_0000", "CAUSES", "macro_0001")]
    assert [(r.source, r.label, r.target) for r in result.super_relations] == [("0", "LEADS_TO", "1")]
    details = " | ".join(i.detail for i in result.issues)
    for expected in ("'m99'", "two super events", "in no super event", "not one contiguous run",
                     "different super events", "macro_0077", "'S9'"):
        assert expected in details


def test_unusable_aggregation_falls_back_to_groups_by_time():
    result = clean_chunk(0, _agg({"super_events": []}), BRIEFS)
    assert sum(len(d.macros) for d in result.supers) == 6 and result.issues[0].severity == "fallback"
    result = clean_chunk(0, None, BRIEFS[:1])
    assert [d.macros for d in result.supers] == [["macro_0000"]]


def test_chunking_and_targets():
    assert [len(c) for c in chunks(100, 40)] == [33, 34, 33]
    assert [len(c) for c in chunks(3, 40)] == [3]
    assert target_supers(4) == (1, 2) and target_supers(40) == (5, 14) and target_supers(400)[1] == 20


# --- retry with the error, bounded -------------------------------------------------------------------


def test_retries_carry_the_error_and_stop_after_max_retries(tmp_path):
    answers = iter(["I think the clip shows a kitchen.", '{"foo": 1}', '{"summary": "ok"}'])
    vlm = FunctionVLM(lambda request: next(answers))
    usage = Usage()

    async def no_frames():
        return []

    async def ask(retries):
        calls = ModelCalls(vlm, Checkpoints(tmp_path / f"r{retries}"), concurrency=2, max_retries=retries,
                           usage=usage)
        return await calls.ask("extract", "macro_0000", extraction_prompt("t", 10, n_frames=1), no_frames,
                               max_tokens=100)

    answer, issues = asyncio.run(ask(2))
    assert answer.summary == "ok" and len(vlm.requests) == 3
    assert "[YOUR PREVIOUS ANSWER COULD NOT BE USED]" not in vlm.requests[0].prompt
    assert "no JSON object or array" in vlm.requests[1].prompt
    assert "summary" in vlm.requests[2].prompt.split("COULD NOT BE USED]")[1]
    assert [i.severity for i in issues] == ["repaired", "repaired"]

    vlm.fn = lambda request: "nope"
    answer, issues = asyncio.run(ask(1))
    assert answer is None and len(vlm.requests) == 5  # 1 + max_retries=1
    assert issues[-1].severity == "fallback" and usage.retries == 3


def test_runs_of_short_episodes_pair_up_instead_of_piling_into_one():
    cfg = BuildConfig(window_sec=100, min_episode_sec=15, max_episode_sec=100)
    w = plan_window(0, 0.0, 100.0, cfg)
    out = clean_window(w, _seg(*[(10 * i, 10 * i + 10, f"E{i}", None) for i in range(10)]), cfg, 5)
    assert _spans(out) == [(0, 20), (20, 40), (40, 60), (60, 80), (80, 100)]
