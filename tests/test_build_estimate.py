"""estimate_build / memtools build --estimate: the build's plan, priced, without a model; close to a real build."""

from __future__ import annotations

import pytest

from jobs_support import counting_perception, make_sample_video
from memtools.builder import BuildConfig, build_video
from memtools.builder.estimate import estimate_build
from memtools.cli import main
from memtools.costs import PriceTable
from memtools.embed.testing import TestEmbedder
from memtools.perception import FunctionVLM
from memtools.store import Memory
from memtools.video import probe


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return make_sample_video(tmp_path_factory.mktemp("video") / "sample.mp4")


def _near(estimated: int, real: int) -> bool:
    return abs(estimated - real) <= 0.2 * real


@pytest.mark.parametrize("preset", ["short", "default"])
def test_the_estimate_is_within_20_percent_of_a_recorded_build(tmp_path, sample, preset):
    config = BuildConfig.preset(preset)
    prices = PriceTable({"scripted": (0.5, 2.0)})
    # episodes are the model's choice: the fake cuts 30 s ones, so the estimate is told so
    plan = estimate_build([probe(sample)], config, model="scripted", prices=prices, episode_sec=30)
    with Memory.create(tmp_path / "mem", TestEmbedder(64)) as memory:
        report = build_video(memory, FunctionVLM(counting_perception()), sample, config=config)
    real, total = report.usage, plan.total
    assert _near(total.calls, real.calls), (total.calls, real.calls)
    assert _near(total.tokens_in, real.input_tokens), (total.tokens_in, real.input_tokens)
    assert _near(total.tokens_in + total.tokens_out, real.tokens), (total, real)
    assert total.images > 0 and plan.seconds > 0
    assert plan.cost == pytest.approx((total.tokens_in * 0.5 + total.tokens_out * 2.0) / 1e6)


def test_build_estimate_prints_the_plan_and_touches_nothing(tmp_path, sample, capsys):
    prices = tmp_path / "prices.toml"
    prices.write_text('[models."gpt-4o-mini"]\ninput = 0.15\noutput = 0.60\n')
    memory = tmp_path / "mem"
    code = main(["build", str(sample), "--memory", str(memory), "--estimate", "--vlm", "openai:gpt-4o-mini",
                 "--prices", str(prices), "--preset", "short"])
    out = capsys.readouterr().out
    assert code == 0
    assert "no model was called" in out and "Cost: about $" in out and "gpt-4o-mini" in out
    assert "call(s)" in out and "image(s)" in out and "Wall time" in out
    assert not memory.exists()  # no memory created, no model asked (any real request fails in tests)
