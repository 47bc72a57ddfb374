"""Everything the reasoning model reads: the system prompt (MEMDREAMER Fig. 10, adapted to the
memtools tools), the per-round prompt, the forced-answer prompt, the tool schemas for native
tool calling, and the reply models whose field descriptions are the JSON output schema.

The per-round prompt is bounded: the observation is clipped to ``observation_chars`` and the
carried notes to ``notes_chars`` (oldest notes are shortened first), so its size does not
grow with the number of rounds.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from memtools.tools import TOOL_SPECS
from memtools.tools.text import clip

ANSWER_TOOL = "answer"
CLUE_CHARS = 800  # one round's clue is clipped to this when stored
OLD_CLUE_CHARS = 200  # older clues shrink to this when the notes overflow their budget
USEFUL_INFO_DOC = (
    "The clue from the observation you just read: every fact, id and time in it that bears on the question, "
    "and what it rules out (or 'nothing relevant: <why>'). Only this is carried to later rounds; your earlier "
    "clues are kept for you, so do not repeat them.")
USEFUL_INFO_ARG = "The clue from the observation you just read (see Round memory)."


# --- reply models (the JSON protocol's schema) -----------------------------------------------

class ToolRequest(BaseModel):
    tool: str = Field(description="One tool name from the toolkit.")
    args: dict[str, Any] = Field(default_factory=dict, description="The tool's arguments by name.")
    reason: str = Field(default="", description="Why this call, in one sentence.")


class ReasonReply(BaseModel):
    reasoning: str = Field(default="", description="What does the question ask? What do I have? What is missing?")
    can_answer: bool = Field(description="true when the notes already support an answer.")
    answer: str | None = Field(default=None, description="The option letter (or short answer) when can_answer.")
    useful_info: str = Field(default="", description=USEFUL_INFO_DOC)
    information_need: ToolRequest | None = Field(
        default=None, description="null when answering; otherwise exactly one tool call.")


class FinalReply(BaseModel):
    reasoning: str = Field(default="", description="How the gathered evidence supports the answer.")
    answer: str = Field(description="The option letter (or a short answer for an open question).")


# --- tools as the model sees them ---------------------------------------------------------

_GROUPS = {"navigation": "Hierarchical navigation", "search": "Precise search", "traversal": "Graph traversal",
           "inspect": "Visual inspection"}


# validation still happens on our side, with TOOL_SPECS
_DROP_KEYS = {"title", "maxLength", "maxItems", "additionalProperties"}


def compact_schema(schema: Any) -> Any:
    """A JSON schema with fewer tokens and the same meaning for a model: no titles or length
    limits, ``anyOf [X, null]`` of optional fields collapsed to X, no ``default: null``."""
    if isinstance(schema, list):
        return [compact_schema(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: compact_schema(v) for k, v in schema.items() if k not in _DROP_KEYS}
    variants = out.get("anyOf")
    if isinstance(variants, list):
        real = [v for v in variants if v != {"type": "null"}]
        if len(real) == 1:
            del out["anyOf"]
            inner = {k: v for k, v in real[0].items() if not (k == "description" and "description" in out)}
            out = {**inner, **out}
    if "default" in out and out["default"] is None:
        del out["default"]
    return out


def ora_tool_schemas(tool_names: tuple[str, ...] | list[str]) -> list[dict[str, Any]]:
    """OpenAI-format function schemas: each tool takes a required ``useful_info`` (the round's
    clue) besides its own arguments, and an ``answer`` function ends the loop."""
    out = []
    for name in tool_names:
        spec = TOOL_SPECS[name]
        params = compact_schema(spec.args.model_json_schema())
        params["properties"] = {"useful_info": {"type": "string", "description": USEFUL_INFO_ARG},
                                **params.get("properties", {})}
        params["required"] = ["useful_info", *params.get("required", [])]
        out.append({"type": "function", "function": {"name": name, "description": spec.description,
                                                     "parameters": params}})
    out.append({"type": "function", "function": {
        "name": ANSWER_TOOL,
        "description": "Give the final answer and end the loop. Call it as soon as the notes support one option.",
        "parameters": {"type": "object", "required": ["useful_info", "answer"],
                       "properties": {
                           "useful_info": {"type": "string", "description": USEFUL_INFO_ARG},
                           "reasoning": {"type": "string", "description": "How the evidence supports the answer."},
                           "answer": {"type": "string", "description": (
                               "The option letter (A, B, ...) for a multiple-choice question, else a short answer.")},
                       }}}})
    return out


@functools.lru_cache(maxsize=8)
def schema_chars(tool_names: tuple[str, ...]) -> int:
    """How long the tool schemas are as JSON: the part of a tool-calling prompt outside the messages."""
    return len(json.dumps(ora_tool_schemas(tool_names)))


def _arg_doc(name: str, prop: dict[str, Any], required: bool) -> str:
    types = prop.get("anyOf", [prop])
    enum = next((t.get("items", t).get("enum") for t in types if t.get("items", t).get("enum")), None)
    kind = next((t.get("type") for t in types if t.get("type") not in (None, "null")), "any")
    text = name + ("" if required else "?")
    if enum:
        text += ": " + ("[" if kind == "array" else "") + "|".join(enum) + ("]" if kind == "array" else "")
    elif kind == "array":
        text += ": [..]"
    if "default" in prop and prop["default"] is not None:
        text += f"={prop['default']}"
    return text


def tool_signature(name: str) -> str:
    """``search_nodes(query, top_k?=10, node_types?: [super|macro|...], ...)`` for prompts."""
    schema = TOOL_SPECS[name].args.model_json_schema()
    required = set(schema.get("required", []))
    args = [_arg_doc(k, v, k in required) for k, v in schema.get("properties", {}).items()]
    return f"{name}({', '.join(args)})"


def render_call(tool: str, args: dict[str, Any], limit: int = 90) -> str:
    """A call as the model and the trace read it: ``search_nodes(query='pan fire', top_k=5)``."""
    parts = []
    for k, v in args.items():
        if v is None:
            continue
        text = repr(v) if not isinstance(v, str) else repr(clip(v, limit))
        parts.append(f"{k}={clip(text, limit + 10)}")
    return f"{tool}({', '.join(parts)})"


# --- the system prompt ---------------------------------------------------------------------

_INTRO = """You are the reasoning model of an Observation-Reason-Action loop over a hierarchical \
graph memory of videos. \
Each round you read one observation, keep what matters from it, then either answer or call exactly one tool.

# Memory hierarchy
- Video root: title, description, themes, key entities.
- Super events (ids like <video>/super_01): narrative phases with time ranges, key entities, description.
- Macro events (<video>/macro_0003): self-contained episodes inside a super event, with time ranges, key entities.
- Subgraph of a macro event: entities (ent_), micro-events (evt_), on-screen text (ocr_) and typed edges \
(roles, layout, temporal-causal).
- Entities (<video>/entity_003): one person or object merged across every episode it appears in.
The first observation holds ONLY the root and the super-event list. Macro details, subgraphs and edges are not \
preloaded: drill down with tools. Times are absolute [H:MM:SS] from the start of the video."""

_STRATEGY = """# Strategy
Default workflow: search -> identify the macro_id -> get_subgraph for full detail. Macro labels are summaries: do \
not answer who-did-what, counts or exact values from them alone. Pick the tool from the question: a time \
reference -> search_by_time; a person + action -> search_nodes; a causal chain -> get_relations or \
search_graph; everything one person or object does, or when it first/last appears -> search_entities then \
get_entity_timeline; across days or videos ("when did I last ...", "on how many days ...", "where do I \
usually ...") -> get_event_chain for an activity, get_entity_timeline without video_id for a thing or place; \
what someone said -> get_transcript, or search_nodes with node_types ["speech"]; what one \
speaker said -> get_transcript with speaker (a name, or S1, S2, ... for voices told apart by sound). For \
"what had happened by <time>" pass as_of_sec so later events are left out.

# Search queries
- Write a DESCRIPTIVE STATEMENT, not a question: embeddings match event descriptions.
- Use what the answer options share as the signal; stay neutral where they disagree.
- Good: "a foul is committed, leading to free throws". Bad: "Australia #7 fouled" (commits to one option), \
"Who fouled?" (a question).

# Round memory
Observations are NOT carried forward; only your useful_info is. Each round, write in useful_info the clue from \
the observation you just read: facts, ids, times, what it rules out. Your earlier clues are shown back under \
"Notes". The exploration history lists macro events seen but not opened and searches already made: drill into \
unexplored macros instead of repeating a search.

# Answering
Answer as soon as the notes support one option. If a tool returns an error, read it: it says what to call \
instead."""

_JSON_OUTPUT = """# Output (strict JSON, no markdown fences, no commentary)
{
  "reasoning": "What does the question ask? What do I have? What is missing?",
  "can_answer": true | false,
  "answer": "<option letter>" | null,
  "useful_info": "the clue from this observation (facts, ids, times; or what it rules out)",
  "information_need": null OR {"tool": "<tool name>", "args": {<arguments by name>}, "reason": "..."}
}
When can_answer is true give `answer` and set information_need to null; otherwise give exactly one tool call in \
information_need. Omitted optional arguments take their defaults."""

_TOOLS_OUTPUT = """# Output
Call exactly one function per round. Every call carries `useful_info` (see Round memory). To finish, call \
`answer` with the option letter."""


def _toolkit(tool_names: tuple[str, ...] | list[str], signatures: bool) -> str:
    lines = ["# Toolkit (one call per round)"]
    for group, title in _GROUPS.items():
        names = [n for n in tool_names if TOOL_SPECS[n].group == group]
        if not names:
            continue
        if not signatures:
            lines.append(f"{title}: {', '.join(names)}")
            continue
        lines.append(f"{title}:")
        lines += [f"- {tool_signature(n)}: {TOOL_SPECS[n].description}" for n in names]
    return "\n".join(lines)


def system_prompt(protocol: str, tool_names: tuple[str, ...] | list[str]) -> str:
    output = _JSON_OUTPUT if protocol == "json" else _TOOLS_OUTPUT
    return "\n\n".join([_INTRO, _toolkit(tool_names, signatures=protocol == "json"), _STRATEGY, output])


FORCED_SYSTEM = """You answer a question about a video from evidence an agent gathered in its memory. The tool \
budget is spent: no more tools. Reply with strict JSON only, no markdown fences:
{"reasoning": "how the evidence supports the answer", "answer": "<option letter>"}
If the evidence is incomplete, choose the most likely option."""


# --- the per-round prompt ------------------------------------------------------------------

def render_question(question: str, options: dict[str, str]) -> str:
    lines = ["# Question", question.strip()]
    if options:
        lines.append("# Options")
        lines += [f"({k}) {v}" for k, v in options.items()]
    return "\n".join(lines)


def render_scope(scope: list[str]) -> str:
    if len(scope) == 1:
        return f"# Scope\nVideo {scope[0]} (tools default to it; video_id may be omitted)."
    if scope:
        return f"# Scope\nVideos {', '.join(scope)} (pass video_id)."
    return "# Scope\nEvery video in the memory (pass video_id when there are several)."


def render_notes(clues: list[dict[str, Any]], budget: int) -> str:
    """Newest clues in full, older ones shortened, the oldest dropped if still over budget."""
    if not clues:
        return "# Notes from earlier rounds\n(none yet)"
    lines = [f"R{c['round']} {c['source']}: {c['text']}" for c in clues]
    total = sum(len(line) + 1 for line in lines)
    for i in range(len(lines) - 1):  # shorten oldest first, keep the newest whole
        if total <= budget:
            break
        short = clip(lines[i], OLD_CLUE_CHARS)
        total -= len(lines[i]) - len(short)
        lines[i] = short
    dropped = 0
    while total > budget and len(lines) > 1:
        total -= len(lines.pop(0)) + 1
        dropped += 1
    head = "# Notes from earlier rounds (your useful_info; raw observations are gone)"
    return "\n".join([head, *([f"({dropped} oldest notes dropped)"] if dropped else []), *lines])


def render_exploration(exploration: dict[str, Any], limit: int = 15) -> str:
    opened = exploration.get("macros_opened", [])
    unopened = [m for m in exploration.get("macros_found", []) if m not in opened]
    queries = exploration.get("queries", [])
    lines = ["# Exploration history"]
    lines.append("Searches made: " + ("; ".join(queries[-limit:]) if queries else "none"))
    lines.append("Macro events opened (get_subgraph): " + (", ".join(opened[-limit:]) if opened else "none"))
    more = f" (+{len(unopened) - limit} more)" if len(unopened) > limit else ""
    lines.append("Macro events seen, not opened: " + (", ".join(unopened[-limit:]) + more if unopened else "none"))
    return "\n".join(lines)


def render_observation(state: Mapping[str, Any], budget: int) -> str:
    r = state.get("round", 0)
    source = state.get("observation_source") or "overview"
    head = "overview of the memory" if r == 0 else f"result of round {r}: {source}"
    return f"# Observation {r} ({head})\n{clip_block(state.get('observation') or '(nothing)', budget)}"


def clip_block(text: str, budget: int) -> str:
    """Keep whole lines up to ``budget`` characters, then say how much was cut."""
    if len(text) <= budget:
        return text
    cut = text[:budget].rsplit("\n", 1)[0]
    return cut + f"\n… {len(text) - len(cut)} more characters cut; narrow the call to see them."


def round_prompt(state: Mapping[str, Any], max_rounds: int, observation_chars: int, notes_chars: int) -> str:
    r = state.get("round", 0)
    left = max_rounds - r
    turn = (f"# Round {r}: {left} tool call(s) left"
            + (". This is your last tool call; after its result you must answer." if left == 1 else "."))
    return "\n\n".join([
        render_question(state["question"], state.get("options") or {}),
        render_scope(state.get("scope") or []),
        turn,
        render_notes(state.get("useful_info") or [], notes_chars),
        render_exploration(state.get("exploration") or {}),
        render_observation(state, observation_chars),
        "Distil the observation into useful_info, then answer or call one tool.",
    ])


def forced_prompt(state: Mapping[str, Any], observation_chars: int, notes_chars: int) -> str:
    return "\n\n".join([
        render_question(state["question"], state.get("options") or {}),
        render_notes(state.get("useful_info") or [], notes_chars),
        render_observation(state, observation_chars),
        "The tool budget is spent. Answer now from the notes and the last observation (JSON only).",
    ])


def retry_feedback(error: str, protocol: str) -> str:
    how = ("Reply again with only the JSON object described in the system prompt."
           if protocol == "json" else "Call exactly one of the functions (or `answer`) with valid arguments.")
    return f"Your reply could not be used: {error}\n{how}"
