"""Recording and replaying perception; the request key; the fakes and the factory."""

from __future__ import annotations

import asyncio
import json

import pytest

import memtools.perception as perception
from memtools.errors import ConfigError, PerceptionError
from memtools.perception import (
    VLM,
    FunctionVLM,
    OpenAIVLM,
    PerceptionRequest,
    PerceptionResponse,
    RecordingVLM,
    ReplayVLM,
    Usage,
    complete_sync,
    frame_label,
    request_key,
    vlm_from_spec,
)

EXPORTED = {
    "ALLOW_MODEL_REQUESTS_ENV",
    "DEFAULT_BASE_URL",
    "SCHEMES",
    "VLM",
    "BaseVLM",
    "FunctionVLM",
    "LangChainVLM",
    "LocalVLM",
    "OpenAIVLM",
    "PerceptionRequest",
    "PerceptionResponse",
    "RecordingVLM",
    "ReplayVLM",
    "RetryPolicy",
    "Usage",
    "UsageCounter",
    "UsageTotals",
    "block_model_requests",
    "complete_sync",
    "format_time",
    "frame_label",
    "request_key",
    "request_preview",
    "vlm_from_spec",
}


def test_public_api_is_pinned():
    assert set(perception.__all__) == EXPORTED
    for name in EXPORTED:  # defined in memtools.perception (not a stray re-export of something else)
        obj = getattr(perception, name)
        assert getattr(obj, "__module__", "memtools.perception").startswith("memtools.perception"), name


def request(prompt: str = "Describe.", *, t: float = 1.0, image: bytes = b"\xff\xd8jpeg", **kw) -> PerceptionRequest:
    return PerceptionRequest(prompt=prompt, frames=[(t, image)], **kw)


def echo(req: PerceptionRequest) -> str:
    return f"saw {len(req.frames)} frames: {req.prompt}"


# --- the request key ---------------------------------------------------------------------------


def test_request_key_is_stable_and_sensitive_to_what_matters():
    key = request_key(request())
    assert key == request_key(request()) and len(key) == 64
    assert key == "d46fae525d9cf0a9bc67ef96f9ca8c231221eaab870c9dbe3f7e821c36c87da6"  # recordings depend on it
    changed = [
        request("Describe!"),
        request(t=1.5),
        request(image=b"\xff\xd8other"),
        request(system="be brief"),
        request(json_mode=True),
        request(json_schema={"type": "object"}),
    ]
    assert len({key, *(request_key(r) for r in changed)}) == 1 + len(changed)
    # generation settings do not change what was asked
    assert request_key(request(max_tokens=10, temperature=0.7)) == key


def test_request_validation_and_labels():
    with pytest.raises(ValueError):
        PerceptionRequest(prompt="x", frames=[(-1.0, b"a")])
    with pytest.raises(ValueError):
        PerceptionRequest(prompt="x", frames=[(1.0, b"")])
    assert frame_label(83.0) == "frame at 0:01:23 (83.0 s)"
    assert frame_label(3725.46) == "frame at 1:02:05 (3725.5 s)"
    assert PerceptionResponse(text="x", finish_reason="length").truncated


# --- record, then replay -----------------------------------------------------------------------


async def test_record_then_replay_round_trip(tmp_path):
    path = tmp_path / "rec" / "perception.jsonl"
    inner = FunctionVLM(echo, model_name="real-model")
    recorder = RecordingVLM(inner, path)
    asked = [request(f"question {i}", t=float(i)) for i in range(6)]
    answers = await asyncio.gather(*(recorder.complete(r) for r in asked))  # concurrent appends

    lines = path.read_text().splitlines()
    assert len(lines) == 6
    record = json.loads(lines[0])
    assert set(record) == {"key", "model", "text", "usage", "finish_reason", "preview"}
    assert record["preview"].startswith("1 frame 0:00:0")

    replay = ReplayVLM(path)
    assert len(replay) == 6 and asked[3] in replay
    replayed = [await replay.complete(r) for r in asked]
    assert [r.text for r in replayed] == [a.text for a in answers]
    assert replayed[0].model == "real-model" and replayed[0].usage == answers[0].usage
    assert replay.usage.calls == 6 and inner.usage.calls == 6 == recorder.usage.calls


async def test_unrecorded_request_says_which_and_how_to_record(tmp_path):
    path = tmp_path / "perception.jsonl"
    await RecordingVLM(FunctionVLM(echo), path).complete(request("known"))
    unknown = request("a question nobody recorded")
    with pytest.raises(PerceptionError) as err:
        await ReplayVLM(path).complete(unknown)
    message = str(err.value)
    assert request_key(unknown)[:12] in message
    assert "a question nobody recorded" in message
    assert "--record" in message and str(path) in message


async def test_rerecording_appends_and_the_last_answer_wins(tmp_path):
    path = tmp_path / "perception.jsonl"
    await RecordingVLM(FunctionVLM(lambda r: "first"), path).complete(request())
    await RecordingVLM(FunctionVLM(lambda r: "second"), path).complete(request())
    assert (await ReplayVLM(path).complete(request())).text == "second"


def test_replay_file_problems_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="--record"):
        ReplayVLM(tmp_path / "missing.jsonl")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"key": "k", "text": "ok"}\n\nnot json\n')
    with pytest.raises(ConfigError, match="broken.jsonl:3"):
        ReplayVLM(broken)


# --- the fake ------------------------------------------------------------------------------------


async def test_function_vlm_behaves_like_a_backend():
    async def slow(req: PerceptionRequest) -> str:
        await asyncio.sleep(0)
        return "one two three"

    vlm = FunctionVLM(slow)
    assert isinstance(vlm, VLM)
    response = await vlm.complete(request("four words of prompt", system="sys"))
    assert response.text == "one two three" and response.finish_reason == "stop"
    assert response.usage == Usage(prompt_tokens=5 + 85, completion_tokens=3)
    assert vlm.usage.calls == 1 and len(vlm.requests) == 1


async def test_function_vlm_passes_whole_responses_and_rejects_wrong_shapes():
    given = PerceptionResponse(text="x", usage=Usage(prompt_tokens=1), model="m")
    assert await FunctionVLM(lambda r: given).complete(request()) is given
    with pytest.raises(TypeError, match="str or PerceptionResponse"):
        await FunctionVLM(lambda r: {"text": "x"}).complete(request())  # type: ignore[arg-type,return-value]


async def test_complete_sync_inside_a_running_loop():
    # e.g. a notebook: the call runs on a fresh loop in a worker thread
    assert complete_sync(FunctionVLM(echo), request("q")).text == "saw 1 frames: q"


# --- the factory -------------------------------------------------------------------------------


def test_vlm_from_spec(tmp_path):
    vlm = vlm_from_spec("openai:qwen2.5-vl", base_url="http://localhost:8000/v1/", api_key_env="LOCAL_KEY",
                        concurrency=3)
    assert isinstance(vlm, OpenAIVLM)
    assert (vlm.model_name, vlm.url, vlm.api_key_env, vlm.concurrency) == (
        "qwen2.5-vl",
        "http://localhost:8000/v1/chat/completions",
        "LOCAL_KEY",
        3,
    )
    path = tmp_path / "rec.jsonl"
    path.write_text("")
    assert isinstance(vlm_from_spec(f"replay:{path}"), ReplayVLM)
    assert isinstance(vlm_from_spec("local:some/model"), perception.LocalVLM)  # nothing loaded yet


@pytest.mark.parametrize("spec", ["gpt-4o", "openai:", "anthropic:claude", "langchain:x"])
def test_vlm_from_spec_rejects_unknown_schemes_listing_the_valid_ones(spec):
    with pytest.raises(ConfigError, match="'openai:…', 'replay:…', 'local:…'"):
        vlm_from_spec(spec)
