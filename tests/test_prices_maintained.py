"""Prices a user need not type: models the genai-prices table knows are priced from the copy installed with it
(never fetched), the source and its version are shown, and the user's prices.toml still wins."""

from __future__ import annotations

import re
import socket
from importlib.metadata import version

import pytest

from build_helpers import scenes_video
from memtools.builder.budget import Budget
from memtools.cli import main
from memtools.costs import PriceTable, collect, maintained_price, record, render_costs
from memtools.errors import ConfigError

GENAI_PRICES = f"genai-prices {version('genai-prices')}"
TOTAL = re.compile(r"total\s+(\d+) call\(s\)\s+([\d,]+) in\s+([\d,]+) out")


def _price(model: str) -> tuple[float, float, str]:
    found = maintained_price(model)
    assert found is not None, model
    return found


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    return scenes_video(tmp_path_factory.mktemp("video") / "clip.mp4", seconds=40)


@pytest.fixture(autouse=True)
def no_price_file(monkeypatch):
    monkeypatch.delenv("MEMTOOLS_PRICES", raising=False)


def _estimate(capsys, video, memory, *extra: str) -> tuple[str, int, int]:
    code = main(["build", str(video), "--memory", str(memory), "--estimate", "--vlm", "openai:gpt-4o-mini",
                 "--preset", "short", *extra])
    out = capsys.readouterr().out
    assert code == 0, out
    found = TOTAL.search(out)
    assert found, out
    return out, int(found[2].replace(",", "")), int(found[3].replace(",", ""))


def test_the_estimate_prices_a_known_model_without_a_price_file_and_names_the_source(tmp_path, video, capsys):
    out, tokens_in, tokens_out = _estimate(capsys, video, tmp_path / "memory")
    price_in, price_out, _ = _price("gpt-4o-mini")
    cost = (tokens_in * price_in + tokens_out * price_out) / 1e6
    assert f"Cost: about ${cost:.4f} with gpt-4o-mini's prices (prices: {GENAI_PRICES} (openai gpt-4o-mini))" in out
    assert "no price" not in out


def test_the_users_price_file_wins(tmp_path, video, capsys):
    prices = tmp_path / "prices.toml"
    prices.write_text('[models."gpt-4o-mini"]\ninput = 100.0\noutput = 200.0\n')
    out, tokens_in, tokens_out = _estimate(capsys, video, tmp_path / "memory", "--prices", str(prices))
    cost = (tokens_in * 100.0 + tokens_out * 200.0) / 1e6
    assert f"Cost: about ${cost:.4f} with gpt-4o-mini's prices (prices: {prices})" in out
    assert "genai-prices" not in out

    memory = tmp_path / "memory-with-prices"  # prices.toml in the memory folder wins too
    memory.mkdir()
    (memory / "prices.toml").write_text(prices.read_text())
    out, _, _ = _estimate(capsys, video, memory)
    assert f"with gpt-4o-mini's prices (prices: {memory / 'prices.toml'})" in out


def test_the_table_is_read_from_the_installed_package_with_no_network(monkeypatch):
    from genai_prices import data_snapshot

    def refuse(*args, **kwargs):
        raise OSError("no network in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    maintained_price.cache_clear()
    data_snapshot._bundled_snapshot.cache_clear()
    try:
        price_in, price_out, what = _price("gpt-4o-mini")
    finally:
        maintained_price.cache_clear()
    assert price_in > 0 and price_out > price_in and what == "openai gpt-4o-mini"
    assert data_snapshot._custom_snapshot is None  # no auto-update (genai_prices.UpdatePrices) ever ran
    for unknown in ("served-model", "replay:responses.jsonl", "python:pkg.mod:vlm", ""):
        assert maintained_price(unknown) is None
    assert PriceTable({}).prices.get("gpt-4o-mini") is None  # a table made by hand has only what it is given


def test_a_budget_needs_no_price_file_for_a_known_model(tmp_path):
    budget = Budget(max_cost=0.01, model="gpt-4o-mini", prices=PriceTable.load(tmp_path))
    assert budget.prices.prices["gpt-4o-mini"] == _price("gpt-4o-mini")[:2]
    with pytest.raises(ConfigError, match="needs a price for 'my-local-model'"):
        Budget(max_cost=1.0, model="my-local-model", prices=PriceTable.load(tmp_path))


def test_memtools_info_cost_names_each_models_price_source(tmp_path):
    record(tmp_path, "extract", "gpt-4o-mini", {"prompt_tokens": 1_000_000, "completion_tokens": 0}, video_id="v")
    record(tmp_path, "extract", "my-local-model", {"prompt_tokens": 10, "completion_tokens": 0}, video_id="v")
    text = render_costs(collect(tmp_path), PriceTable.load(tmp_path))
    price_in = _price("gpt-4o-mini")[0]
    assert f"= ${price_in:.4f} ({GENAI_PRICES} (openai gpt-4o-mini))" in text
    assert "no price for my-local-model" in text
    (tmp_path / "prices.toml").write_text('[models."gpt-4o-mini"]\ninput = 1.0\noutput = 1.0\n')
    text = render_costs(collect(tmp_path), PriceTable.load(tmp_path))
    assert f"= $1.0000 ({tmp_path / 'prices.toml'})" in text
