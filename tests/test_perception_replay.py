"""Recording and replaying perception; the request key; the fakes and the factory."""

from __future__ import annotations

import asyncio
import json
import sys

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
from memtools.perception.replay import ReplayMiss, speech_wer

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


SPEECH = "- [00:01:40-00:01:46] The red ball hits the stack of boxes, and the boxes fall over."
HEARD = "- [00:01:40-00:01:47] The red ball hits the stack on boxes, and the boxes fall over."


def spoken(speech: str = SPEECH, *, before: str = "Describe the clip.", **kw) -> PerceptionRequest:
    """A request that quotes recognised speech, as the build's prompts do."""
    return request(f"{before}\n[SPEECH]\n{speech}\nAnswer in JSON.", speech=speech, **kw)


def test_recognised_speech_is_no_part_of_the_key():
    """A recogniser's words and times vary with the CPU's numerics: the key stands a placeholder in for them."""
    key = request_key(spoken())
    assert request_key(spoken(HEARD)) == key
    assert request_key(spoken(before="Describe the other clip.")) != key  # the rest of the prompt still counts
    assert request_key(spoken(t=2.0)) != key
    # the whole prompt's key (recordings made before) differs, and equals the plain key without speech
    assert request_key(spoken(), with_speech=True) != key
    plain = request(f"Describe the clip.\n[SPEECH]\n{SPEECH}\nAnswer in JSON.")
    assert request_key(spoken(), with_speech=True) == request_key(plain)
    with pytest.raises(ValueError, match="verbatim"):
        request("Describe the clip.", speech=SPEECH)


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
    assert set(record) == {"key", "model", "text", "usage", "finish_reason", "preview", "frames"}  # no speech here
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


async def test_a_replay_miss_tells_what_helps_and_what_does_not(tmp_path):
    path = tmp_path / "perception.jsonl"
    await RecordingVLM(FunctionVLM(echo), path).complete(request("the prompt of an older version"))
    with pytest.raises(ReplayMiss) as err:
        await ReplayVLM(path).complete(request("the prompt of this version", system="You segment videos."))
    message = str(err.value)
    assert "these very frames for another prompt" in message and "'You segment videos.'" in message
    assert "--fresh" in message and "--vlm" in message and "report" in message and "lscpu" in message
    with pytest.raises(ReplayMiss, match="No recorded request shows these frames"):
        await ReplayVLM(path).complete(request("the prompt of an older version", t=7.0))


async def test_speech_that_differs_a_little_replays_and_other_speech_is_refused(tmp_path):
    path = tmp_path / "perception.jsonl"
    await RecordingVLM(FunctionVLM(lambda r: "answer"), path).complete(spoken())
    assert json.loads(path.read_text())["speech"] == SPEECH
    replay = ReplayVLM(path)
    assert (await replay.complete(spoken())).text == "answer" and replay.speech_differences == []
    assert (await replay.complete(spoken(HEARD))).text == "answer"  # another CPU's numerics
    (difference,) = replay.speech_differences
    assert difference.recorded == SPEECH and difference.requested == HEARD and 0 < difference.wer < 0.2
    other = "- [00:01:40-00:01:46] Welcome back to the show, today we are cooking pasta with tomatoes."
    with pytest.raises(ReplayMiss) as err:
        await replay.complete(spoken(other))
    assert "for other speech" in str(err.value) and "cooking pasta" in str(err.value)
    assert "boxes fall over" in str(err.value)
    # a short sentence may lose half its words to numerics and still replay
    await RecordingVLM(FunctionVLM(lambda r: "short"), path).complete(spoken("- [0-2] A yellow car drives."))
    assert (await ReplayVLM(path).complete(spoken("- [0-2] A yellow card rhymes."))).text == "short"


async def test_recordings_keyed_over_the_whole_prompt_still_replay(tmp_path):
    """Recordings made before the speech left the key hold keys of the whole prompt."""
    path = tmp_path / "perception.jsonl"
    old = spoken()
    path.write_text(json.dumps({"key": request_key(old, with_speech=True), "text": "old answer"}) + "\n")
    replay = ReplayVLM(path)
    assert old in replay and (await replay.complete(old)).text == "old answer"
    assert spoken(HEARD) not in replay  # such a key is only found for the very same speech


def test_speech_wer_ignores_times_case_and_punctuation():
    assert speech_wer("- [00:00:01-00:00:04] The ball, rolls.", "- u1 [1-5] the ball rolls") == (1 / 3, 1, 3)
    assert speech_wer("[1-2] a b c d", "[1-2] a b c d") == (0.0, 0, 4)
    assert speech_wer("", "words") == (1.0, 1, 0)


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


async def test_without_jiwer_differing_speech_asks_for_it_and_equal_speech_needs_nothing(tmp_path, monkeypatch):
    path = tmp_path / "perception.jsonl"
    await RecordingVLM(FunctionVLM(lambda r: "answer"), path).complete(spoken())
    monkeypatch.setitem(sys.modules, "jiwer", None)  # not installed
    replay = ReplayVLM(path)
    assert (await replay.complete(spoken())).text == "answer"
    with pytest.raises(ConfigError, match="pip install jiwer"):
        await replay.complete(spoken(HEARD))
