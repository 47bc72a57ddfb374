"""Fake chat models for tests and offline examples of the ORA loop.

They behave like real chat models where the loop can tell: ``bind_tools`` returns a bound
runnable (the tools reach ``_generate`` as a keyword argument, as with a real client), a
scripted tool call with no tools bound is an error, a script that runs out fails loudly
instead of cycling, and every prompt is recorded so tests can assert over what the model saw.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field, PrivateAttr

_ids = itertools.count(1)


def tool_call(name: str, usage: tuple[int, int] = (0, 0), **args: Any) -> AIMessage:
    """An AIMessage that calls one tool, as a tool-calling model returns it."""
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call_{next(_ids)}"}],
                     usage_metadata=_usage(usage))


def text_reply(content: str | dict[str, Any], usage: tuple[int, int] = (0, 0)) -> AIMessage:
    """A plain text reply; a dict is sent as its JSON text (the JSON protocol)."""
    text = content if isinstance(content, str) else json.dumps(content)
    return AIMessage(content=text, usage_metadata=_usage(usage))


def _usage(usage: tuple[int, int]) -> dict[str, int]:
    return {"input_tokens": usage[0], "output_tokens": usage[1], "total_tokens": usage[0] + usage[1]}


def prompt_text(messages: Sequence[BaseMessage]) -> str:
    """Every text a model was sent in one call, joined (content blocks included)."""
    parts = []
    for m in messages:
        content = m.content
        if isinstance(content, str):
            parts.append(content)
        else:
            parts += [b.get("text", "") if isinstance(b, dict) else str(b) for b in content]
    return "\n".join(parts)


class _Recording:
    """Shared by the fakes: the prompts and call options seen, guarded for threads."""

    if TYPE_CHECKING:  # the fakes below define these (pydantic fields and a private lock)
        supports_tools: bool
        prompts: list[list[BaseMessage]]
        call_kwargs: list[dict[str, Any]]
        _lock: threading.Lock

        def bind(self, **kwargs: Any) -> Any: ...

    def _record(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> None:
        with self._lock:
            self.prompts.append(list(messages))
            self.call_kwargs.append(dict(kwargs))

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any):
        if not self.supports_tools:
            return BaseChatModel.bind_tools(cast(BaseChatModel, self), tools, **kwargs)  # raises NotImplementedError
        schemas = [convert_to_openai_tool(t) for t in tools]
        return self.bind(tools=schemas, tool_choice=tool_choice, **kwargs)

    @staticmethod
    def _check(message: BaseMessage, kwargs: dict[str, Any]) -> BaseMessage:
        calls = getattr(message, "tool_calls", None) or []
        if calls and not kwargs.get("tools"):
            names = [c["name"] for c in calls]
            raise AssertionError(f"a reply calls {names} but no tools were bound to this call")
        return message


class ScriptedChatModel(_Recording, FakeMessagesListChatModel):
    """Replays ``responses`` in order, once; records every prompt in ``prompts``.

    ``supports_tools=False`` makes it a model without native tool calling (``bind_tools``
    raises ``NotImplementedError``), which sends the ORA loop down the JSON protocol.
    """

    supports_tools: bool = True
    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    call_kwargs: list[dict[str, Any]] = Field(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        self._record(messages, kwargs)
        with self._lock:
            if self.i >= len(self.responses):
                raise AssertionError(f"the script has {len(self.responses)} replies and call {self.i + 1} was made")
            message = self.responses[self.i]
            self.i += 1
        return ChatResult(generations=[ChatGeneration(message=self._check(message, kwargs))])

    @property
    def _llm_type(self) -> str:
        return "memtools-scripted"


class FunctionChatModel(_Recording, BaseChatModel):
    """Replies with ``func(messages, tools)``: an AIMessage, or a str / dict sent as text.

    ``tools`` is the list of OpenAI-format schemas bound to the call (empty when none), so a
    function can play a tool-calling model or a JSON-protocol one. Safe to call from threads.
    """

    func: Callable[[list[BaseMessage], list[dict[str, Any]]], Any]
    supports_tools: bool = True
    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    call_kwargs: list[dict[str, Any]] = Field(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        self._record(messages, kwargs)
        reply = self.func(list(messages), list(kwargs.get("tools") or []))
        message = reply if isinstance(reply, BaseMessage) else text_reply(reply)
        return ChatResult(generations=[ChatGeneration(message=self._check(message, kwargs))])

    @property
    def _llm_type(self) -> str:
        return "memtools-function"
