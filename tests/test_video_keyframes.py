"""Keyframe gates and the selector: each rule alone on in-memory frames, then the whole
pipeline on a decoded synthetic video whose selected keyframes are golden-filed."""

from __future__ import annotations

import json
import os
import re
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from memtools.video import (
    AnalyzedFrame,
    BlurGate,
    DuplicateGate,
    Frame,
    KeyframeConfig,
    KeyframeGate,
    KeyframeSelector,
    StaticGate,
    analyze,
    probe,
    sample_frames,
    select_keyframes,
    ssim,
    uniform_times,
)
from synthetic_video import STORY, STORY_FPS, blurred, noisy, pan, scene, story_frames, write_video

GOLDEN = Path(__file__).parent / "golden" / "video_keyframes.json"
UPDATE_GOLDEN = os.environ.get("MEMTOOLS_UPDATE_GOLDEN") == "1"


def frames_of(images: list[np.ndarray], fps: float = 1.0) -> list[Frame]:
    return [Frame(t=i / fps, index=i, image=image) for i, image in enumerate(images)]


def analyzed(image: np.ndarray, t: float = 0.0) -> AnalyzedFrame:
    return analyze(Frame(t=t, index=0, image=image))


# --- measurements ---------------------------------------------------------------------------


def test_sharpness_separates_sharp_from_blurred_and_ignores_resolution():
    sharp, soft = analyzed(scene(0)), analyzed(blurred(scene(0)))
    assert sharp.sharpness > 100 > 20 > soft.sharpness
    big = np.kron(scene(0), np.ones((8, 8, 1), np.uint8))  # 1280x960, measured at 640 px
    assert analyze(Frame(0.0, 0, big)).thumbnail.shape == (64, 64)
    assert analyze(Frame(0.0, 0, big)).sharpness > 20


def test_ssim_is_one_for_identical_and_low_for_different_pictures():
    a, b = analyzed(scene(0)).thumbnail, analyzed(scene(1)).thumbnail
    assert ssim(a, a) == pytest.approx(1.0)
    assert ssim(a, analyzed(noisy(scene(0), 1)).thumbnail) > 0.95
    assert ssim(a, b) < 0.5
    assert ssim(a, b) == pytest.approx(ssim(b, a))


# --- one gate at a time ------------------------------------------------------------------------


def test_blur_gate():
    gate = BlurGate(min_laplacian_var=20.0)
    assert gate.accept(analyzed(scene(0)), [])
    assert not gate.accept(analyzed(blurred(scene(0))), [])


def test_static_gate_compares_with_the_last_keyframe():
    gate = StaticGate(min_mean_diff=5.0)
    last = analyzed(scene(0))
    assert gate.accept(analyzed(noisy(scene(0), 1)), [])  # nothing kept yet
    assert not gate.accept(analyzed(noisy(scene(0), 1)), [last])
    assert gate.accept(analyzed(scene(1)), [last])
    # slow drift is measured against the last *kept* frame, so it adds up
    assert not gate.accept(analyzed(pan(2, 5)), [analyzed(pan(2, 0))])
    assert gate.accept(analyzed(pan(2, 30)), [analyzed(pan(2, 0))])


def test_duplicate_gate_looks_back_over_its_window():
    first, other = analyzed(scene(0)), analyzed(scene(1))
    back = analyzed(noisy(scene(0), 7))
    assert not DuplicateGate(0.92, window=2).accept(back, [first, other])
    assert DuplicateGate(0.92, window=1).accept(back, [first, other])  # scene 0 is out of sight
    assert DuplicateGate(0.92).accept(analyzed(scene(2)), [first, other])


def test_gates_satisfy_the_protocol():
    for gate in KeyframeConfig.default().gates():
        assert isinstance(gate, KeyframeGate)
    assert [g.name for g in KeyframeConfig.default().gates()] == ["blur", "static", "duplicate"]
    assert KeyframeConfig.all_frames().gates() == []


# --- the selector ------------------------------------------------------------------------------


def test_at_least_one_keyframe_even_if_every_frame_is_gated():
    images = [blurred(scene(0), 31), blurred(scene(0), 9), blurred(scene(0), 41)]
    selector = KeyframeSelector(KeyframeConfig(min_laplacian_var=1e9, max_gap_sec=None))
    kept = list(selector.select(frames_of(images)))
    assert [f.index for f in kept] == [1]  # the sharpest of them
    assert (selector.stats.seen, selector.stats.kept, selector.stats.forced) == (3, 1, 1)
    assert select_keyframes([]) == []


def test_max_gap_forces_a_keyframe_in_a_static_stretch():
    images = [scene(0)] * 30  # 30 s of one picture at 1 fps
    with_gap = select_keyframes(frames_of(images), KeyframeConfig(max_gap_sec=10.0))
    without = select_keyframes(frames_of(images), KeyframeConfig(max_gap_sec=None))
    assert [f.t for f in without] == [0.0]
    # the stand-in is the sharpest frame of the later half of the gap (ties: the earliest)
    assert [f.t for f in with_gap] == [0.0, 5.0, 11.0, 16.0, 22.0]
    assert all(b.t - a.t <= 10.0 for a, b in pairwise(with_gap))


def test_custom_gates_replace_the_configured_ones():
    class EveryOther:
        name = "every_other"

        def accept(self, frame: AnalyzedFrame, kept) -> bool:
            return frame.frame.index % 2 == 0

    selector = KeyframeSelector(KeyframeConfig(max_gap_sec=None), gates=[EveryOther()])
    kept = list(selector.select(frames_of([scene(i) for i in range(6)])))
    assert [f.index for f in kept] == [0, 2, 4]
    assert selector.stats.rejected == {"every_other": 3}


def test_selection_streams():
    def endless():
        i = 0
        while True:
            yield Frame(t=float(i), index=i, image=scene(i % 3))
            i += 1

    stream = KeyframeSelector(KeyframeConfig.default()).select(endless())
    assert [next(stream).index for _ in range(3)] == [0, 1, 2]


def test_presets_are_data():
    assert KeyframeConfig.default() == KeyframeConfig()
    vam = KeyframeConfig.vam()
    assert (vam.sample_every_sec, vam.min_laplacian_var, vam.min_mean_diff, vam.max_similarity) == (2.0, 20, 20, 0.92)
    assert KeyframeConfig.dense().sample_every_sec < KeyframeConfig.default().sample_every_sec
    assert KeyframeConfig.model_validate_json(vam.model_dump_json()) == vam
    with pytest.raises(ValueError):
        KeyframeConfig(sample_every_sec=0)
    with pytest.raises(ValueError):
        KeyframeConfig(unknown=1)  # type: ignore[call-arg]


# --- the whole pipeline on a decoded video, golden-filed ----------------------------------------

GOLDEN_CONFIG = KeyframeConfig(sample_every_sec=0.4, max_gap_sec=5.0)


@pytest.fixture(scope="module")
def story(tmp_path_factory) -> Path:
    """The STORY video (blur, static, pan, duplicate, long static tail) as MJPG at 10 fps."""
    return write_video(tmp_path_factory.mktemp("story") / "story.avi", story_frames(), fps=STORY_FPS)


def test_story_keyframes_match_golden(story):
    info = probe(story)
    times = uniform_times(info.duration, every_sec=GOLDEN_CONFIG.sample_every_sec)
    selector = KeyframeSelector(GOLDEN_CONFIG)
    keyframes = list(selector.select(sample_frames(story, times)))
    got = {
        "config": GOLDEN_CONFIG.model_dump(),
        "indices": [f.index for f in keyframes],
        "times": [round(f.t, 3) for f in keyframes],
        "stats": {
            "seen": selector.stats.seen,
            "kept": selector.stats.kept,
            "forced": selector.stats.forced,
            "rejected": dict(sorted(selector.stats.rejected.items())),
        },
    }
    if UPDATE_GOLDEN:
        GOLDEN.parent.mkdir(exist_ok=True)
        flat_lists = re.compile(r"\[\s+([^\[\]{}]*?)\s+\]")
        text = flat_lists.sub(lambda m: "[" + " ".join(m.group(1).split()) + "]", json.dumps(got, indent=1))
        GOLDEN.write_text(text + "\n")
    assert GOLDEN.exists(), f"{GOLDEN} is missing: run with MEMTOOLS_UPDATE_GOLDEN=1 to write it"
    assert got == json.loads(GOLDEN.read_text()), "rerun with MEMTOOLS_UPDATE_GOLDEN=1 if the change is intended"

    # what the golden file must mean, segment by segment (see STORY)
    def kept_in(start: float, end: float) -> list[float]:
        return [f.t for f in keyframes if start <= f.t < end]

    (static, blur, sharp, panning, duplicate, tail) = [kept_in(s, e) for s, e, _ in STORY]
    assert len(static) == 1 and blur == [] and len(sharp) == 1
    assert len(panning) >= 3
    assert duplicate == []
    assert len(tail) >= 2 and all(b - a <= 5.0 for a, b in pairwise(tail))
    assert selector.stats.rejected["blur"] >= 2 and selector.stats.rejected["duplicate"] >= 3


@pytest.mark.parametrize("preset", ["default", "vam", "dense"])
def test_presets_on_the_story_keep_few_but_cover_every_scene(story, preset):
    config = getattr(KeyframeConfig, preset)()
    info = probe(story)
    times = uniform_times(info.duration, every_sec=config.sample_every_sec)
    keyframes = select_keyframes(sample_frames(story, times), config)
    starts = {s for s, _, _ in STORY}
    assert 3 <= len(keyframes) <= 10
    # scene 0, scene 1 (sharp), the pan and scene 3 each have a keyframe
    for start, end in [(0.0, 3.0), (4.0, 6.0), (6.0, 8.0), (10.0, 20.0)]:
        assert start in starts and any(start <= f.t < end for f in keyframes), (preset, start)
