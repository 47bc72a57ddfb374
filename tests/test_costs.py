"""Cost accounting: tokens from the response's usage (estimated and said so when a server sends none),
per stage and per video, money from a user's price table, and a build that stops before its budget and
resumes when run again."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import httpx
import pytest
import respx

from build_helpers import scenes_video
from memtools.builder import BuildConfig, TextProgress, build_video, build_videos
from memtools.builder.budget import Budget, BudgetExceeded, spending_limit
from memtools.builder.progress import Progress
from memtools.builder.report import Usage
from memtools.builder.testing import ScriptedPerception
from memtools.cli import main
from memtools.costs import PriceTable, collect, record, render_costs, tokens_from_usage
from memtools.embed import TestEmbedder
from memtools.errors import ConfigError
from memtools.perception import OpenAIVLM, PerceptionRequest
from memtools.store import Memory

BASE = "http://vlm.test/v1"
CONFIG = BuildConfig.short().model_copy(update={"frames_per_window": 4, "frames_per_macro": 2, "concurrency": 1})
PRICES = '[models."served-model"]\ninput = 2.0\noutput = 10.0\n'


class Server:
    """A chat-completions server answering like a scripted model, with or without ``usage``."""

    def __init__(self, usage: bool) -> None:
        self.script = ScriptedPerception(episode_sec=20, per_super=2)
        self.usage = usage
        self.requests = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        body = json.loads(request.content)
        asked = PerceptionRequest(prompt=body["messages"][-1]["content"][-1]["text"],
                                  system=body["messages"][0]["content"])
        answer = {"id": "c1", "model": "served-model",
                  "choices": [{"index": 0, "message": {"role": "assistant", "content": self.script(asked)},
                               "finish_reason": "stop"}]}
        if self.usage:
            answer["usage"] = {"prompt_tokens": 1000, "completion_tokens": 50}
        return httpx.Response(200, json=answer)


def vlm_for(server: Server) -> OpenAIVLM:
    router = respx.Router(base_url=BASE, assert_all_called=False)
    router.post("/chat/completions").mock(side_effect=server)
    return OpenAIVLM("served-model", base_url=BASE, transport=httpx.MockTransport(router.async_handler))


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    return scenes_video(tmp_path_factory.mktemp("video") / "clip.mp4", seconds=40)


def test_usage_is_read_or_estimated_and_marked():
    assert tokens_from_usage({"prompt_tokens": 12, "completion_tokens": 3}) == (12, 3, False)
    assert tokens_from_usage({"input_tokens": 7, "output_tokens": 2}) == (7, 2, False)  # LangChain / Anthropic
    assert tokens_from_usage(None, "x" * 400, "y" * 40, images=2) == (100 + 2 * 765, 10, True)


@pytest.mark.parametrize("with_usage", [True, False])
def test_build_records_tokens_per_stage_and_video_and_prices_them(tmp_path, video, with_usage, capsys):
    server = Server(usage=with_usage)
    memory_path = tmp_path / "memory"
    with Memory.create(memory_path, TestEmbedder(32)) as memory:
        build_video(memory, vlm_for(server), video, config=CONFIG)
    rows = collect(memory_path)
    assert {r.video_id for r in rows} == {"clip"}
    assert {r.stage for r in rows} >= {"segment", "extract", "aggregate"}
    assert sum(r.tally.calls for r in rows) == server.requests
    tokens_in = sum(r.tally.tokens_in for r in rows)
    if with_usage:
        assert tokens_in == 1000 * server.requests and not any(r.tally.estimated for r in rows)
    else:
        assert tokens_in > 0 and all(r.tally.estimated for r in rows)

    (memory_path / "prices.toml").write_text(PRICES)
    assert main(["info", "--memory", str(memory_path), "--cost"]) == 0
    out = capsys.readouterr().out
    expected = sum(r.tally.tokens_in * 2.0 + r.tally.tokens_out * 10.0 for r in rows) / 1e6
    assert f"TOTAL ${expected:.4f}" in out
    assert "by stage: aggregate" in out
    assert ("(estimated)" in out) is (not with_usage)


def test_record_hook_for_other_stages_and_unpriced_models(tmp_path):
    record(tmp_path, "speech", "whisper-tiny", None, video_id="talk", prompt_text="", completion_text="z" * 80)
    record(tmp_path, "embed", "text-embedding-3-small", {"prompt_tokens": 40}, video_id="talk")
    rows = {r.stage: r.tally for r in collect(tmp_path)}
    assert (rows["speech"].tokens_out, rows["speech"].estimated) == (20, True)
    assert (rows["embed"].tokens_in, rows["embed"].estimated) == (40, False)
    text = render_costs(collect(tmp_path), PriceTable({}))
    assert "no price for text-embedding-3-small, whisper-tiny" in text
    assert "No price table" in text


def test_bad_price_tables_say_what_to_write(tmp_path):
    bad = tmp_path / "prices.toml"
    bad.write_text('[models."m"]\ninput = "cheap"\n')
    with pytest.raises(ConfigError, match="needs numbers 'input' and 'output'"):
        PriceTable.load(path=bad)
    with pytest.raises(ConfigError, match="needs a price for 'm'"):
        Budget(max_cost=1.0, model="m")


def test_budget_stops_the_build_before_passing_it_and_a_rerun_resumes(tmp_path, video):
    server = Server(usage=True)
    memory_path = tmp_path / "memory"
    with Memory.create(memory_path, TestEmbedder(32)) as memory:
        budget = Budget(max_tokens=9000, model="served-model")  # ~3 calls of 1,050
        with spending_limit(budget), pytest.raises(BudgetExceeded, match="--max-tokens 9,000"):
            build_video(memory, vlm_for(server), video, config=CONFIG)
        assert budget.spent.tokens <= 9000  # stopped before, not after, passing the budget
        paid = server.requests
        assert paid >= 1 and memory.manifest.videos["clip"].status != "ready"

        report = build_video(memory, vlm_for(server), video, config=CONFIG)  # no budget: resumes
        assert report.usage.cached_calls == paid  # the answered calls were not paid twice
        assert memory.manifest.videos["clip"].status == "ready"
    assert sum(r.tally.calls for r in collect(memory_path)) == server.requests


@pytest.mark.parametrize("with_usage", [True, False])
def test_embeddings_over_http_are_counted_by_an_import(tmp_path, monkeypatch, with_usage):
    from memtools.embed import OpenAIEmbedder
    from memtools.importers.bulk import bulk_write
    from memtools.importers.captions import Caption, CaptionedVideo, graph_from_captions

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    texts_sent: list[str] = []

    def embeddings(request: httpx.Request) -> httpx.Response:
        inputs = json.loads(request.content)["input"]
        texts_sent.extend(inputs)
        answer = {"object": "list", "model": "tiny-embed",
                  "data": [{"object": "embedding", "index": i, "embedding": [1.0, float(i + 1), 0.5, len(t)]}
                           for i, t in enumerate(inputs)]}
        if with_usage:
            answer["usage"] = {"prompt_tokens": 7 * len(inputs), "total_tokens": 7 * len(inputs)}
        return httpx.Response(200, json=answer)

    embedder = OpenAIEmbedder("tiny-embed", base_url="https://api.test/v1", dim=4,
                              transport=httpx.MockTransport(embeddings))
    graphs = [graph_from_captions(CaptionedVideo(f"v{n}", [Caption(0, 5, f"a cook chops onions {n}"),
                                                           Caption(6, 9, "the pan is hot")])) for n in range(3)]
    with Memory.create(tmp_path / "m", embedder) as memory:
        bulk_write(memory, graphs, show_progress=False)
    (row,) = [r for r in collect(tmp_path / "m") if r.stage == "embed"]
    assert row.model == "openai:tiny-embed" and row.tally.estimated is (not with_usage)
    if with_usage:
        assert row.tally.tokens_in == 7 * len(texts_sent)
    else:
        assert row.tally.tokens_in >= sum(len(t) for t in texts_sent) // 4


def test_build_progress_shows_the_running_cost_of_the_run(tmp_path, video):
    server = Server(usage=True)
    stream = io.StringIO()
    sink = TextProgress(stream, tty=False, interval=0, prices=PriceTable.load(path=_prices(tmp_path)),
                        model="served-model")
    with Memory.create(tmp_path / "memory", TestEmbedder(32)) as memory:
        build_videos(memory, vlm_for(server), [video, video], video_ids=["one", "two"], config=CONFIG, sink=sink)
    costs = [float(m) for m in re.findall(r", \$(\d+\.\d{4}) so far", stream.getvalue())]
    per_call = (1000 * 2.0 + 50 * 10.0) / 1e6
    assert costs == sorted(costs) and costs[0] < costs[-1]  # it grows while the build runs
    assert costs[-1] == pytest.approx(server.requests * per_call, abs=1e-4)  # both videos, not the last one only
    assert any(line.startswith("[2/2 two]") and f"${costs[-1]:.4f} so far" in line
               for line in stream.getvalue().splitlines())


def test_build_progress_without_a_price_shows_tokens_only(tmp_path):
    stream = io.StringIO()
    progress = Progress(TextProgress(stream, tty=False, prices=PriceTable({}), model="unpriced"), video_count=1)
    progress.start_video("clip", 0, Usage(input_tokens=10, output_tokens=2))
    progress.begin("extract", 1)
    assert "12 tokens" in stream.getvalue() and "$" not in stream.getvalue()


def _prices(tmp_path) -> Path:
    path = tmp_path / "prices.toml"
    path.write_text(PRICES)
    return path
