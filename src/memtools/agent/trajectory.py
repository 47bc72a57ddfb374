"""A finished ORA run as a JSON-able trajectory, and as a short readable trace."""

from __future__ import annotations

from typing import Any

from memtools.agent.prompts import render_call
from memtools.tools.text import clip


def _usage(trace: list[dict[str, Any]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for step in trace:
        for key, value in (step.get("usage") or {}).items():
            total[key] = total.get(key, 0) + value
    return total


def round_tokens(step: dict[str, Any]) -> dict[str, Any]:
    """Tokens of one model step (a round's reasoning or the final answer): the model's own usage,
    else the prompt's estimate (the answer's size unknown), marked ``estimated``."""
    usage = step.get("usage") or {}
    if usage.get("input_tokens") or usage.get("output_tokens"):
        return {"in": int(usage.get("input_tokens") or 0), "out": int(usage.get("output_tokens") or 0),
                "estimated": False}
    return {"in": int(step.get("prompt_tokens_est") or 0), "out": 0, "estimated": True}


def tokens_total(per_round: list[dict[str, Any]]) -> dict[str, Any]:
    return {"in": sum(r["in"] for r in per_round), "out": sum(r["out"] for r in per_round),
            "estimated": any(r["estimated"] for r in per_round)}


def format_tokens(tokens: dict[str, Any]) -> str:
    return f"{tokens['in']:,} in, {tokens['out']:,} out" + (" (estimated)" if tokens["estimated"] else "")


def trajectory(state: dict[str, Any]) -> dict[str, Any]:
    """The final state of a run, plus per-round prompt sizes and total token usage."""
    trace = list(state.get("trace") or [])
    calls = [s for s in trace if s.get("kind") in ("reason", "answer") and "prompt_chars" in s]
    return {
        "question": state.get("question"),
        "options": state.get("options") or {},
        "scope": state.get("scope") or [],
        "answer": state.get("answer"),
        "status": state.get("status"),
        "reasoning": state.get("reasoning", ""),
        "rounds": state.get("round", 0),
        "model_calls": sum(s.get("attempts", 0) for s in calls),
        "usage": _usage(trace),
        "prompt_tokens_est": [s["prompt_tokens_est"] for s in calls],
        "tokens_per_round": [{"round": s.get("round"), **round_tokens(s)} for s in calls],
        "tokens": tokens_total([round_tokens(s) for s in calls]),
        "useful_info": state.get("useful_info") or [],
        "exploration": state.get("exploration") or {},
        "trace": trace,
    }


def format_trace(state: dict[str, Any], width: int = 160) -> str:
    """One line per round: what was read, the clue kept, the call made; then the answer."""
    lines = []
    for step in state.get("trace") or []:
        kind = step.get("kind")
        if kind == "reason":
            lines.append(f"round {step['round']:>2}  read {clip(step.get('read', ''), 70)}")
            if step.get("failure"):
                lines.append(f"          failed after {step['attempts']} attempt(s): {clip(step['failure'], width)}")
                continue
            if step.get("clue"):
                lines.append(f"          clue: {clip(step['clue'], width)}")
            if step.get("tool"):
                lines.append(f"          call: {render_call(step['tool'], step.get('args') or {})}")
            if "prompt_chars" in step:
                lines.append(f"          tokens: {format_tokens(round_tokens(step))}")
        elif kind == "act" and not step.get("ok") and step.get("tool"):
            lines.append(f"          tool error: {clip(step.get('observation', ''), width)}")
        elif kind == "answer":
            how = "forced (round budget spent)" if step.get("forced") else "answered"
            lines.append(f"answer: {step.get('answer')}  [{how}]")
            if "prompt_chars" in step:
                lines.append(f"          tokens: {format_tokens(round_tokens(step))}")
    return "\n".join(lines)
