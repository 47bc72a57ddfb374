"""The build speaks the library's vocabulary: an extraction prompt offers the names the memory's
library already uses that fit the clip, a few and bounded; without a library it is the prompt it
always was; and a second day whose model reuses a name is linked to the first by the library."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from build_helpers import scenes_video
from memtools.builder import BuildConfig, build_video
from memtools.builder.prompts import EXTRACT_SYSTEM, SEGMENT_SYSTEM, LibraryNames, extraction_prompt
from memtools.builder.testing import ScriptedPerception
from memtools.builder.vocabulary import (
    MAX_ACTIVITIES,
    MAX_ENTITIES,
    MAX_LIST_CHARS,
    Term,
    choose,
    read_terms,
)
from memtools.embed import TestEmbedder
from memtools.importers.captions import Caption, CaptionedVideo, graph_from_captions
from memtools.perception import FunctionVLM, PerceptionRequest, ReplayVLM, request_key
from memtools.perception.replay import RecordingVLM
from memtools.schema import EntityType, VideoGraph
from memtools.store import Memory

CONFIG = BuildConfig.short().model_copy(update={"window_sec": 60.0, "frames_per_window": 4, "frames_per_macro": 2,
                                                "concurrency": 2})
TITLE = "A cook chops onions beside a red kettle in a kitchen"
OBJECT, LOCATION = EntityType.OBJECT, EntityType.LOCATION
# Two earlier days: one in the kitchen the new video shows, one in a garden it does not.
DAYS = {
    "kitchen_day": (["chops onions", "washes the pan"],
                    [("red kettle", OBJECT), ("cutting board", OBJECT), ("kitchen", LOCATION)]),
    "garden_day": (["waters the plants", "mows the lawn"], [("garden hose", OBJECT), ("garden", LOCATION)]),
}
RELEVANT = ("chops onions", "red kettle", "kitchen")
IRRELEVANT = ("waters the plants", "mows the lawn", "garden hose", "garden", "washes the pan", "cutting board")


def _embedder() -> TestEmbedder:
    return TestEmbedder(1024)  # wide enough that unrelated words do not share a bucket


def _day(video_id: str, actions: list[str], entities) -> VideoGraph:
    captions = [Caption(10.0 * n, 10.0 * n + 8, text) for n, text in enumerate(actions)]
    return graph_from_captions(CaptionedVideo(video_id, captions, duration=10.0 * len(actions), title=video_id,
                                              entities=entities))


def _library(path: Path, days: dict = DAYS) -> Path:
    """A memory whose library holds ``days``, imported from captions (as benchmarks/many_days.py does)."""
    with Memory.create(path, _embedder()) as memory:
        memory.write_videos([_day(vid, actions, entities) for vid, (actions, entities) in days.items()])
    return path


class KitchenModel:
    """Scripted answers for a video of a kitchen: every episode is titled ``TITLE``; each clip has a
    kettle and a chopping of onions, worded as the library words them when the prompt offers those
    names (as a model told to reuse them does), in its own words otherwise."""

    def __init__(self) -> None:
        self.script = ScriptedPerception(episode_sec=20)

    def __call__(self, request: PerceptionRequest) -> str:
        data = json.loads(self.script(request))
        if request.system == SEGMENT_SYSTEM:
            for episode in data["episodes"]:
                episode["episode_title"] = TITLE
        elif request.system == EXTRACT_SYSTEM:
            offered = request.vocabulary
            data["entities"][0].update(description="red kettle" if "red kettle" in offered else "a steel kettle",
                                       attributes={})
            data["micro_events"][0]["action"] = "chops onions" if "chops onions" in offered else "dices an onion"
        return json.dumps(data)


@pytest.fixture(scope="module")
def video(tmp_path_factory) -> Path:
    return scenes_video(tmp_path_factory.mktemp("video") / "clip.mp4", seconds=60)


def _build(memory_path: Path, video: Path, vlm) -> None:
    with Memory.open(memory_path, _embedder()) as memory:
        build_video(memory, vlm, video, config=CONFIG)


def _extractions(vlm: FunctionVLM) -> list[PerceptionRequest]:
    asked = [r for r in vlm.requests if r.system == EXTRACT_SYSTEM]
    assert asked
    return asked


# --- (a) the prompt offers the relevant names, bounded ----------------------------------------------


def test_the_prompt_offers_the_names_that_fit_the_clip_and_not_the_others(tmp_path, video):
    vlm = FunctionVLM(KitchenModel())
    _build(_library(tmp_path / "m"), video, vlm)
    for request in _extractions(vlm):
        section = request.vocabulary
        assert section and section in request.prompt
        assert "[NAMES THIS LIBRARY ALREADY USES]" in section
        assert "activities: chops onions\n" in section
        assert "entities (OBJECT): red kettle\n" in section and "entities (LOCATION): kitchen\n" in section
        assert all(name in section for name in RELEVANT)
        assert not any(name in section for name in IRRELEVANT)
    # the section sits between what is said and the output format, and nothing else changed
    first = _extractions(vlm)[0]
    assert first.prompt.replace(first.vocabulary, "") == extraction_prompt(TITLE, 20, n_frames=2).text


def test_the_offer_is_bounded_in_names_and_characters(tmp_path, video):
    kitchen = [f"chops onions in batch number {n:02d} of the long day" for n in range(40)]
    things = [(f"red kettle number {n:02d} on the kitchen stove", OBJECT) for n in range(40)]
    vlm = FunctionVLM(KitchenModel())
    _build(_library(tmp_path / "m", {"busy_day": (kitchen, things)}), video, vlm)
    for request in _extractions(vlm):
        lines = request.vocabulary.strip().splitlines()
        activities = lines[2].removeprefix("activities: ").split("; ")
        entities = lines[3].removeprefix("entities (OBJECT): ").split("; ")
        assert len(lines) == 4 and 0 < len(activities) <= MAX_ACTIVITIES and 0 < len(entities) <= MAX_ENTITIES
        assert len("; ".join(activities)) <= MAX_LIST_CHARS and len("; ".join(entities)) <= MAX_LIST_CHARS
        assert activities == sorted(activities) and activities[0] == kitchen[0]  # ties: by name, deterministically
        assert len(request.vocabulary) <= 2 * MAX_LIST_CHARS + 400


# --- (b) without a library, the prompt is unchanged ------------------------------------------------


def test_without_a_library_or_a_fitting_name_the_prompts_are_unchanged(tmp_path, video):
    plain = FunctionVLM(KitchenModel())
    with Memory.create(tmp_path / "empty", _embedder()) as memory:
        build_video(memory, plain, video, config=CONFIG)
        assert memory.path.joinpath("library.sqlite").is_file()  # the build wrote the first video's library
        again = FunctionVLM(KitchenModel())  # the same video built again: its own names are not offered
        build_video(memory, again, video, config=CONFIG, fresh=True)
    elsewhere = FunctionVLM(KitchenModel())  # a library of names that fit nothing in this video
    _build(_library(tmp_path / "garden", {"garden_day": DAYS["garden_day"]}), video, elsewhere)
    prompts = [r.prompt for r in plain.requests]
    assert all(r.vocabulary == "" for vlm in (plain, again, elsewhere) for r in vlm.requests)
    assert [r.prompt for r in again.requests] == prompts and [r.prompt for r in elsewhere.requests] == prompts
    assert extraction_prompt(TITLE, 20, n_frames=2).text in prompts
    assert extraction_prompt(TITLE, 20, n_frames=2, names=LibraryNames()).vocabulary == ""


def test_the_recorded_key_leaves_the_names_out():
    prompt = extraction_prompt(TITLE, 20, n_frames=2, names=LibraryNames(["chops onions"], [("OBJECT", "red kettle")]))
    bare = extraction_prompt(TITLE, 20, n_frames=2)
    offered = PerceptionRequest(prompt=prompt.text, system=prompt.system, vocabulary=prompt.vocabulary)
    assert request_key(offered) == request_key(PerceptionRequest(prompt=bare.text, system=bare.system))
    assert prompt.with_error("bad JSON").vocabulary == prompt.vocabulary
    with pytest.raises(ValueError, match="verbatim"):
        PerceptionRequest(prompt=bare.text, vocabulary=prompt.vocabulary)


# --- (c) a second day reuses the first day's names, and the library links them ------------------------


def _videos_of(path: Path, name: str, table: str) -> set[str]:
    column, key = ("name", "lib_id") if table == "members" else ("label", "activity")
    with sqlite3.connect(f"file:{path / 'library.sqlite'}?mode=ro", uri=True) as conn:
        return {v for (v,) in conn.execute(f"SELECT DISTINCT video_id FROM {table} WHERE {key} IN "
                                           f"(SELECT {key} FROM {table} WHERE {column} = ?)", (name,))}


def test_a_second_day_that_reuses_a_name_is_linked_to_the_first(tmp_path, video):
    recording = tmp_path / "answers.jsonl"
    _build(_library(tmp_path / "recorded"), video, RecordingVLM(FunctionVLM(KitchenModel()), recording))
    library = _library(tmp_path / "replayed")
    _build(library, video, ReplayVLM(recording))  # the recorded answers, served again
    assert _videos_of(library, "red kettle", "members") == {"kitchen_day", "clip"}
    assert _videos_of(library, "chops onions", "occurrences") == {"kitchen_day", "clip"}
    assert _videos_of(library, "garden", "members") == {"garden_day"}
    # without the names offered, the model words them its own way and nothing links
    alone = tmp_path / "alone"
    with Memory.create(alone, _embedder()) as memory:
        build_video(memory, FunctionVLM(KitchenModel()), video, config=CONFIG)
    assert _videos_of(alone, "a steel kettle", "members") == {"clip"}
    shutil.rmtree(alone)


# --- the selection itself ---------------------------------------------------------------------------


def test_the_library_is_read_once_per_name_without_the_video_being_built(tmp_path):
    days = {**DAYS, "kitchen_again": (["chops onions"], [("Red  kettle", OBJECT)])}
    activities, entities = read_terms(_library(tmp_path / "m", days), exclude_video="garden_day")
    assert [(t.text, t.videos) for t in activities] == [("chops onions", 2), ("washes the pan", 1)]
    # one library entity, two spellings, as many members each: the name first in sort order, spaces collapsed
    assert ("Red kettle", 2, "OBJECT") in [(t.text, t.videos, t.entity_type) for t in entities]
    assert not {"garden", "garden hose"} & {t.text for t in entities}
    assert read_terms(tmp_path / "nothing") == ([], [])


def test_the_choice_prefers_the_name_seen_in_more_videos_on_a_tie():
    terms = [Term("a kettle", 1), Term("the kettle", 3), Term("a bicycle", 9)]
    vectors = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    assert [t.text for t in choose(terms, vectors, np.array([1.0, 0.0]), limit=5)] == ["the kettle", "a kettle"]
    assert [t.text for t in choose(terms, vectors, np.array([1.0, 0.0]), limit=1)] == ["the kettle"]
    assert choose(terms, vectors, np.array([-1.0, 0.0]), limit=5) == []
