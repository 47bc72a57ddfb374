"""OpenAIVLM against a faked server: respx routes (or a handler) at the httpx transport."""

from __future__ import annotations

import asyncio
import base64
import json
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import httpx
import pytest
import respx

from memtools.errors import PerceptionError
from memtools.perception import OpenAIVLM, PerceptionRequest, RetryPolicy, block_model_requests
from memtools.perception.openai import parse_retry_after

BASE = "http://vlm.test/v1"
JPEG_A = b"\xff\xd8\xff\xe0fake-jpeg-a"
JPEG_B = b"\xff\xd8\xff\xe0fake-jpeg-b"
FAST = RetryPolicy(max_attempts=3, backoff_base=0.5, backoff_max=4.0, jitter=0.5)


def completion(text: str = "a person opens a door", prompt_tokens: int = 100,
               completion_tokens: int = 7) -> httpx.Response:
    return httpx.Response(
        200,
        json={
            "id": "chatcmpl-1",
            "model": "served-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
        },
    )


def error(status: int, message: str, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, json={"error": {"message": message, "type": "x"}}, headers=headers)


class Sleeps:
    """Records the waits instead of waiting."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def router() -> respx.Router:
    return respx.Router(base_url=BASE, assert_all_called=False)


def make_vlm(router: respx.Router, sleeps: Sleeps | None = None, **kwargs) -> OpenAIVLM:
    kwargs.setdefault("retry", FAST)
    return OpenAIVLM(
        "test-model",
        base_url=BASE,
        transport=httpx.MockTransport(router.async_handler),
        sleep=sleeps or Sleeps(),
        **kwargs,
    )


REQUEST = PerceptionRequest(
    prompt="What happens?", frames=[(83.0, JPEG_A), (3725.5, JPEG_B)], system="You watch videos.", max_tokens=256
)


async def test_success_sends_labelled_images_and_parses_the_answer(router, monkeypatch):
    monkeypatch.setenv("VLM_KEY", "sk-test")
    route = router.post("/chat/completions").mock(return_value=completion())
    vlm = make_vlm(router, api_key_env="VLM_KEY", image_detail="low")

    response = await vlm.complete(REQUEST)

    assert (response.text, response.model, response.finish_reason) == ("a person opens a door", "served-model", "stop")
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (100, 7)
    sent = route.calls.last.request
    assert sent.headers["Authorization"] == "Bearer sk-test"
    body = json.loads(sent.content)
    assert body["model"] == "test-model" and body["max_tokens"] == 256
    assert "response_format" not in body and "temperature" not in body
    system, user = body["messages"]
    assert system == {"role": "system", "content": "You watch videos."}
    parts = user["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "text", "image_url", "text"]
    assert parts[0]["text"] == "frame at 0:01:23 (83.0 s)"
    assert parts[2]["text"] == "frame at 1:02:05 (3725.5 s)"
    url = parts[1]["image_url"]["url"]
    assert url.startswith("data:image/jpeg;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == JPEG_A
    assert parts[1]["image_url"]["detail"] == "low"
    assert parts[-1] == {"type": "text", "text": "What happens?"}


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"json_mode": True}, {"type": "json_object"}),
        (
            {"json_schema": {"title": "Macro events", "type": "object"}},
            {"type": "json_schema",
             "json_schema": {"name": "Macro_events", "schema": {"title": "Macro events", "type": "object"}}},
        ),
    ],
)
async def test_json_response_format(router, options, expected):
    route = router.post("/chat/completions").mock(return_value=completion("{}"))
    vlm = make_vlm(router, max_tokens_field="max_completion_tokens")
    await vlm.complete(PerceptionRequest(prompt="json please", temperature=0.0, **options))
    body = json.loads(route.calls.last.request.content)
    assert body["response_format"] == expected
    assert body["temperature"] == 0.0 and body["max_completion_tokens"] == 2048


async def test_no_api_key_sends_no_authorization(router, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    route = router.post("/chat/completions").mock(return_value=completion())
    await make_vlm(router).complete(REQUEST)
    assert "Authorization" not in route.calls.last.request.headers


async def test_429_waits_what_retry_after_says_then_succeeds(router):
    route = router.post("/chat/completions").mock(
        side_effect=[error(429, "slow down", {"Retry-After": "2"}), completion()]
    )
    sleeps = Sleeps()
    response = await make_vlm(router, sleeps).complete(REQUEST)
    assert response.text == "a person opens a door"
    assert route.call_count == 2 and sleeps.waits == [2.0]


async def test_retry_after_as_http_date(router):
    when = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=30), usegmt=True)
    router.post("/chat/completions").mock(side_effect=[error(503, "busy", {"Retry-After": when}), completion()])
    sleeps = Sleeps()
    await make_vlm(router, sleeps).complete(REQUEST)
    assert len(sleeps.waits) == 1 and 25 <= sleeps.waits[0] <= 30


async def test_retry_after_longer_than_allowed_fails_at_once(router):
    route = router.post("/chat/completions").mock(return_value=error(429, "quota", {"Retry-After": "3600"}))
    with pytest.raises(PerceptionError, match="asks to wait 3600s"):
        await make_vlm(router).complete(REQUEST)
    assert route.call_count == 1


async def test_timeout_then_success_backs_off_with_jitter(router):
    route = router.post("/chat/completions").mock(side_effect=[httpx.ReadTimeout("slow"), completion()])
    sleeps = Sleeps()
    await make_vlm(router, sleeps).complete(REQUEST)
    assert route.call_count == 2
    assert len(sleeps.waits) == 1 and 0.25 <= sleeps.waits[0] <= 0.5  # backoff_base, less up to 50 % jitter


async def test_repeated_500_gives_up_after_max_attempts(router):
    route = router.post("/chat/completions").mock(return_value=error(500, "model crashed"))
    sleeps = Sleeps()
    with pytest.raises(PerceptionError) as err:
        await make_vlm(router, sleeps).complete(REQUEST)
    assert route.call_count == 3 and len(sleeps.waits) == 2
    assert sleeps.waits[1] > sleeps.waits[0] * 0.9  # exponential: 0.25-0.5, then 0.5-1.0
    assert "failed 3 times" in str(err.value) and "model crashed" in str(err.value)


async def test_connection_errors_are_retried_and_chained(router):
    router.post("/chat/completions").mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(PerceptionError, match="connection failed") as err:
        await make_vlm(router).complete(REQUEST)
    assert isinstance(err.value.__cause__, httpx.ConnectError)


async def test_non_retryable_400_fails_at_once_with_the_server_message(router):
    route = router.post("/chat/completions").mock(return_value=error(400, "too many images in one request"))
    sleeps = Sleeps()
    with pytest.raises(PerceptionError, match="HTTP 400.*too many images in one request"):
        await make_vlm(router, sleeps).complete(REQUEST)
    assert route.call_count == 1 and sleeps.waits == []


async def test_401_names_the_key_variable(router):
    router.post("/chat/completions").mock(return_value=error(401, "invalid api key"))
    with pytest.raises(PerceptionError, match=r"\$MY_KEY"):
        await make_vlm(router, api_key_env="MY_KEY").complete(REQUEST)


async def test_not_a_completion_is_a_perception_error(router):
    router.post("/chat/completions").mock(return_value=httpx.Response(200, text="<html>proxy login</html>"))
    with pytest.raises(PerceptionError, match="not a chat completion"):
        await make_vlm(router).complete(REQUEST)


async def test_content_parts_and_missing_usage(router):
    answer = {"choices": [{"message": {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}}]}
    router.post("/chat/completions").mock(return_value=httpx.Response(200, json=answer))
    response = await make_vlm(router).complete(REQUEST)
    assert response.text == "ab" and response.model == "test-model"
    # no usage from the server: estimated from the prompt, its frames and the answer, and said so
    assert response.usage.estimated and response.usage.prompt_tokens > 0 and response.usage.completion_tokens == 1


async def test_usage_accumulates_over_concurrent_calls(router):
    router.post("/chat/completions").mock(return_value=completion(prompt_tokens=10, completion_tokens=3))
    vlm = make_vlm(router)
    await asyncio.gather(*(vlm.complete(REQUEST) for _ in range(5)))
    totals = vlm.usage.totals()
    assert (totals.calls, totals.prompt_tokens, totals.completion_tokens, totals.total_tokens) == (5, 50, 15, 65)


async def test_concurrency_limit_bounds_requests_in_flight():
    in_flight = peak = 0

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        return completion()

    vlm = OpenAIVLM("m", base_url=BASE, concurrency=2, transport=httpx.MockTransport(handler))
    await asyncio.gather(*(vlm.complete(REQUEST) for _ in range(8)))
    assert peak == 2 and vlm.usage.calls == 8
    await vlm.aclose()


def test_sync_wrapper_runs_without_a_loop(router):
    router.post("/chat/completions").mock(return_value=completion("sync works"))
    vlm = make_vlm(router)
    assert vlm.complete_sync(REQUEST).text == "sync works"
    assert vlm.complete_sync(REQUEST).text == "sync works"  # a second loop gets its own client


async def test_injected_client_is_used_and_left_open(router):
    router.post("/chat/completions").mock(return_value=completion())
    async with httpx.AsyncClient(transport=httpx.MockTransport(router.async_handler)) as client:
        async with OpenAIVLM("m", base_url=BASE, client=client) as vlm:
            await vlm.complete(REQUEST)
        assert not client.is_closed


async def test_guard_blocks_real_requests(monkeypatch):
    vlm = OpenAIVLM("gpt-4o", base_url="http://127.0.0.1:9/v1", retry=FAST, sleep=Sleeps())
    with block_model_requests(), pytest.raises(PerceptionError, match="blocked"):
        await vlm.complete(REQUEST)
    monkeypatch.setenv("MEMTOOLS_ALLOW_MODEL_REQUESTS", "0")
    with pytest.raises(PerceptionError, match="blocked"):
        await vlm.complete(REQUEST)


# --- policy pieces ------------------------------------------------------------------------------


def test_backoff_doubles_and_is_capped():
    policy = RetryPolicy(backoff_base=1.0, backoff_max=5.0, jitter=0.0)
    assert [policy.backoff(n, 0.3) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 5.0]
    assert RetryPolicy(jitter=0.5).backoff(1, 0.999) == pytest.approx(0.5, abs=1e-3)


def test_parse_retry_after():
    assert parse_retry_after(httpx.Headers({"Retry-After": "7"})) == 7.0
    assert parse_retry_after(httpx.Headers({"retry-after-ms": "1500", "Retry-After": "9"})) == 1.5
    date = httpx.Headers({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})
    assert parse_retry_after(date, now=lambda: 1445412470.0) == 10.0
    assert parse_retry_after(httpx.Headers({"Retry-After": "soon"})) is None
    assert parse_retry_after(httpx.Headers({})) is None
