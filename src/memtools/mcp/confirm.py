"""The user agrees before a destructive write tool runs over MCP (``ToolSpec.confirm``: forget_video, merge_entities,
split_entity, undo_change, forget_person).

A call with ``confirm: true`` runs: the model asked the user itself. Otherwise the server asks the user through
the client, where the client can answer, with the spec's question (e.g. "Forget video kitchen ('Cooking', 3
macro events, 12 keyframes)? ... undo_change can bring it back."):

- at protocol 2026-07-28 (mcp 2.x), with an input-required result (a multi round-trip request): the client asks
  its user and calls again with the answer in ``inputResponses``. The ``requestState`` of that result (sealed by
  the SDK, bound to the tool and its arguments) holds a digest of the question, so an answer counts only for the
  question asked: if the memory changed in between, the question changes and is asked again;
- at 2025-11-25 and before, with an ``elicitation/create`` request during the call, where the client declared the
  ``elicitation`` capability and the transport has a way back (stdio; the stateless HTTP endpoint has none).

"Yes" runs the call. "No", decline and cancel answer an ``is_error`` result of kind ``declined`` saying that nothing
was changed: an error, because there is no result of the tool's output schema to give, and so that no model reads
it as done. A client that cannot answer gets an ``is_error`` result of kind ``needs-confirmation`` that quotes the
question and says to call again with ``confirm: true`` once the user agreed. Arguments are checked before anything
is asked, and a wrong id is refused by the question itself: the user is only asked about a call that can run.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
from mcp.types import CallToolResult, TextContent

from memtools.errors import IncompatibleMemory, MemoryBusy, MemoryNotFound, MemtoolsError, ToolError
from memtools.mcp.adapter import ERROR_KIND_META
from memtools.tools import ToolSpec
from memtools.tools import messages as msg
from memtools.tools.invoke import ERROR_PREFIX
from memtools.tools.provider import ToolsProvider, held

log = logging.getLogger(__name__)

ARGUMENT = "confirm"
ANSWER_KEY = "memtools/confirm"
"""The key of the question in an input-required result's ``inputRequests`` (and of its answer)."""
FIRST_ROUND_TRIP_VERSION = "2026-07-28"
"""The first protocol revision that asks through input-required results instead of requests during a call."""

CONFIRM_PROPERTY = {
    "type": "boolean", "default": False,
    "description": "true only when the user has agreed to exactly this change (ask them first, naming what it "
                   "does). Without it the server asks the user itself where the client can, or says what to ask."}
"""The ``confirm`` argument of every tool with ``ToolSpec.confirm``, in its published input schema."""
ANSWER_SCHEMA = {
    "type": "object", "required": [ARGUMENT],
    "properties": {ARGUMENT: {"type": "boolean", "title": "Yes, do it",
                              "description": "Tick to make this change; leave it unticked to change nothing."}}}
"""The form the user answers: one yes/no box (an ``elicitation`` requested schema)."""

NEEDS_CONFIRMATION = ("this changes the memory in a way the user must agree to first. Ask the user: \"{question}\" "
                      "If they agree, call {tool} again with the same arguments and confirm: true; if not, leave it. "
                      "Nothing was changed.")
DECLINED = "the user did not agree ({how}), so nothing was changed. Do not call it again unless the user asks."


@dataclass(frozen=True)
class Gate:
    """What to do with a call: run it with ``arguments`` (``confirm`` taken out), or answer ``result`` now."""

    arguments: dict[str, Any] | None = None
    result: Any = None


def published_schema(spec: ToolSpec, schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` (a tool's input schema) with the ``confirm`` argument when the tool asks first."""
    if spec.confirm is None:
        return schema
    return {**schema, "properties": {**schema.get("properties", {}), ARGUMENT: CONFIRM_PROPERTY}}


def error(spec: ToolSpec, kind: str, message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=ERROR_PREFIX.format(tool=spec.name) + message)],
                          isError=True, _meta={ERROR_KIND_META: kind})


async def gate(spec: ToolSpec, tools: ToolsProvider, arguments: Any, context: Any) -> Gate:
    """Whether the call of ``spec`` (which asks first) runs now, given its raw ``arguments`` and the request's
    ``Context`` (``MemtoolsServer.request_context``; ``None`` outside a request: then the client cannot answer)."""
    rest = dict(arguments) if isinstance(arguments, dict) else arguments
    given = rest.pop(ARGUMENT, None) if isinstance(rest, dict) else None
    if given is not None and not isinstance(given, bool):
        shown = json.dumps(given)[:40] if isinstance(given, str | int | float) else type(given).__name__
        return Gate(result=error(spec, "bad-arguments", f"confirm: expected true or false, got {shown}; send "
                                                        "confirm: true only after the user agreed"))
    try:
        args = spec.parse(rest)
    except ToolError as exc:  # the tool's own words for a wrong argument, before anyone is asked
        return Gate(result=error(spec, exc.kind, str(exc)))
    if given:
        return Gate(arguments=rest)
    try:
        question = await anyio.to_thread.run_sync(_question, spec, tools, args)
    except ToolError as exc:
        return Gate(result=error(spec, exc.kind, str(exc)))
    except MemoryBusy:
        return Gate(result=error(spec, "busy", msg.BUSY))
    except (MemoryNotFound, IncompatibleMemory) as exc:
        return Gate(result=error(spec, "unavailable", msg.MEMORY_UNAVAILABLE.format(reason=exc)))
    except MemtoolsError as exc:
        log.warning("asking before %s failed: %s", spec.name, exc, exc_info=True)
        return Gate(result=error(spec, "unavailable", msg.MEMORY_FAILED.format(reason=exc)))
    way = way_to_ask(context)
    if way == "round-trip":
        return _round_trip(spec, rest, question, context)
    if way == "request":
        return await _request(spec, rest, question, context)
    return Gate(result=error(spec, "needs-confirmation", NEEDS_CONFIRMATION.format(question=question, tool=spec.name)))


def _question(spec: ToolSpec, tools: ToolsProvider, args: Any) -> str:
    assert spec.confirm is not None
    with held(tools) as current:
        return spec.confirm(current, args)


def way_to_ask(context: Any) -> str | None:
    """``"round-trip"`` (an input-required result), ``"request"`` (``elicitation/create`` during the call) or
    ``None``: how the client of this request can put a question to its user, if it can."""
    if context is None:
        return None
    try:
        session = context.session
    except Exception:  # no request being handled
        return None
    caps = getattr(session, "client_capabilities", None)  # mcp 2.x (also declared per request at 2026-07-28)
    if caps is None:  # mcp 1.x: what the client declared at initialize (never, on the stateless HTTP endpoint)
        params = getattr(session, "client_params", None)
        caps = params.capabilities if params is not None else None
    elicitation = getattr(caps, "elicitation", None)
    if elicitation is None or (getattr(elicitation, "form", None) is None
                               and getattr(elicitation, "url", None) is not None):  # url-only: no forms
        return None
    version = getattr(context, "protocol_version", None)  # mcp 2.x only; mcp 1.x speaks up to 2025-11-25
    if isinstance(version, str) and version >= FIRST_ROUND_TRIP_VERSION:
        return "round-trip"
    return "request" if getattr(session, "can_send_request", True) else None


def _digest(spec: ToolSpec, rest: dict[str, Any], question: str) -> str:
    text = json.dumps([spec.name, rest, question], sort_keys=True, ensure_ascii=True, default=str)
    return "q1:" + hashlib.sha256(text.encode()).hexdigest()[:32]


def _answered(spec: ToolSpec, rest: dict[str, Any], action: str, content: Any) -> Gate:
    if action == "accept" and isinstance(content, dict) and content.get(ARGUMENT) is True:
        return Gate(arguments=rest)
    how = {"accept": "the box was left unticked", "decline": "declined"}.get(action, "the question was cancelled")
    log.info("%s not confirmed: %s", spec.name, how)
    return Gate(result=error(spec, "declined", DECLINED.format(how=how)))


def _round_trip(spec: ToolSpec, rest: dict[str, Any], question: str, context: Any) -> Gate:
    """2026-07-28: the answer when this call carries the answer to this very question, else the question."""
    wire: Any = importlib.import_module("mcp.types")  # InputRequiredResult is in mcp 2.x only

    asked = _digest(spec, rest, question)
    answer = (context.input_responses or {}).get(ANSWER_KEY)
    if answer is not None and context.request_state == asked:
        if not isinstance(answer, wire.ElicitResult):
            return Gate(result=error(spec, "bad-arguments", f"inputResponses[{ANSWER_KEY!r}] is not the answer to "
                                                            "a question (an elicitation result)"))
        return _answered(spec, rest, answer.action, answer.content)
    if answer is not None:
        log.info("%s: an answer to another question (or the memory changed since): asking again", spec.name)
    request = wire.ElicitRequest(params=wire.ElicitRequestFormParams(message=question, requested_schema=ANSWER_SCHEMA))
    return Gate(result=wire.InputRequiredResult(input_requests={ANSWER_KEY: request}, request_state=asked))


async def _request(spec: ToolSpec, rest: dict[str, Any], question: str, context: Any) -> Gate:
    """2025-11-25 and before: ``elicitation/create`` during the call; a client that fails to answer cannot."""
    try:
        # ``session.elicit`` (a form, with a JSON schema) is in every mcp from 1.24 on
        answer = await context.session.elicit(question, ANSWER_SCHEMA, context.request_context.request_id)
    except Exception as exc:  # the client errs, times out or has no way back after all
        log.info("asking before %s failed: %s", spec.name, exc)
        return Gate(result=error(spec, "needs-confirmation",
                                 NEEDS_CONFIRMATION.format(question=question, tool=spec.name)))
    return _answered(spec, rest, answer.action, answer.content)
