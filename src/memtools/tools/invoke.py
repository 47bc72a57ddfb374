"""One adapter from a raw tool call to what a front end shows: ``ToolSpec.invoke(tools, raw_args)``.

Every front end (the MCP server, the LangChain tools, the ORA ``act`` node, the CLI) calls the
tools through here, so arguments are checked one way and the model reads the same words for
the same mistake wherever it runs:

- arguments are strict: an unknown name ("did you mean 'top_k'?") or a wrong JSON type
  (``true`` or ``"5"`` for an integer) is an error, never silently dropped or converted;
  ``null`` for an argument that has a default means "not given", ``5.0`` for an integer is 5,
  and a list sent as a JSON string (a habit of some clients) is read as that list;
- every failure the model should react to comes back as a ``ToolOutcome`` with an error
  ``kind`` (``bad-arguments``, ``not-found``, ``busy``) and one line of text; developer
  errors (a broken store) still raise.
"""

from __future__ import annotations

import difflib
import json
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ValidationError

from memtools.errors import MemoryBusy, ToolError, ToolErrorKind
from memtools.tools import messages as msg
from memtools.tools.results import ToolResult
from memtools.tools.text import clip

if TYPE_CHECKING:
    from memtools.tools.core import MemoryTools


class Spec(Protocol):
    """What this module needs of a ``memtools.tools.specs.ToolSpec`` (a protocol, as specs imports this module)."""

    @property
    def name(self) -> str: ...

    @property
    def args(self) -> type[BaseModel]: ...

    @property
    def method(self) -> Callable[..., Any]: ...

MAX_PROBLEMS = 3
"""Argument problems named in one error line (the rest are counted)."""

ERROR_PREFIX = "Tool error from {tool}: "

_EXPECTED = {
    "int_type": "an integer", "int_parsing": "an integer", "int_from_float": "a whole number",
    "float_type": "a number", "float_parsing": "a number", "string_type": "a string", "list_type": "a list",
    "bool_type": "true or false", "bool_parsing": "true or false", "dict_type": "an object",
    "model_type": "an object",
}
_SUBJECTS = {"Input", "String", "List", "Value", "Dictionary", "Tuple", "Set"}
_JSON_KIND = ((bool, "a boolean"), (str, "a string"), (int, "a number"), (float, "a number"), (list, "a list"),
              (tuple, "a list"), (dict, "an object"), (type(None), "null"))


@dataclass(frozen=True)
class ToolOutcome:
    """One tool call as every front end shows it.

    ``text`` is what the model reads: the rendered result, or ``"Tool error from <tool>:
    <message>"``. ``data`` is the result as JSON-ready structured content (no image bytes),
    ``images`` the JPEG frames of ``inspect_frames``, ``result`` the typed result. On failure
    ``error`` says which kind and ``message`` is the bare one-line explanation.
    """

    tool: str
    text: str
    data: dict[str, Any] | None = None
    images: tuple[bytes, ...] = ()
    result: ToolResult | None = None
    error: ToolErrorKind | None = None
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None

    @classmethod
    def failure(cls, tool: str, kind: ToolErrorKind, message: str) -> ToolOutcome:
        return cls(tool=tool, text=ERROR_PREFIX.format(tool=tool) + message, error=kind, message=message)

    @classmethod
    def success(cls, tool: str, result: ToolResult) -> ToolOutcome:
        return cls(tool=tool, text=result.render(), data=result.model_dump(mode="json"),
                   images=tuple(getattr(result, "images", None) or ()), result=result)


def invoke(spec: Spec, tools: MemoryTools, arguments: Mapping[str, Any] | BaseModel | Any, *,
           strict: bool = True) -> ToolOutcome:
    """Check ``arguments`` against the spec's model, run the tool, and say how it went."""
    try:
        args = parse_arguments(spec, arguments, strict=strict)
        result = spec.method(tools, **args.model_dump())
    except ToolError as exc:
        return ToolOutcome.failure(spec.name, exc.kind, str(exc))
    except MemoryBusy:
        return ToolOutcome.failure(spec.name, "busy", msg.BUSY)
    return ToolOutcome.success(spec.name, result)


def parse_arguments(spec: Spec, arguments: Mapping[str, Any] | BaseModel | Any, *, strict: bool = True,
                    name_of: Callable[[str], str] = str) -> BaseModel:
    """The spec's argument model from raw arguments, or a ``ToolError`` naming each problem in one line.

    ``strict`` (for JSON callers) refuses conversions such as ``"5"`` -> 5; the CLI, whose
    values are all strings, parses leniently. ``name_of`` spells a field in messages (the
    CLI says ``--top-k``).
    """
    model = spec.args
    if isinstance(arguments, model):
        return arguments
    if not isinstance(arguments, Mapping):
        raise ToolError(msg.ARGUMENTS_NOT_AN_OBJECT.format(tool=spec.name, value=_shown(arguments)))
    try:
        return model.model_validate(_normalised(model, arguments), strict=strict)
    except ValidationError as exc:
        raise ToolError(describe_errors(spec.name, model, exc, name_of)) from None


def is_list_field(annotation: object) -> bool:
    """Whether a field's type is a list (also inside ``X | None``)."""
    if typing.get_origin(annotation) is list:
        return True
    return any(is_list_field(arg) for arg in typing.get_args(annotation))


def _is_int_field(annotation: object) -> bool:
    """Whether a field's type is an integer (also inside ``X | None``)."""
    return annotation is int or any(_is_int_field(arg) for arg in typing.get_args(annotation))


def _normalised(model: type[BaseModel], arguments: Mapping[str, Any]) -> dict[str, Any]:
    """``null`` for a field with a default is left out; a JSON list sent as a string becomes the list; a whole
    number written as ``5.0`` is the integer 5 (JSON has one number type, and some model APIs send every
    number as a float)."""
    out: dict[str, Any] = {}
    for name, value in arguments.items():
        field = model.model_fields.get(name)
        if field is not None and value is None and not field.is_required():
            continue
        if field is not None and isinstance(value, float) and value.is_integer() and _is_int_field(field.annotation):
            value = int(value)
        if field is not None and isinstance(value, str) and value.lstrip().startswith("[") \
                and is_list_field(field.annotation):
            try:
                decoded = json.loads(value)
            except ValueError:
                decoded = None
            value = decoded if isinstance(decoded, list) else value
        out[name] = value
    return out


def describe_errors(tool: str, model: type[BaseModel], exc: ValidationError,
                    name_of: Callable[[str], str] = str) -> str:
    """One line for the model (or the shell user) naming each wrong argument and what it should be."""
    fields = list(model.model_fields)
    problems: list[str] = []
    listed = False
    for error in sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden"):  # unknown names first
        loc = [str(p) for p in error["loc"]]
        name = name_of(loc[0]) + "".join(f"[{p}]" for p in loc[1:]) if loc else "arguments"
        kind = error["type"]
        if kind == "extra_forbidden":
            close = difflib.get_close_matches(loc[0], fields, n=1, cutoff=0.6)
            suggestion = msg.DID_YOU_MEAN.format(name=name_of(close[0])) if close else ""
            problems.append(msg.UNKNOWN_ARGUMENT.format(name=name, tool=tool, suggestion=suggestion))
            if not listed:
                problems.append(msg.TOOL_ARGUMENTS.format(allowed=", ".join(map(name_of, fields)))
                                if fields else msg.NO_ARGUMENTS)
                listed = True
        elif kind == "missing":
            problems.append(msg.MISSING_ARGUMENT.format(name=name, tool=tool))
        elif kind == "finite_number":
            problems.append(msg.NOT_FINITE.format(name=name, value=_shown(error["input"])))
        elif kind in _EXPECTED:
            problems.append(msg.WRONG_TYPE.format(name=name, expected=_EXPECTED[kind],
                                                  value=_shown(error["input"], with_kind=kind.endswith("_type"))))
        else:
            first, _, rest = error["msg"].removeprefix("Value error, ").partition(" ")
            problem = rest if first in _SUBJECTS else f"{first} {rest}".strip() or "is not valid"
            problems.append(msg.BAD_VALUE.format(name=name, problem=problem, value=_shown(error["input"])))
    more = len(problems) - MAX_PROBLEMS
    return "; ".join(problems[:MAX_PROBLEMS]) + (f"; and {more} more problem(s)" if more > 0 else "")


def _shown(value: Any, with_kind: bool = False) -> str:
    """A value as the caller wrote it (JSON), shortened, with what UTF-8 cannot carry escaped; optionally with its
    JSON type."""
    if isinstance(value, str) and len(value) > 60:
        text = json.dumps(value[:40] + "…", ensure_ascii=False) + f" ({len(value)} characters)"
    else:
        try:
            text = clip(json.dumps(value, ensure_ascii=False, default=repr), 80)
        except ValueError:  # a circular structure
            text = clip(repr(value), 80)
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")  # a lone surrogate shown as \ud800, sendable
    if not with_kind:
        return text
    kind = next((k for t, k in _JSON_KIND if isinstance(value, t)), type(value).__name__)
    return f"{text} ({kind})" if kind != "null" else text


__all__ = ["ToolOutcome", "describe_errors", "invoke", "is_list_field", "parse_arguments"]
