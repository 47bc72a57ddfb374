"""The construction pipeline end to end on generated videos, with scripted perception."""

from __future__ import annotations

import itertools
import json
import random
import re
from itertools import pairwise

import pytest

from build_helpers import dump_memory, scenes_video
from memtools.builder import BuildConfig, build_video
from memtools.builder.prompts import EXTRACT_SYSTEM, SEGMENT_SYSTEM
from memtools.builder.testing import ScriptedPerception
from memtools.embed import TestEmbedder
from memtools.errors import PerceptionError
from memtools.perception import FunctionVLM
from memtools.store import Memory
from memtools.tools import MemoryTools

# 100 s in five scenes; 60 s windows and 20 s episodes make the segmentation stream over
# several windows and defer the unfinished last episode of each.
CONFIG = BuildConfig.short().model_copy(update={"window_sec": 60.0, "frames_per_window": 12,
                                                "frames_per_macro": 4, "concurrency": 4})


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    return scenes_video(tmp_path_factory.mktemp("video") / "clip.mp4")


def _memory(path):
    return Memory.create(path, TestEmbedder(64))


def test_a_video_becomes_a_navigable_memory(tmp_path, video):
    vlm = FunctionVLM(ScriptedPerception(episode_sec=20))
    with _memory(tmp_path / "memory") as memory:
        report = build_video(memory, vlm, video, config=CONFIG)
        tools = MemoryTools(memory)

        assert [(v.video_id, v.status) for v in tools.list_videos().videos] == [("clip", "ready")]
        summary = tools.get_summary()
        assert summary.title == "Balls knocking over boxes" and summary.duration == pytest.approx(100.0)
        supers = tools.get_super_events("clip").supers
        macros = [m for s in supers for m in tools.get_macro_events(super_id=s.id).macros]
        # full coverage, no overlaps, in order, ids from ordinals
        assert [m.id for m in macros] == [f"clip/macro_{i:04d}" for i in range(len(macros))]
        assert macros[0].t_start == 0 and macros[-1].t_end == pytest.approx(100.0)
        assert all(a.t_end == b.t_start for a, b in pairwise(macros))
        assert all(5 <= m.t_end - m.t_start <= 120 for m in macros)
        assert len(supers) == -(-len(macros) // 3)  # ScriptedPerception groups three per super event

        # the subgraph: absolute times inside the macro event, the cause -> effect edge
        sub = tools.get_subgraph(macros[2].id)
        assert all(macros[2].t_start <= e.t_start <= e.t_end <= macros[2].t_end for e in sub.events)
        assert ("CAUSES", sub.events[0].id, sub.events[1].id) in {(e.label, e.source, e.target) for e in sub.edges}
        hits = tools.search_nodes("boxes fall over", node_types=["event"], top_k=3).hits
        assert hits and all(h.kind == "event" for h in hits)

        # generated BEFORE between consecutive supers, the model's LEADS_TO, DEPICTS from keyframes
        rel = tools.get_relations(supers[0].id, direction="out")
        assert {e.label for e in rel.outgoing} >= {"BEFORE", "LEADS_TO"}
        depicts = [e for m in macros for e in tools.get_relations(m.id, direction="in").incoming
                   if e.label == "DEPICTS"]
        assert depicts

        frames = sorted(memory.frames_dir("clip").iterdir())
        assert frames and all(f.suffix == ".jpg" for f in frames)
        assert [float(f.stem) for f in frames] == sorted(float(f.stem) for f in frames)
        assert tools.inspect_frames("clip", 0, 100, max_frames=3).frames

    assert report.counts["macro"] == len(macros) and report.usage.calls == len(vlm.requests)
    assert not report.issues
    report_file = json.loads((tmp_path / "memory" / "work" / "clip" / "report.json").read_text())
    assert report_file["counts"] == report.counts

    # what the model saw: absolute times in windows, clip-local times in clips, at most the budgets
    windows = [r for r in vlm.requests if r.system == SEGMENT_SYSTEM]
    clips = [r for r in vlm.requests if r.system == EXTRACT_SYSTEM]
    assert len(windows) >= 2 and len(clips) == len(macros)
    assert all(len(r.frames) <= CONFIG.frames_per_window for r in windows)
    assert windows[1].frames[0][0] > 30  # the second window starts where the first's last episode did
    assert all(len(r.frames) <= CONFIG.frames_per_macro and r.frames[0][0] < 5 for r in clips)


def test_many_macro_events_are_aggregated_in_chunks(tmp_path, video):
    vlm = FunctionVLM(ScriptedPerception(episode_sec=8, per_super=2))
    config = CONFIG.model_copy(update={"aggregate_chunk": 4})
    with _memory(tmp_path / "memory") as memory:
        report = build_video(memory, vlm, video, config=config)
        tools = MemoryTools(memory)
        supers = tools.get_super_events("clip").supers
        assert tools.get_summary().title == "Balls knocking over boxes"
        labels = {e.label for s in supers for e in tools.get_relations(s.id, direction="out").outgoing}
    n_macros = report.counts["macro"]
    assert n_macros > 8
    aggregation_calls = [r for r in vlm.requests if "Fold them upward" in r.prompt]
    root_calls = [r for r in vlm.requests if "Write the video-level summary" in r.prompt]
    assert len(aggregation_calls) == -(-n_macros // 4) and len(root_calls) == 1
    assert all(len(re.findall(r"\n- macro_\d+ \[", r.prompt)) <= 4 for r in aggregation_calls)
    assert sum(len(s.macro_ids) for s in supers) == n_macros
    assert labels - {"CONTAINS"} == {"BEFORE", "LEADS_TO"}


def test_a_finished_video_is_not_rebuilt_unless_asked(tmp_path, video):
    vlm = FunctionVLM(ScriptedPerception(episode_sec=20))
    with _memory(tmp_path / "memory") as memory:
        build_video(memory, vlm, video, config=CONFIG)
        calls = len(vlm.requests)
        again = build_video(memory, vlm, video, config=CONFIG)
        assert again.skipped and len(vlm.requests) == calls
        fresh = build_video(memory, vlm, video, config=CONFIG, fresh=True)
        assert not fresh.skipped and len(vlm.requests) == 2 * calls
        # other settings: the old checkpoints do not apply
        other = build_video(memory, vlm, video, config=CONFIG.model_copy(update={"frames_per_macro": 3}))
        assert other.usage.calls == calls and other.usage.cached_calls == 0


def test_a_failed_build_resumes_without_repeating_finished_calls(tmp_path, video):
    script = ScriptedPerception(episode_sec=20)
    reference = FunctionVLM(script)
    with _memory(tmp_path / "reference") as memory:
        build_video(memory, reference, video, config=CONFIG)
    total = len(reference.requests)

    def flaky(request):
        if len(flaky_vlm.requests) > 4:
            raise PerceptionError("the server went away")
        return script(request)

    flaky_vlm = FunctionVLM(flaky)
    with _memory(tmp_path / "memory") as memory:
        with pytest.raises(PerceptionError):
            build_video(memory, flaky_vlm, video, config=CONFIG)
        assert memory.manifest.videos["clip"].status == "failed"
        answered = 4  # later calls (some in flight at once) failed
        resumed_vlm = FunctionVLM(script)
        report = build_video(memory, resumed_vlm, video, config=CONFIG)
    assert report.resumed and report.usage.cached_calls == answered
    assert len(resumed_vlm.requests) == total - answered
    assert dump_memory(tmp_path / "memory") == dump_memory(tmp_path / "reference")


_turns = itertools.count()


def _garbage(request) -> str:
    """Bad answers of every kind a model produces, in turn."""
    good = ScriptedPerception(episode_sec=15)(request)
    rng = random.Random(request.prompt)
    kind = next(_turns) % 8
    if kind == 0:
        return "I'm sorry, I can't see any video here."
    if kind == 1:
        return good[: len(good) // 2]  # truncated
    if kind == 2:
        return "```json\n" + good.replace('"', "'") + ",\n```"  # fenced python-ish
    if kind == 3:
        return json.dumps({"answer": "wrong schema"})
    data = json.loads(good)
    for edge in data.get("edges", []):
        edge["source_id"] = rng.choice([edge["source_id"], "ghost", "E" + str(rng.randrange(99))])
        edge["relation_label"] = rng.choice([edge["relation_label"], "FRIENDS_WITH", "causes", "AFTER"])
    for item in data.get("micro_events", []) + data.get("ocr_texts", []):
        item["time_range"] = [rng.uniform(-50, 500), rng.uniform(-50, 500)]
    for ep in data.get("episodes", []):
        ep["start_time"] = rng.choice([ep["start_time"], "99:99", 1e9])
    for sup in data.get("super_events", []):
        sup["sub_macro_ids"] = sup["sub_macro_ids"] + ["macro_0999"] if rng.random() < 0.5 else sup["sub_macro_ids"][1:]
    return json.dumps(data)


def test_garbage_from_the_model_never_breaks_the_build(tmp_path, video):
    vlm = FunctionVLM(_garbage)
    with _memory(tmp_path / "memory") as memory:
        report = build_video(memory, vlm, video, config=CONFIG)  # the store refuses an inconsistent graph
        tools = MemoryTools(memory)
        supers = tools.get_super_events("clip").supers
        macros = [m for s in supers for m in tools.get_macro_events(super_id=s.id).macros]
    assert macros[0].t_start == 0 and macros[-1].t_end == pytest.approx(100.0)
    severities = {i.severity for i in report.issues}
    assert {"repaired", "dropped"} <= severities
    assert report.usage.retries > 0
    assert len(vlm.requests) <= (CONFIG.max_retries + 1) * (report.counts["macro"] + 10)


def test_public_api():
    import memtools.builder as build

    assert sorted(build.__all__) == sorted([
        "PRESETS", "AnswerError", "BuildConfig", "BuildSummary", "Issue", "NullProgress", "Progress", "ProgressSink",
        "Prompt", "Snapshot", "TextProgress", "Usage", "VideoReport", "abuild_video", "abuild_videos",
        "aggregation_prompt", "build_video", "build_videos", "canonical_label", "extract_json", "extraction_prompt",
        "parse_answer", "resolve_video_id", "root_prompt", "segmentation_prompt",
    ])
    assert all(hasattr(build, name) for name in build.__all__)
    assert set(build.PRESETS) == {"default", "short", "fast"}
    assert BuildConfig.default().fingerprint() != BuildConfig.short().fingerprint()
    assert BuildConfig.default().fingerprint() == BuildConfig.default().model_copy(
        update={"concurrency": 32}).fingerprint()  # speed settings do not invalidate checkpoints


def test_one_decoding_pass_serves_the_same_frames_as_seeking(tmp_path, video):
    """Windows' frames are decoded by seeking, macro events' by the front-to-back pass: the
    same grid frames either way, byte for byte (what keeps requests stable across resumes)."""
    import asyncio

    from memtools.builder.frames import FrameGrid, FrameReader
    from memtools.video import probe

    info = probe(video)
    grid = FrameGrid(info.duration, 1.25)
    reader = FrameReader(video, grid, max_side=512, max_ahead=40)
    times = [3.0, 3.1, 40.0, 41.2, 99.9]

    async def compare():
        reader.hold("test", 0.0)
        sought = await reader.at(times, seek=True)
        passed = await reader.at(times)
        reader.hold("late", 90.0)
        reader.release("test")  # frames before 90 s are dropped, the pass runs on
        late = await reader.at([95.0])
        again = await reader.at([10.0])  # dropped already: decoded again, the same frame
        reader.hold("early", 0.0)
        far = await reader.at([1.0, 99.0])
        reader.stop()
        await reader.finish()
        return sought, passed, late, again, far

    sought, passed, late, again, far = asyncio.run(compare())
    wanted = sorted({grid.times[grid.index(t)] for t in times})
    assert len(sought) == len(wanted) == 3
    assert all(abs(t - g) <= 0.2 for (t, _), g in zip(sought, wanted, strict=True))  # the decoded frame nearest each
    assert sought == passed
    assert len(late) == 1 and len(again) == 1 and len(far) == 2
