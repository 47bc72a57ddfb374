"""Any LangChain chat model as a VLM (``ChatOpenAI``, ``ChatAnthropic``, ``ChatGoogleGenerativeAI``,
``ChatOllama``, …): frames become standard image content blocks, each after a text block
with its time; usage comes from the reply's ``usage_metadata``.

With a ``json_schema`` the model's own structured output is used where it has one
(``with_structured_output(..., include_raw=True)``); the parsed object comes back as JSON
text. Generation settings (``max_tokens``, ``temperature``) and retries are the chat
model's own (set them when constructing it; call-time names differ between providers), so
``request.max_tokens`` and ``request.temperature`` are not passed on. This adapter only
bounds concurrency and turns failures into ``PerceptionError``.
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import TYPE_CHECKING, Any

from memtools.errors import PerceptionError
from memtools.perception.base import (
    BaseVLM,
    PerceptionRequest,
    PerceptionResponse,
    PerLoop,
    Usage,
    frame_label,
    image_mime,
)

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage


class LangChainVLM(BaseVLM):
    """Wraps ``model``, a LangChain ``BaseChatModel`` that accepts images."""

    def __init__(self, model: BaseChatModel, *, concurrency: int = 4, structured_output: bool = True) -> None:
        super().__init__()
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, not {concurrency}")
        self.model = model
        self.structured_output = structured_output
        self.model_name = str(
            getattr(model, "model_name", None) or getattr(model, "model", None) or type(model).__name__
        )
        self._semaphore = PerLoop(lambda: asyncio.Semaphore(concurrency))

    def build_messages(self, request: PerceptionRequest) -> list[BaseMessage]:
        from langchain_core.messages import HumanMessage, SystemMessage

        content: list[dict[str, Any]] = []
        for t, data in request.frames:
            content.append({"type": "text", "text": frame_label(t)})
            content.append({"type": "image", "base64": base64.b64encode(data).decode(), "mime_type": image_mime(data)})
        content.append({"type": "text", "text": request.prompt})
        messages: list[BaseMessage] = []
        if request.system:
            messages.append(SystemMessage(content=request.system))
        messages.append(HumanMessage(content=content))  # type: ignore[arg-type]
        return messages

    async def _complete(self, request: PerceptionRequest) -> PerceptionResponse:
        messages = self.build_messages(request)
        async with self._semaphore.get():
            try:
                structured = self._structured(request)
                if structured is not None:
                    result = await structured.ainvoke(messages)
                    return self._from_structured(result)
                reply = await self.model.ainvoke(messages)
            except PerceptionError:
                raise
            except Exception as exc:  # the boundary to an arbitrary third-party model
                raise PerceptionError(f"LangChain model {self.model_name} failed: {type(exc).__name__}: {exc}") from exc
        return self._response(reply)

    def _structured(self, request: PerceptionRequest) -> Any:
        if request.json_schema is None or not self.structured_output:
            return None
        try:
            return self.model.with_structured_output(request.json_schema, include_raw=True)
        except NotImplementedError:  # the model has no structured output: the prompt must ask
            return None

    def _from_structured(self, result: dict[str, Any]) -> PerceptionResponse:
        reply: AIMessage = result["raw"]
        parsed = result.get("parsed")
        if parsed is None:  # could not be parsed: hand the raw text on for repair
            return self._response(reply)
        if hasattr(parsed, "model_dump"):
            parsed = parsed.model_dump(mode="json")
        return self._response(reply, text=json.dumps(parsed, ensure_ascii=False))

    def _response(self, reply: AIMessage, text: str | None = None) -> PerceptionResponse:
        usage = getattr(reply, "usage_metadata", None) or {}
        meta = getattr(reply, "response_metadata", None) or {}
        if text is None:
            text = reply.text if hasattr(reply, "text") else str(reply.content)
        return PerceptionResponse(
            text=text,
            usage=Usage(
                prompt_tokens=int(usage.get("input_tokens") or 0),
                completion_tokens=int(usage.get("output_tokens") or 0),
            ),
            model=str(meta.get("model_name") or meta.get("model") or self.model_name),
            finish_reason=meta.get("finish_reason") or meta.get("stop_reason"),
        )
