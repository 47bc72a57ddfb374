"""Reading the model's replies: tool calls or the JSON protocol, answer letters, option lists.

Model output is untrusted: every function here either returns a clean value or raises
``ReplyError`` with a message written for the model, which the ``reason`` node feeds back
when it retries.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from memtools.agent.prompts import ANSWER_TOOL, CLUE_CHARS, FinalReply, ReasonReply
from memtools.errors import ToolError
from memtools.tools import TOOL_SPECS
from memtools.tools.text import clip

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)
_LETTER = re.compile(r"^\s*(?:option\s+|answer\s*:?\s*)?\(?([A-Za-z])\)?(?:[.:)\s]|$)", re.I)
_OPTION_LINE = re.compile(r"^\s*\(([A-Z])\)\s*(.*)$")
_INLINE_OPTION = re.compile(r"\(([A-Z])\)\s*")


class ReplyError(ValueError):
    """A reply the loop cannot use; the message tells the model what to fix."""


@dataclass
class Decision:
    """What one reply decided: call ``tool`` with ``args``, or give ``answer``."""

    clue: str = ""
    reasoning: str = ""
    tool: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    answer: str | None = None
    notes: list[str] = field(default_factory=list)  # e.g. extra tool calls that were ignored


def message_text(message: Any) -> str:
    """The text of an AIMessage, whatever its content shape (str or content blocks)."""
    content = getattr(message, "content", message)
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(block.get("text", ""))
    return "".join(parts)


def extract_json(text: str) -> dict[str, Any]:
    """The first JSON object in ``text`` (markdown fences and chatter around it are tolerated)."""
    text = (text or "").strip()
    if not text:
        raise ReplyError("the reply was empty")
    fenced = _FENCE.search(text)
    candidates = [fenced.group(1)] if fenced else []
    candidates.append(text)
    decoder = json.JSONDecoder()
    error = "no JSON object found"
    for cand in candidates:
        start = cand.find("{")
        while start != -1:
            try:
                value, _ = decoder.raw_decode(cand, start)
            except json.JSONDecodeError as exc:
                error = f"invalid JSON ({exc.msg} at character {exc.pos})"
            else:
                if isinstance(value, dict):
                    return value
            start = cand.find("{", start + 1)
    raise ReplyError(error)


def normalize_answer(raw: Any, options: dict[str, str]) -> str:
    """``"B"``, ``"(B)"``, ``"b) a lid"``, ``"Option B"`` or the option's text -> ``"B"``."""
    text = str(raw if raw is not None else "").strip()
    if not text:
        raise ReplyError("the answer is empty")
    if not options:
        return clip(text, 500)
    for key, value in options.items():
        if text.lower().strip(" .") == value.lower().strip(" ."):
            return key
    letters = {k.upper(): k for k in options}
    match = _LETTER.match(text)
    if match and match.group(1).upper() in letters:
        return letters[match.group(1).upper()]
    raise ReplyError(f"answer {clip(text, 60)!r} is not one of the option letters {', '.join(options)}")


def with_defaults(tool: str, args: dict[str, Any], defaults: dict[str, Any] | None) -> dict[str, Any]:
    """``args`` plus the loop's defaults (scoped ``video_id``, ``top_k``) for fields the tool has."""
    fields = TOOL_SPECS[tool].args.model_fields
    return {**{k: v for k, v in (defaults or {}).items() if k in fields}, **args}


def _validate_args(tool: str, args: Any, allowed: tuple[str, ...], defaults: dict[str, Any] | None) -> dict[str, Any]:
    """The model's own arguments (None values dropped), checked with the defaults filled in."""
    if tool not in allowed:
        raise ReplyError(f"unknown tool {tool!r}; use one of: {', '.join(allowed)}")
    if not isinstance(args, dict):
        raise ReplyError(f"the arguments of {tool} must be a JSON object")
    args = {k: v for k, v in args.items() if v is not None}
    try:  # the same strict check and words as ToolSpec.invoke in the act node and the other front ends
        TOOL_SPECS[tool].parse(with_defaults(tool, args, defaults))
    except ToolError as exc:
        raise ReplyError(f"bad arguments for {tool}: {exc}") from None
    return args


def parse_tool_reply(message: Any, allowed: tuple[str, ...], options: dict[str, str],
                     defaults: dict[str, Any] | None = None) -> Decision:
    """A native tool-calling reply: the first tool call decides; a bare JSON reply is accepted too."""
    calls = list(getattr(message, "tool_calls", None) or [])
    if not calls:
        bad = getattr(message, "invalid_tool_calls", None) or []
        if bad:
            raise ReplyError(f"the call to {bad[0].get('name')!r} had unreadable arguments: {bad[0].get('error')}")
        text = message_text(message)
        if "{" in text:
            return parse_json_reply(text, allowed, options, defaults)
        raise ReplyError("no function was called")
    call = calls[0]
    args = dict(call.get("args") or {})
    clue = clip(str(args.pop("useful_info", "") or ""), CLUE_CHARS)
    reasoning = str(args.pop("reasoning", "") or "") or message_text(message)
    notes = [f"only one tool runs per round; ignored: {', '.join(c.get('name', '?') for c in calls[1:])}"] \
        if len(calls) > 1 else []
    if call.get("name") == ANSWER_TOOL:
        return Decision(clue=clue, reasoning=reasoning, answer=normalize_answer(args.get("answer"), options),
                        notes=notes)
    tool = str(call.get("name"))
    return Decision(clue=clue, reasoning=reasoning, tool=tool, args=_validate_args(tool, args, allowed, defaults),
                    notes=notes)


def parse_json_reply(text: str, allowed: tuple[str, ...], options: dict[str, str],
                     defaults: dict[str, Any] | None = None) -> Decision:
    """The JSON protocol of MEMDREAMER Fig. 10, with ``information_need`` naming one of our tools."""
    data = extract_json(text)
    need = data.get("information_need", data.get("tool_call"))
    if isinstance(need, dict):  # tolerate {"name": ..., "arguments": ...}
        need = {"tool": need.get("tool", need.get("name")), "args": need.get("args", need.get("arguments", {})),
                "reason": need.get("reason", "")}
        data = {**data, "information_need": need}
    try:
        reply = ReasonReply.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:4])
        raise ReplyError(f"the JSON does not match the output format: {problems}") from None
    clue = clip(reply.useful_info, CLUE_CHARS)
    if reply.can_answer:
        return Decision(clue=clue, reasoning=reply.reasoning, answer=normalize_answer(reply.answer, options))
    if reply.information_need is None:
        raise ReplyError("can_answer is false but information_need is null: call one tool or answer")
    need_ = reply.information_need
    return Decision(clue=clue, reasoning=reply.reasoning, tool=need_.tool,
                    args=_validate_args(need_.tool, need_.args, allowed, defaults))


def parse_final_reply(message: Any, options: dict[str, str]) -> tuple[str, str]:
    """``(answer, reasoning)`` from the forced-answer reply (JSON, or an ``answer`` tool call)."""
    for call in getattr(message, "tool_calls", None) or []:
        if call.get("name") == ANSWER_TOOL:
            args = call.get("args") or {}
            return normalize_answer(args.get("answer"), options), str(args.get("reasoning", ""))
    data = extract_json(message_text(message))
    try:
        reply = FinalReply.model_validate(data)
    except ValidationError:
        raise ReplyError('the JSON needs an "answer" field') from None
    return normalize_answer(reply.answer, options), reply.reasoning


def last_resort_letter(text: str, options: dict[str, str]) -> str | None:
    """A lone option letter in free text ("... so the answer is (C)."), when nothing parsed."""
    if not options:
        return None
    found = re.findall(r"\(([A-Z])\)|\b(?:answer|option)\s*(?:is\s*)?:?\s*\(?([A-Z])\b", text or "", re.I)
    letters = [a or b for a, b in found]
    letters = [x.upper() for x in letters if x.upper() in options]
    return letters[-1] if letters else None


def split_options(question: str) -> tuple[str, dict[str, str]]:
    """An LVBench question (``"stem\\n(A) ...\\n(B) ..."``) -> ``(stem, {"A": ..., ...})``.

    Options on their own lines are the norm; options inline after the stem also work.
    """
    stem_lines, options = [], {}
    for line in question.splitlines():
        match = _OPTION_LINE.match(line)
        if match:
            options[match.group(1)] = match.group(2).strip()
        elif options and line.strip():
            last = next(reversed(options))
            options[last] = f"{options[last]} {line.strip()}"
        elif not options:
            stem_lines.append(line)
    if options:
        return "\n".join(stem_lines).strip(), options
    parts = _INLINE_OPTION.split(question)
    if len(parts) >= 5 and parts[1] == "A":
        return parts[0].strip(), {parts[i]: parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}
    return question.strip(), {}
