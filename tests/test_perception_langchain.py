"""LangChainVLM with a chat model written here and with ChatOpenAI over a faked transport."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest
import respx
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from memtools.errors import PerceptionError
from memtools.perception import VLM, PerceptionRequest
from memtools.perception.langchain import LangChainVLM

JPEG = b"\xff\xd8\xff\xe0fake-jpeg"
REQUEST = PerceptionRequest(prompt="Who enters?", frames=[(5.0, JPEG), (65.0, JPEG)], system="Be exact.")


class RecordingChat(BaseChatModel):
    """A real BaseChatModel that remembers what it was sent and answers with usage metadata."""

    answer: str = "a woman enters"
    fail: bool = False
    seen: list[list[BaseMessage]] = []

    @property
    def _llm_type(self) -> str:
        return "recording"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.fail:
            raise RuntimeError("provider is down")
        self.seen.append(messages)
        reply = AIMessage(
            content=self.answer,
            usage_metadata={"input_tokens": 120, "output_tokens": 4, "total_tokens": 124},
            response_metadata={"model_name": "recording-1", "finish_reason": "stop"},
        )
        return ChatResult(generations=[ChatGeneration(message=reply)])


async def test_messages_carry_labelled_image_blocks_and_usage_is_read():
    chat = RecordingChat(seen=[])
    vlm = LangChainVLM(chat)
    assert isinstance(vlm, VLM)
    response = await vlm.complete(REQUEST)

    assert (response.text, response.model, response.finish_reason) == ("a woman enters", "recording-1", "stop")
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (120, 4)
    assert vlm.usage.calls == 1
    system, human = chat.seen[0]
    assert isinstance(system, SystemMessage) and system.content == "Be exact."
    assert isinstance(human, HumanMessage)
    blocks = human.content
    assert [b["type"] for b in blocks] == ["text", "image", "text", "image", "text"]
    assert blocks[0]["text"] == "frame at 0:00:05 (5.0 s)" and blocks[2]["text"] == "frame at 0:01:05 (65.0 s)"
    assert blocks[1]["mime_type"] == "image/jpeg" and base64.b64decode(blocks[1]["base64"]) == JPEG
    assert blocks[-1]["text"] == "Who enters?"


async def test_model_failure_becomes_perception_error():
    with pytest.raises(PerceptionError, match="provider is down") as err:
        await LangChainVLM(RecordingChat(fail=True, seen=[])).complete(REQUEST)
    assert isinstance(err.value.__cause__, RuntimeError)


async def test_schema_without_structured_output_support_falls_back_to_plain_text():
    chat = RecordingChat(answer='{"ok": true}', seen=[])
    response = await LangChainVLM(chat).complete(REQUEST.model_copy(update={"json_schema": {"type": "object"}}))
    assert json.loads(response.text) == {"ok": True}


# --- a real provider integration: ChatOpenAI turns the blocks into image_url parts ---------------


def chat_openai(router: respx.Router):
    langchain_openai = pytest.importorskip("langchain_openai")
    client = httpx.AsyncClient(transport=httpx.MockTransport(router.async_handler))
    return langchain_openai.ChatOpenAI(
        model="gpt-4o-mini", api_key="sk-test", base_url="http://llm.test/v1", http_async_client=client, max_retries=0
    )


def openai_answer(content: str) -> httpx.Response:
    return httpx.Response(
        200,
        json={
            "id": "c1",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-4o-mini-2024",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55},
        },
    )


async def test_chat_openai_receives_data_url_images():
    router = respx.Router(base_url="http://llm.test/v1")
    route = router.post("/chat/completions").mock(return_value=openai_answer("two people"))
    response = await LangChainVLM(chat_openai(router)).complete(REQUEST)

    assert response.text == "two people" and response.usage.prompt_tokens == 50
    user = json.loads(route.calls.last.request.content)["messages"][1]
    kinds = [p["type"] for p in user["content"]]
    assert kinds == ["text", "image_url", "text", "image_url", "text"]
    url = user["content"][1]["image_url"]["url"]
    assert url.startswith("data:image/jpeg;base64,") and base64.b64decode(url.split(",", 1)[1]) == JPEG


async def test_chat_openai_structured_output_returns_json_text():
    router = respx.Router(base_url="http://llm.test/v1")
    route = router.post("/chat/completions").mock(return_value=openai_answer('{"count": 2}'))
    schema = {
        "title": "Count",
        "type": "object",
        "properties": {"count": {"type": "integer"}},
        "required": ["count"],
        "additionalProperties": False,
    }
    response = await LangChainVLM(chat_openai(router)).complete(REQUEST.model_copy(update={"json_schema": schema}))
    assert json.loads(response.text) == {"count": 2}
    assert response.usage.completion_tokens == 5
    assert "response_format" in json.loads(route.calls.last.request.content)
