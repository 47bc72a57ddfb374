"""Model output is untrusted input: find the JSON in it, repair it, validate it item by item.

``parse_answer(text, Model)`` returns the validated answer and notes of what was repaired,
or raises ``AnswerError`` whose message is written for the model (it goes back into the
retry prompt). Repairs, in order:

* ``<think>`` blocks, markdown fences and chatter around the JSON are dropped;
* near-JSON is normalised: single-quoted strings, Python literals (True/False/None),
  unquoted keys, comments and trailing commas;
* a truncated answer (the model ran out of tokens) is cut back to its last complete value
  and its brackets closed;
* a bare list is taken as the model's only list field, a single wrapping key is unwrapped;
* list items are validated one at a time: an invalid item is dropped and noted, the rest
  survive.

``canonical_label`` maps relation labels written loosely ("located in", "Causes", "NEAR")
to the schema's labels.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*(?:json|JSON|javascript|js|python)?[ \t]*\n?(.*?)(?:```|$)", re.DOTALL)
_LITERALS = {"True": "true", "False": "false", "None": "null", "null": "null", "true": "true", "false": "false",
             "NaN": "null", "Infinity": "null", "undefined": "null"}
_MAX_TRUNCATION_TRIES = 400


class AnswerError(ValueError):
    """The answer could not be used; the message tells the model what to fix."""


# --- finding and repairing the JSON ------------------------------------------------------------


def extract_json(text: str) -> tuple[Any, list[str]]:
    """The JSON value in a model's answer, and notes of the repairs it took."""
    notes: list[str] = []
    if not isinstance(text, str) or not text.strip():
        raise AnswerError("the answer was empty; reply with the JSON object only")
    body = _THINK.sub("", text)
    fenced = [m.group(1) for m in _FENCE.finditer(body) if m.group(1).strip()]
    candidates = fenced + [body] if fenced else [body]
    if fenced:
        notes.append("removed markdown fences")
    last_error = "no JSON object or array found in the answer"
    for candidate in candidates:
        start = _first_bracket(candidate)
        if start is None:
            continue
        if candidate[:start].strip() and not fenced:
            notes.append("removed text before the JSON")
        try:
            value, more = _repair_and_load(candidate[start:])
        except AnswerError as exc:
            last_error = str(exc)
            continue
        return value, notes + more
    raise AnswerError(last_error + "; reply with ONE valid JSON value, no markdown and no commentary")


def _first_bracket(text: str) -> int | None:
    positions = [p for p in (text.find("{"), text.find("[")) if p >= 0]
    return min(positions) if positions else None


def _repair_and_load(text: str) -> tuple[Any, list[str]]:
    normal, ends, complete_at, changes = _normalise(text)
    notes = list(changes)
    if complete_at is not None:
        try:
            return json.loads(normal[:complete_at]), notes
        except json.JSONDecodeError as exc:
            raise AnswerError(f"the JSON is malformed ({exc.msg} at character {exc.pos})") from exc
    # truncated: cut back to the last complete value and close what is still open
    for tries, (pos, closers) in enumerate(reversed(ends)):
        if tries >= _MAX_TRUNCATION_TRIES:
            break
        try:
            value = json.loads(normal[:pos] + closers)
        except json.JSONDecodeError:
            continue
        return value, notes + ["closed a truncated JSON answer (the end was cut off)"]
    raise AnswerError("the JSON answer is cut off and cannot be completed; give a shorter answer")


def _normalise(text: str) -> tuple[str, list[tuple[int, str]], int | None, set[str]]:
    """Rewrite near-JSON into JSON, character by character.

    Returns the rewritten text, the cut points where a value had just ended (position and
    the brackets that would close the document there), the end of the first complete
    top-level value (or None when the text is truncated) and the kinds of changes made.
    """
    out: list[str] = []
    stack: list[str] = []
    ends: list[tuple[int, str]] = []
    changes: set[str] = set()
    i, n = 0, len(text)

    def closers() -> str:
        return "".join("}" if c == "{" else "]" for c in reversed(stack))

    def mark_end() -> None:
        ends.append((sum(map(len, out)), closers()))

    while i < n:
        ch = text[i]
        if ch in "{[":
            stack.append(ch)
            out.append(ch)
            i += 1
        elif ch in "}]":
            _drop_trailing_comma(out, changes)
            if not stack:
                break
            stack.pop()
            out.append("}" if ch == "}" else "]")
            i += 1
            mark_end()
            if not stack:
                return "".join(out), ends, sum(map(len, out)), changes
        elif ch in "\"'":
            string, i, closed = _read_string(text, i)
            if ch == "'":
                changes.add("turned single-quoted strings into JSON strings")
            out.append(string)
            if not closed:
                ends.append((sum(map(len, out)), closers()))
                break
            mark_end()
        elif ch == "/" and text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
            changes.add("removed comments")
        elif ch == "/" and text.startswith("/*", i):
            close = text.find("*/", i + 2)
            i = n if close < 0 else close + 2
            changes.add("removed comments")
        elif ch.isalpha() or ch == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] in "_-"):
                j += 1
            word = text[i:j]
            rest = text[j:].lstrip()
            if rest.startswith(":") and stack and stack[-1] == "{":
                out.append(json.dumps(word))
                changes.add("quoted bare keys")
            elif word in _LITERALS:
                out.append(_LITERALS[word])
                if word not in ("true", "false", "null"):
                    changes.add("replaced Python literals")
                mark_end()
            else:  # a bare word as a value: keep it as a string
                out.append(json.dumps(word))
                changes.add("quoted bare words")
                mark_end()
            i = j
        elif ch in "-0123456789.":
            j = i + 1
            while j < n and (text[j].isdigit() or text[j] in ".eE+-"
                             or (text[j] == ":" and j + 1 < n and text[j + 1].isdigit())):
                j += 1
            number = text[i:j]
            if ":" in number:  # an unquoted clock time, 00:01:05
                out.append(json.dumps(number))
                changes.add("quoted bare words")
                i = j
            elif j < n and text[j].isalpha():  # "12s", "3rd": not a number
                k = j
                while k < n and (text[k].isalnum() or text[k] in "_."):
                    k += 1
                out.append(json.dumps(text[i:k]))
                changes.add("quoted bare words")
                i = k
            else:
                out.append(_clean_number(number))
                i = j
            mark_end()
        else:
            out.append(ch)
            i += 1
    return "".join(out), ends, None, changes


def _read_string(text: str, i: int) -> tuple[str, int, bool]:
    """A string literal starting at ``text[i]`` as a JSON string, the index after it, and
    whether it was closed before the text ended."""
    quote = text[i]
    j = i + 1
    chars: list[str] = []
    n = len(text)
    while j < n:
        c = text[j]
        if c == "\\" and j + 1 < n:
            nxt = text[j + 1]
            if nxt == "'" and quote == "'":
                chars.append("'")
            elif nxt in "\"\\/bfnrtu":
                chars.append(c + nxt)
            else:
                chars.append("\\\\" + nxt)
            j += 2
            continue
        if c == quote:
            return '"' + "".join(chars) + '"', j + 1, True
        if c == '"':
            chars.append('\\"')
        elif c == "\n":
            chars.append("\\n")
        elif c == "\t":
            chars.append("\\t")
        elif ord(c) < 0x20:
            chars.append(f"\\u{ord(c):04x}")
        else:
            chars.append(c)
        j += 1
    body = "".join(chars)
    if body.endswith("\\"):
        body = body[:-1]
    return '"' + body + '"', n, False


def _drop_trailing_comma(out: list[str], changes: set[str]) -> None:
    k = len(out) - 1
    while k >= 0 and out[k].isspace():
        k -= 1
    if k >= 0 and out[k] == ",":
        del out[k]
        changes.add("removed trailing commas")


def _clean_number(number: str) -> str:
    try:
        value = float(number)
    except ValueError:
        return json.dumps(number)
    if value != value or value in (float("inf"), float("-inf")):
        return "null"
    if re.fullmatch(r"-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?", number):
        return number
    return repr(value)  # "01", ".5", "5." -> a JSON number


# --- validating against a response model --------------------------------------------------------


def parse_answer(text: str, model: type[M]) -> tuple[M, list[str]]:
    """Validate a model's answer against ``model``: the answer and notes of what was repaired.

    Invalid list items are dropped (and noted); ``AnswerError`` when what is left does not
    fit ``model``.
    """
    value, notes = extract_json(text)
    value = _reshape(value, model, notes)
    if not isinstance(value, dict):
        raise AnswerError(f"expected a JSON object with keys {_keys(model)}, got {type(value).__name__}")
    cleaned = dict(value)
    for name, field in model.model_fields.items():
        item_model = _list_item_model(field.annotation)
        raw = cleaned.get(name, cleaned.get(field.alias or name))
        if item_model is None or raw is None:
            continue
        if isinstance(raw, dict):
            raw = [raw]
            notes.append(f"wrapped a single object in {name} into a list")
        if not isinstance(raw, list):
            notes.append(f"dropped {name}: expected a list, got {type(raw).__name__}")
            cleaned[name] = []
            continue
        kept = []
        for index, item in enumerate(raw):
            try:
                kept.append(item_model.model_validate(item))
            except ValidationError as exc:
                notes.append(f"dropped {name}[{index}]: {_first_error(exc)}")
        cleaned[name] = kept
    try:
        answer = model.model_validate(cleaned)
    except ValidationError as exc:
        raise AnswerError(f"the JSON does not match the schema: {_first_error(exc, limit=3)}") from exc
    return answer, notes


def _reshape(value: Any, model: type[BaseModel], notes: list[str]) -> Any:
    list_fields = [n for n, f in model.model_fields.items() if _list_item_model(f.annotation)]
    if isinstance(value, list) and list_fields:
        notes.append(f"took a bare list as {list_fields[0]}")
        return {list_fields[0]: value}
    if isinstance(value, dict) and len(value) == 1 and not set(value) & set(model.model_fields):
        inner = next(iter(value.values()))
        if isinstance(inner, dict) and set(inner) & set(model.model_fields):
            notes.append(f"unwrapped the answer from key {next(iter(value))!r}")
            return inner
        if isinstance(inner, list) and len(list_fields) == 1:
            notes.append(f"took key {next(iter(value))!r} as {list_fields[0]}")
            return {list_fields[0]: inner}
    return value


def _list_item_model(annotation: Any) -> type[BaseModel] | None:
    if getattr(annotation, "__origin__", None) is list:
        (arg,) = annotation.__args__
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
    return None


def _keys(model: type[BaseModel]) -> str:
    return ", ".join(model.model_fields)


def _first_error(exc: ValidationError, limit: int = 1) -> str:
    parts = []
    for err in exc.errors()[:limit]:
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        parts.append(f"{where}: {err['msg']}")
    more = len(exc.errors()) - limit
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")


# --- labels ------------------------------------------------------------------------------------------

_SYNONYMS = {
    # spatial-attribute
    "LOCATED_AT": "LOCATED_IN", "LOCATED_ON": "LOCATED_IN", "IN": "LOCATED_IN", "INSIDE": "LOCATED_IN",
    "ON": "LOCATED_IN", "AT": "LOCATED_IN", "IS_IN": "LOCATED_IN", "LOCATION": "LOCATED_IN",
    "NEAR": "NEXT_TO", "BESIDE": "NEXT_TO", "ADJACENT_TO": "NEXT_TO", "NEXT": "NEXT_TO", "CLOSE_TO": "NEXT_TO",
    "ATTACHED": "ATTACHED_TO", "CONNECTED_TO": "ATTACHED_TO", "HOLDS": "ATTACHED_TO", "WEARS": "ATTACHED_TO",
    "PART": "PART_OF", "BELONGS_TO": "PART_OF", "MEMBER_OF": "PART_OF", "COMPONENT_OF": "PART_OF",
    "SAME_AS": "IS_SAME_AS", "IDENTICAL_TO": "IS_SAME_AS", "SAME": "IS_SAME_AS", "IS": "IS_SAME_AS",
    "ANNOTATE": "ANNOTATES", "LABELS": "ANNOTATES", "DESCRIBES": "ANNOTATES", "SHOWN_ON": "ANNOTATES",
    # subject-object
    "PERFORM": "PERFORMS", "PERFORMED": "PERFORMS", "DOES": "PERFORMS", "AGENT": "PERFORMS", "SUBJECT": "PERFORMS",
    "ACTOR": "PERFORMS", "INITIATES": "PERFORMS",
    "RECEIVE": "RECEIVES", "RECEIVED": "RECEIVES", "PATIENT": "RECEIVES", "OBJECT": "RECEIVES",
    "TARGET": "RECEIVES", "UNDERGOES": "RECEIVES", "AFFECTED_BY": "RECEIVES",
    "USES": "USES_TOOL", "USE_TOOL": "USES_TOOL", "INSTRUMENT": "USES_TOOL", "TOOL": "USES_TOOL",
    "HAPPENS_AT": "HAPPENS_IN", "OCCURS_IN": "HAPPENS_IN", "TAKES_PLACE_IN": "HAPPENS_IN", "HAPPEN_IN": "HAPPENS_IN",
    "CONTEXT": "CONTEXT_FOR",
    # temporal-causal
    "PRECEDES": "BEFORE", "THEN": "BEFORE", "FOLLOWED_BY": "BEFORE", "NEXT_EVENT": "BEFORE",
    "OVERLAPS": "OVERLAP", "OVERLAPS_WITH": "OVERLAP", "DURING": "OVERLAP", "SIMULTANEOUS": "OVERLAP",
    "CAUSE": "CAUSES", "CAUSED": "CAUSES", "LEADS_TO_EVENT": "CAUSES", "TRIGGERS": "CAUSES", "RESULTS_IN": "CAUSES",
    "PREVENT": "PREVENTS", "BLOCKS": "PREVENTS", "STOPS": "PREVENTS",
    "PART_OF_EVENT": "SUBEVENT_OF", "SUB_EVENT_OF": "SUBEVENT_OF",
    # macro / super
    "ENABLE": "ENABLES", "ALLOWS": "ENABLES", "PREREQUISITE_FOR": "ENABLES",
    "LEAD_TO": "LEADS_TO", "PROGRESSES_TO": "LEADS_TO", "LEADS": "LEADS_TO",
    "RESOLVE": "RESOLVES", "CONTRASTS": "CONTRASTS_WITH", "CONTRAST": "CONTRASTS_WITH",
    "CONTRAST_WITH": "CONTRASTS_WITH",
}
# Written the other way round: swap source and target, then use the label.
_REVERSED = {"AFTER": "BEFORE", "FOLLOWS": "BEFORE", "CAUSED_BY": "CAUSES", "RESULT_OF": "CAUSES",
             "PREVENTED_BY": "PREVENTS", "ENABLED_BY": "ENABLES", "PERFORMED_BY": "PERFORMS",
             "CONTAINS_PART": "PART_OF", "HAS_PART": "PART_OF", "CONTAINS": "LOCATED_IN",
             "RESOLVED_BY": "RESOLVES", "ANNOTATED_BY": "ANNOTATES", "USED_BY": "USES_TOOL"}


def label_key(label: str) -> str:
    return re.sub(r"[^A-Z0-9]+", "_", str(label).strip().upper()).strip("_")


def canonical_label(label: str, allowed: frozenset[str] | set[str]) -> tuple[str | None, bool]:
    """``(label, reversed)``: the schema label meant by ``label``, and whether the edge was
    written the other way round; ``(None, False)`` when it names nothing in ``allowed``."""
    key = label_key(label)
    if key in allowed:
        return key, False
    if _SYNONYMS.get(key) in allowed:
        return _SYNONYMS[key], False
    if _REVERSED.get(key) in allowed:
        return _REVERSED[key], True
    return None, False
