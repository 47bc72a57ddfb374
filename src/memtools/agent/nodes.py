"""The four ORA nodes and their two routers. Each is a plain function ``(state, runtime)``
that reads the tool core, the model and the settings from ``runtime.context`` (an
``ORAContext``), so users can rewire them into their own ``StateGraph``.

Per round: ``observe`` turns the last tool result into the observation o_t (round 0: the root
and the super-event list); ``reason`` shows the model the question, its notes, the
exploration history and o_t, and gets back a clue c_t plus one tool call or an answer;
``act`` runs the call (a ``ToolError`` becomes the next observation); ``answer`` ends the run,
forcing an answer from the notes when the round budget is spent.
"""

from __future__ import annotations

import base64
import re
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.runtime import Runtime

from memtools.agent import prompts
from memtools.agent.parsing import (
    Decision,
    ReplyError,
    last_resort_letter,
    message_text,
    parse_final_reply,
    parse_json_reply,
    parse_tool_reply,
    with_defaults,
)
from memtools.agent.state import Exploration, ORAContext, ORAState, empty_exploration
from memtools.errors import ConfigError, ToolError
from memtools.tools import TOOL_SPECS, ToolOutcome
from memtools.tools.text import clip, hms, span

_MACRO_ID = re.compile(r"(?<![\w.-])[A-Za-z0-9_-][A-Za-z0-9_.-]*/macro_\d+\b")
OVERVIEW_VIDEOS = 5  # at most this many videos are summarised in the round-0 observation


def msg_out_of_scope(video_id: str, scope: list[str]) -> str:
    return f"video {video_id!r} is outside this question's scope; use {', '.join(scope)}"


def _traced(state: ORAState, record: dict[str, Any]) -> list[dict[str, Any]]:
    return [*(state.get("trace") or []), record]


def estimate_tokens(chars: int) -> int:
    """A model-free token estimate (about four characters per token for English)."""
    return (chars + 3) // 4


# --- observe ---------------------------------------------------------------------------------

def _overview(ctx: ORAContext, video_id: str, budget: int) -> str:
    summary = ctx.tools.get_summary(video_id)
    supers = ctx.tools.get_super_events(video_id)
    lines = [f"Video {video_id} {span(0, summary.duration)}: {summary.title or '(untitled)'}"]
    if summary.description:
        lines.append(f"Description: {clip(summary.description, 600)}")
    if summary.themes:
        lines.append("Themes: " + ", ".join(summary.themes[:10]))
    if summary.key_entities:
        lines.append("Key entities: " + ", ".join(summary.key_entities[:15]))
    lines.append(f"Super events ({len(supers.supers)}):")
    per_super = max(120, budget // max(1, len(supers.supers)) - 60)
    for s in supers.supers:
        ids = s.macro_ids
        macros = (", ".join(ids) if len(ids) <= 2 else f"{ids[0]} … {ids[-1]}") if ids else "none"
        line = (f"- {s.id} {span(s.t_start, s.t_end)} {s.label} — {s.description}"
                + (f" | key: {', '.join(s.key_entities[:6])}" if s.key_entities else ""))
        lines.append(clip(line, per_super) + f" | macros ({len(ids)}): {macros}")
    return "\n".join(lines)


def _bootstrap(state: ORAState, ctx: ORAContext) -> dict[str, Any]:
    known = ctx.tools.memory.video_ids()
    scope = list(dict.fromkeys(state.get("scope") or []))
    unknown = [v for v in scope if v not in known]
    if unknown:
        raise ConfigError(f"scope names videos this memory lacks: {', '.join(unknown)}")
    if not scope and len(known) == 1:
        scope = known
    options = {str(k).strip().upper(): str(v).strip() for k, v in (state.get("options") or {}).items()}
    try:
        if scope:
            budget = ctx.observation_chars // min(len(scope), OVERVIEW_VIDEOS)
            parts = [_overview(ctx, v, budget) for v in scope[:OVERVIEW_VIDEOS]]
            if len(scope) > OVERVIEW_VIDEOS:
                parts.append(f"({len(scope) - OVERVIEW_VIDEOS} more videos in scope: call get_summary(video_id=...))")
            text = "\n\n".join(parts)
        else:
            text = ctx.tools.list_videos().render()
    except ToolError as exc:
        text = f"Tool error while reading the overview: {exc}"
    return {"options": options, "scope": scope, "round": 0, "observation": text, "observation_source": "overview",
            "observation_images": [], "useful_info": [], "exploration": empty_exploration(), "pending": None,
            "failure": None, "answer": None, "reasoning": "", "result": None, "status": None, "trace": []}


def observe(state: ORAState, runtime: Runtime[ORAContext]) -> dict[str, Any]:
    """o_t: the overview in round 0, afterwards the last tool result (clipped later, in the prompt)."""
    ctx = runtime.context
    if "round" not in state or state.get("status"):  # a new run (or a new question on a finished thread)
        return _bootstrap(state, ctx)
    result = state.get("result")
    if result is None:
        return {}
    seen = state.get("exploration") or empty_exploration()
    exploration = Exploration(queries=list(seen["queries"]), calls=list(seen["calls"]),
                              macros_found=list(seen["macros_found"]), macros_opened=list(seen["macros_opened"]))
    notes = list(result.get("notes") or [])
    if result["tool"] is None:  # a failed round: show the undigested observation again
        text = f"{result['text']}\n\nThe previous observation, again:\n{state.get('observation') or ''}"
        return {"observation": text, "observation_images": [], "result": None}
    call = prompts.render_call(result["tool"], result["args"])
    if call in exploration["calls"]:
        notes.append(f"you made this exact call before (round {exploration['calls'].index(call) + 1}); "
                     "try another tool, query or macro")
    exploration["calls"].append(call)
    args = result["args"]
    if result["tool"] == "search_nodes":
        exploration["queries"].append(repr(clip(str(args.get("query", "")), 80)))
    elif result["tool"] == "search_by_time":
        exploration["queries"].append(f"time {hms(args.get('start_sec', 0))}-{hms(args.get('end_sec', 0))}")
    if result["ok"]:
        if result["tool"] == "get_subgraph" and args.get("macro_id") not in exploration["macros_opened"]:
            exploration["macros_opened"].append(args["macro_id"])
        for m in _MACRO_ID.findall(result["text"]):
            if m not in exploration["macros_found"]:
                exploration["macros_found"].append(m)
    text = "".join(f"Note: {n}.\n" for n in notes) + result["text"]
    return {"observation": text, "observation_source": call, "observation_images": result.get("images") or [],
            "exploration": exploration, "result": None}


# --- reason ----------------------------------------------------------------------------------

def _add_usage(total: dict[str, int], message: Any) -> None:
    usage = getattr(message, "usage_metadata", None) or {}
    for key in ("input_tokens", "output_tokens", "total_tokens"):
        total[key] = total.get(key, 0) + int(usage.get(key) or 0)


def _feedback(reply: AIMessage, error: str, protocol: str) -> list[BaseMessage]:
    text = prompts.retry_feedback(error, protocol)
    ids = [c.get("id") for c in [*(reply.tool_calls or []), *(reply.invalid_tool_calls or [])] if c.get("id")]
    if ids:  # every tool call must be answered before the conversation goes on
        return [reply, *(ToolMessage(content=text, tool_call_id=i, status="error") for i in ids)]
    return [reply, HumanMessage(content=text)]


def _converse(runnable: Any, messages: list[BaseMessage], parse, protocol: str, retries: int):
    """Ask, parse, and re-ask with the error fed back: ``(value | None, replies, errors, usage)``."""
    replies: list[AIMessage] = []
    errors: list[str] = []
    usage: dict[str, int] = {}
    for _ in range(retries + 1):
        reply = runnable.invoke(messages)
        replies.append(reply)
        _add_usage(usage, reply)
        try:
            return parse(reply), replies, errors, usage
        except ReplyError as exc:
            errors.append(str(exc))
            messages = [*messages, *_feedback(reply, str(exc), protocol)]
    return None, replies, errors, usage


def _defaults(state: ORAState, ctx: ORAContext) -> dict[str, Any]:
    scope = state.get("scope") or []
    return {"top_k": ctx.top_k, **({"video_id": scope[0]} if len(scope) == 1 else {})}


def _human(text: str, images: list[str]) -> HumanMessage:
    if not images:
        return HumanMessage(content=text)
    return HumanMessage(content=[{"type": "text", "text": text},
                                 *({"type": "image", "base64": b, "mime_type": "image/jpeg"} for b in images)])


def reason(state: ORAState, runtime: Runtime[ORAContext]) -> dict[str, Any]:
    """R reads (Q, notes, o_t) and returns c_t (kept in ``useful_info``) and a_{t+1} or an answer."""
    ctx = runtime.context
    protocol, runnable = ctx.reasoner()
    options = state.get("options") or {}
    defaults = _defaults(state, ctx)
    system = prompts.system_prompt(protocol, ctx.tool_names)
    human = prompts.round_prompt(state, ctx.max_rounds, ctx.observation_chars, ctx.notes_chars)
    messages: list[BaseMessage] = [SystemMessage(content=system), _human(human, state.get("observation_images") or [])]

    def parse(reply: AIMessage) -> Decision:
        if protocol == "tools":
            return parse_tool_reply(reply, ctx.tool_names, options, defaults)
        return parse_json_reply(message_text(reply), ctx.tool_names, options, defaults)

    decision, replies, errors, usage = _converse(runnable, messages, parse, protocol, ctx.max_retries)
    schema_chars = prompts.schema_chars(ctx.tool_names) if protocol == "tools" else 0
    chars = len(system) + len(human) + schema_chars
    r = state.get("round", 0)
    record: dict[str, Any] = {
        "kind": "reason", "round": r, "read": state.get("observation_source") or "overview", "protocol": protocol,
        "attempts": len(replies), "errors": errors, "prompt_chars": chars, "prompt_tokens_est": estimate_tokens(chars),
        "usage": usage,
    }
    if decision is None:
        record["failure"] = errors[-1] if errors else "no reply"
        return {"pending": None, "failure": record["failure"], "trace": _traced(state, record)}
    clue = {"round": r, "source": record["read"], "text": decision.clue or "(no clue given)"}
    record.update(clue=decision.clue, reasoning=decision.reasoning)
    update: dict[str, Any] = {"useful_info": [*(state.get("useful_info") or []), clue], "failure": None,
                              "trace": _traced(state, record)}
    if decision.answer is not None:
        record["answer"] = decision.answer
        return {**update, "pending": None, "answer": decision.answer, "reasoning": decision.reasoning}
    record.update(tool=decision.tool, args=decision.args)
    return {**update, "pending": {"tool": decision.tool, "args": decision.args, "notes": decision.notes}}


def route_after_reason(state: ORAState) -> Literal["act", "answer"]:
    return "answer" if state.get("answer") is not None else "act"


# --- act -------------------------------------------------------------------------------------

def act(state: ORAState, runtime: Runtime[ORAContext]) -> dict[str, Any]:
    """Run the pending call through ``ToolSpec.invoke``; a model-facing error becomes the observation."""
    ctx = runtime.context
    r = state.get("round", 0) + 1
    pending = state.get("pending")
    images: list[str] = []
    if pending is None:
        why = state.get("failure") or "no tool call"
        result: dict[str, Any] = {"tool": None, "args": {}, "ok": False, "images": [],
                  "text": f"No tool ran in round {r}: your reply could not be used ({why})."}
    else:
        tool, args = pending["tool"], dict(pending["args"])
        scope = state.get("scope") or []
        if scope and args.get("video_id") not in (None, *scope):
            outcome = ToolOutcome.failure(tool, "bad-arguments", msg_out_of_scope(args["video_id"], scope))
        else:
            outcome = TOOL_SPECS[tool].invoke(ctx.tools, with_defaults(tool, args, _defaults(state, ctx)))
        text, ok = outcome.text, outcome.ok
        if ctx.images and outcome.images:
            images = [base64.b64encode(b).decode("ascii") for b in outcome.images]
        result = {"tool": tool, "args": args, "ok": ok, "text": text, "images": images,
                  "notes": pending.get("notes") or []}
    record = {"kind": "act", "round": r, "tool": result["tool"], "args": result["args"], "ok": result["ok"],
              "observation": result["text"]}
    return {"round": r, "result": result, "pending": None, "failure": None, "trace": _traced(state, record)}


def route_after_observe(state: ORAState, runtime: Runtime[ORAContext]) -> Literal["reason", "answer"]:
    return "answer" if state.get("round", 0) >= runtime.context.max_rounds else "reason"


# --- answer ----------------------------------------------------------------------------------

def answer(state: ORAState, runtime: Runtime[ORAContext]) -> dict[str, Any]:
    """End the run: keep the model's answer, or force one from the notes when the budget is spent."""
    ctx = runtime.context
    r = state.get("round", 0)
    if state.get("answer") is not None:
        return {"status": "answered",
                "trace": _traced(state, {"kind": "answer", "round": r, "forced": False, "answer": state["answer"]})}
    options = state.get("options") or {}
    system = prompts.FORCED_SYSTEM if options else prompts.FORCED_SYSTEM.replace("<option letter>", "<short answer>")
    human = prompts.forced_prompt(state, ctx.observation_chars, ctx.notes_chars)
    messages = [SystemMessage(content=system), _human(human, state.get("observation_images") or [])]
    value, replies, errors, usage = _converse(ctx.model, messages, lambda m: parse_final_reply(m, options),
                                              "json", ctx.max_retries)
    chars = len(system) + len(human)
    record: dict[str, Any] = {"kind": "answer", "round": r, "forced": True, "attempts": len(replies),
                              "errors": errors, "prompt_chars": chars, "prompt_tokens_est": estimate_tokens(chars),
                              "usage": usage}
    if value is not None:
        final, why = value
    else:
        final = last_resort_letter("\n".join(message_text(m) for m in replies), options)
        why = "taken from an unparseable reply" if final else ""
    record.update(answer=final, reasoning=why)
    return {"answer": final, "reasoning": why, "status": "forced" if final is not None else "no_answer",
            "trace": _traced(state, record)}
