"""OpenAIRecognizer against a faked /audio/transcriptions server (respx at the httpx transport)."""

from __future__ import annotations

import httpx
import numpy as np
import pytest
import respx

from memtools.errors import SpeechError
from memtools.perception import RetryPolicy
from memtools.speech.openai import OpenAIRecognizer
from memtools.video.audio import SAMPLE_RATE, AudioChunk
from test_perception_openai import Sleeps

BASE = "http://asr.test/v1"
FAST = RetryPolicy(max_attempts=3, backoff_base=0.5, backoff_max=4.0, jitter=0.0)
CHUNK = AudioChunk(t_start=60.0, samples=np.zeros(3 * SAMPLE_RATE, np.float32))
VERBOSE = {"task": "transcribe", "language": "english", "duration": 3.0, "text": "Hello there. The boxes fall.",
           "segments": [{"id": 0, "start": 0.2, "end": 1.4, "text": " Hello there."},
                        {"id": 1, "start": 1.5, "end": 2.9, "text": " The boxes fall.", "speaker": "SPEAKER_1",
                         "words": [{"word": " The", "start": 1.5, "end": 1.7}, {"word": " boxes", "start": 1.7,
                                                                                "end": 2.2}]}]}


@pytest.fixture
def router() -> respx.Router:
    return respx.Router(base_url=BASE, assert_all_called=False)


def make(router: respx.Router, sleeps: Sleeps | None = None) -> OpenAIRecognizer:
    return OpenAIRecognizer("whisper-1", base_url=BASE, api_key="sk-test", retry=FAST,
                            transport=httpx.MockTransport(router.handler), sleep=sleeps or Sleeps())


def test_verbose_json_segments_become_utterances_on_the_video_clock(router):
    route = router.post("/audio/transcriptions").mock(return_value=httpx.Response(200, json=VERBOSE))
    found = make(router).recognize(CHUNK)
    assert [(u.t_start, u.t_end, u.text, u.speaker) for u in found] == [
        (60.2, 61.4, "Hello there.", None), (61.5, 62.9, "The boxes fall.", "SPEAKER_1")]
    assert [(w.text, w.t_start) for w in found[1].words] == [("The", 61.5), ("boxes", 61.7)]
    request = route.calls.last.request
    body = request.content
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["content-type"].startswith("multipart/form-data")
    assert b'name="response_format"\r\n\r\nverbose_json' in body and b'name="model"\r\n\r\nwhisper-1' in body
    assert b"RIFF" in body and b"WAVE" in body  # the chunk went as a WAV file


def test_a_timeout_then_a_429_with_retry_after_are_retried(router):
    sleeps = Sleeps()
    router.post("/audio/transcriptions").mock(side_effect=[
        httpx.ReadTimeout("slow"),
        httpx.Response(429, json={"error": {"message": "rate limited"}}, headers={"Retry-After": "7"}),
        httpx.Response(200, json=VERBOSE),
    ])
    found = make(router, sleeps).recognize(CHUNK)
    assert len(found) == 2
    assert sleeps.waits == [0.5, 7.0]  # backoff after the timeout, then what the server asked for


def test_malformed_json_is_a_speech_error_that_says_what_came_back(router):
    router.post("/audio/transcriptions").mock(return_value=httpx.Response(200, text="<html>oops</html>"))
    with pytest.raises(SpeechError, match=r"not JSON: '<html>oops</html>'.*verbose_json"):
        make(router).recognize(CHUNK)
    router.post("/audio/transcriptions").mock(return_value=httpx.Response(200, json={"segments": [{"start": 1}]}))
    with pytest.raises(SpeechError, match="segment 0 is not a transcription segment"):
        make(router).recognize(CHUNK)
    router.post("/audio/transcriptions").mock(return_value=httpx.Response(200, json={"result": 1}))
    with pytest.raises(SpeechError, match="without 'segments' or 'text'"):
        make(router).recognize(CHUNK)


def test_a_plain_text_answer_is_one_utterance_over_the_chunk(router):
    router.post("/audio/transcriptions").mock(return_value=httpx.Response(200, json={"text": "Just text."}))
    found = make(router).recognize(CHUNK)
    assert [(u.t_start, u.t_end, u.text) for u in found] == [(60.0, 63.0, "Just text.")]


def test_persistent_5xx_gives_up_after_the_attempts_and_4xx_at_once(router):
    sleeps = Sleeps()
    route = router.post("/audio/transcriptions").mock(return_value=httpx.Response(503, text="overloaded"))
    with pytest.raises(SpeechError, match="failed 3 times; last: HTTP 503: overloaded"):
        make(router, sleeps).recognize(CHUNK)
    assert route.call_count == 3 and len(sleeps.waits) == 2
    route.mock(return_value=httpx.Response(401, json={"error": {"message": "bad key"}}))
    with pytest.raises(SpeechError, match=r"refused the request \(HTTP 401\): bad key; check the API key"):
        make(router).recognize(CHUNK)
    assert route.call_count == 4  # one more: a 401 is not retried


def test_silence_is_not_sent():
    recognizer = OpenAIRecognizer("whisper-1", base_url=BASE, transport=httpx.MockTransport(lambda r: 1 / 0))
    assert recognizer.recognize(AudioChunk(t_start=0.0, samples=np.zeros(0, np.float32))) == []
