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
        elif kind == "act" and not step.get("ok") and step.get("tool"):
            lines.append(f"          tool error: {clip(step.get('observation', ''), width)}")
        elif kind == "answer":
            how = "forced (round budget spent)" if step.get("forced") else "answered"
            lines.append(f"answer: {step.get('answer')}  [{how}]")
    return "\n".join(lines)
