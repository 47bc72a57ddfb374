"""An answer's path as a page: the ORA rounds of one run, drawn over the timelines it touched.

Each round shows what the model read, its reasoning, the clue it kept (``useful_info``), the
tool call it made, a one-line summary of the result (the full observation folds out) and the
node ids the result named. The timeline of every video in play outlines the super and macro
events the agent opened or saw, with the round it first met them; the answer lists the ids its
reasoning and notes cite.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from memtools.agent.prompts import render_call
from memtools.errors import MemtoolsError, ToolError
from memtools.show.collect import outline
from memtools.show.page import html_page
from memtools.tools import MemoryTools
from memtools.tools.text import clip

NODE_ID = re.compile(r"(?<![\w/.-])([A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}/(?:super_\d+|macro_\d+)"
                     r"(?:/(?:ent|evt|ocr)_\d+)?)")
SHORT_ID = re.compile(r"(?<![\w/])((?:ent|evt|ocr)_\d+)\b")
OBSERVATION_CHARS = 6000
IDS_PER_ROUND = 40
MAX_VIDEOS = 6


def node_ids(text: str) -> list[str]:
    """Super, macro and subgraph node ids named in ``text``, in order, without repeats."""
    return list(dict.fromkeys(NODE_ID.findall(text or "")))


def _arg_ids(args: dict[str, Any]) -> list[str]:
    found: list[str] = []
    for value in args.values():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str):
                found += node_ids(item)
    return found


def steps(trace: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, int], dict[str, int]]:
    """The rounds as page steps, {node id: the round whose call first brought it up} and
    {node id: the round whose call named it as an argument (opened it)}."""
    out: list[dict[str, Any]] = []
    visited: dict[str, int] = {}
    opened: dict[str, int] = {}
    for record in trace:
        kind = record.get("kind")
        if kind == "reason":
            step = {"round": record.get("round", 0), "read": record.get("read", ""),
                    "reasoning": record.get("reasoning", ""), "clue": record.get("clue") or "",
                    "failure": record.get("failure") or "", "ids": []}
            if record.get("tool"):
                step["call"] = render_call(record["tool"], record.get("args") or {})
            if record.get("answer") is not None:
                step["answer"] = record["answer"]
            out.append(step)
        elif kind == "act" and out:
            text = record.get("observation") or ""
            args = record.get("args") or {}
            for node in _arg_ids(args):  # what the call itself asked for
                opened.setdefault(node, out[-1]["round"])
            ids = _arg_ids(args) + node_ids(text)
            if record.get("tool") == "get_subgraph" and isinstance(args.get("macro_id"), str):
                ids += [f"{args['macro_id']}/{short}" for short in SHORT_ID.findall(text)]  # rendered short
            ids = list(dict.fromkeys(ids))
            for node in ids:  # the round whose call brought the node up
                visited.setdefault(node, out[-1]["round"])
                visited.setdefault("/".join(node.split("/")[:2]), out[-1]["round"])
            out[-1].update(ok=bool(record.get("ok")), summary=clip(text.split("\n", 1)[0], 240),
                           observation=clip(text, OBSERVATION_CHARS), ids=ids[:IDS_PER_ROUND])
        elif kind == "answer" and record.get("forced"):
            out.append({"round": record.get("round", 0), "read": "forced answer (round budget spent)",
                        "reasoning": record.get("reasoning", ""), "answer": record.get("answer"), "ids": [],
                        "failure": "; ".join(record.get("errors") or [])})
    return out, visited, opened


def trace_data(run: dict[str, Any], tools: MemoryTools | None = None) -> dict[str, Any]:
    """Page data for a trajectory (``memtools.agent.trajectory(state)``)."""
    page_steps, visited, opened = steps(list(run.get("trace") or []))
    clues = list(run.get("useful_info") or [])
    cited = node_ids(" ".join([run.get("reasoning") or ""] + [c.get("text", "") for c in clues]))
    videos = list(run.get("scope") or []) or list(dict.fromkeys(i.split("/", 1)[0] for i in visited))
    views = []
    for vid in videos[:MAX_VIDEOS]:
        if tools is None:
            break
        try:
            views.append(outline(tools, vid))
        except (ToolError, MemtoolsError):  # a video the memory no longer holds: draw the rounds anyway
            continue
    return {"kind": "trace", "visited": visited, "opened": opened, "videos": views, "run": {
        "question": run.get("question") or "", "options": run.get("options") or {}, "answer": run.get("answer"),
        "status": run.get("status") or "", "reasoning": run.get("reasoning") or "",
        "rounds": run.get("rounds", 0), "steps": page_steps, "clues": clues, "cited": cited}}


def trace_page(run: dict[str, Any], tools: MemoryTools | None = None) -> str:
    return html_page(f"Trace: {clip(run.get('question') or '', 80)} — memtools", trace_data(run, tools))


def write_trace(path: str | os.PathLike, run: dict[str, Any], tools: MemoryTools | None = None) -> Path:
    """Write the trace page of ``run`` to ``path`` (folders are made); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(trace_page(run, tools), encoding="utf-8")
    return path
