"""Every tool of the catalogue as an MCP tool, generated from ``TOOL_SPECS`` and run through ``ToolSpec.invoke``.

Each tool is registered with a function whose ``__signature__`` is made from the fields of the
spec's argument model and whose return annotation is ``Annotated[CallToolResult, <result
model>]`` (the SDK publishes the result model as the output schema). Calls do not go through
the SDK's own (lenient) argument parsing: the server hands the raw arguments to ``call`` below,
which checks them strictly with the spec (unknown names and wrong JSON types are errors, as the
published ``additionalProperties: false`` input schema says) and converts the ``ToolOutcome``:
the rendered text plus structured content, or an ``is_error`` result of one clear line.
"""

from __future__ import annotations

import base64
import contextlib
import inspect
import logging
from collections.abc import Callable, Iterator
from typing import Annotated, Any, get_type_hints

from mcp.types import CallToolResult, ContentBlock, ImageContent, TextContent, ToolAnnotations
from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema

from memtools.errors import IncompatibleMemory, MemoryBusy, MemoryNotFound, MemtoolsError, ToolError
from memtools.mcp.limits import IMAGE_BYTES_LIMIT, MAX_RESULT_CHARS, NARROW_HINT, cap_structured, cap_text
from memtools.mcp.sdk import ResourceError, ResourceNotFoundError
from memtools.mcp.uris import frame_uri, keyframe_uri
from memtools.tools import FrameItem, Frames, ToolOutcome, ToolSpec
from memtools.tools import messages as msg
from memtools.tools.frames_search import FrameMatch, FrameMatches
from memtools.tools.provider import ToolsProvider, held
from memtools.tools.results import ToolResult
from memtools.tools.specs import Hints
from memtools.tools.text import clip, hms

log = logging.getLogger(__name__)

META = {"anthropic/maxResultSizeChars": MAX_RESULT_CHARS}
NOT_UNICODE = ("{name} holds a lone surrogate (half of a UTF-16 pair), which is no character and which UTF-8 cannot "
               "carry: {value}; send real text")
ERROR_KIND_META = "memtools/errorKind"
"""``_meta`` key of an ``is_error`` result: ``bad-arguments``, ``not-found``, ``busy`` or ``unavailable``."""


class FrameOut(FrameItem):
    uri: str = Field(description="memtools:// resource holding this frame as JPEG; read it when images are not shown")
    image: bool = Field(description="Whether this result carries the frame as an image block")


class FramesOut(Frames):
    """``inspect_frames`` as structured content: the frames without their bytes, each with its resource URI."""

    frames: list[FrameOut]  # type: ignore[assignment]  # a narrower item type; mypy holds lists invariant
    images: SkipJsonSchema[list[bytes]] = Field(default_factory=list, exclude=True, repr=False)


class FrameMatchOut(FrameMatch, FrameOut):
    pass


class FrameMatchesOut(FrameMatches):
    """``search_frames`` as structured content, like ``FramesOut``."""

    frames: list[FrameMatchOut]  # type: ignore[assignment]
    images: SkipJsonSchema[list[bytes]] = Field(default_factory=list, exclude=True, repr=False)


FRAME_OUTPUTS: dict[type, tuple[type[Frames], type[FrameOut]]] = {
    Frames: (FramesOut, FrameOut), FrameMatches: (FrameMatchesOut, FrameMatchOut)}


def call(spec: ToolSpec, tools: ToolsProvider, arguments: Any, *, structured_images: bool = True) -> CallToolResult:
    """One tool call with the client's raw arguments: a result, or an ``is_error`` result the model can act on."""
    try:
        with held(tools) as current:  # a replica keeps this version open until the call ends
            outcome = spec.invoke(current, arguments)
    except (MemoryNotFound, IncompatibleMemory) as exc:
        outcome = ToolOutcome.failure(spec.name, "unavailable", msg.MEMORY_UNAVAILABLE.format(reason=exc))
    except MemtoolsError as exc:  # a store that fails: the translated message, never the engine's
        log.warning("tool %s failed: %s", spec.name, exc, exc_info=True)
        outcome = ToolOutcome.failure(spec.name, "unavailable", msg.MEMORY_FAILED.format(reason=exc))
    if not outcome.ok:
        log.info("tool %s: %s error: %s", spec.name, outcome.error, outcome.message)
        return CallToolResult(content=[TextContent(type="text", text=outcome.text)], isError=True,
                              _meta={ERROR_KIND_META: outcome.error})
    result = outcome.result
    assert result is not None  # a successful outcome carries its result
    return frames_result(result, structured=structured_images) if isinstance(result, Frames) else tool_result(result)


def tool_annotations(hints: Hints) -> ToolAnnotations:
    """MCP's tool annotations for what a tool does to the memory (``ToolSpec.hints``; tests/test_tool_hints.py
    checks each against the memory before and after the call)."""
    return ToolAnnotations(readOnlyHint=hints.read_only, destructiveHint=hints.destructive,
                           idempotentHint=hints.idempotent, openWorldHint=hints.open_world)


def _sendable(value: Any) -> Any:
    """``value`` with every string that UTF-8 cannot carry (a lone surrogate, e.g. echoed from a refused argument)
    escaped as ``\\ud800``, so no answer fails to serialise (over HTTP: a 500)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, dict):
        return {_sendable(k): _sendable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_sendable(v) for v in value]
    return value


def sendable_text(text: str) -> str:
    """``text`` with what UTF-8 cannot carry escaped (``_sendable``)."""
    return _sendable(text)


def unsendable(arguments: Any, path: str = "") -> tuple[str, str] | None:
    """The first argument (``text``, ``ids[2]``) holding a string UTF-8 cannot carry (a lone surrogate), with that
    string escaped and shortened; ``None`` when every string is real text."""
    if isinstance(arguments, str):
        shown = _sendable(arguments)
        return None if shown is arguments else (path or "arguments", f'"{clip(shown, 60)}"')
    items = arguments.items() if isinstance(arguments, dict) else enumerate(arguments) \
        if isinstance(arguments, list) else ()
    for key, value in items:
        found = unsendable(key) if isinstance(key, str) else None
        where = f"{path}[{key}]" if isinstance(key, int) else f"{path}.{_sendable(key)}" if path else _sendable(key)
        if found is not None:
            return f"the name of {where}", found[1]
        found = unsendable(value, where)
        if found is not None:
            return found
    return None


def sendable(result: Any) -> Any:
    """A ``CallToolResult`` whose text and structured content UTF-8 can carry (``_sendable``); others as they are."""
    if not isinstance(result, CallToolResult):
        return result
    data = result.model_dump(by_alias=True, exclude_none=True)
    clean = _sendable(data)
    return result if clean == data else CallToolResult.model_validate(clean)


@contextlib.contextmanager
def resource_errors() -> Iterator[None]:
    """Tool errors as resource errors: a wrong or missing id is "not found", a busy or unreadable memory is not."""
    try:
        yield
    except ToolError as exc:
        raise (ResourceError if exc.kind in ("busy", "unavailable") else ResourceNotFoundError)(str(exc)) from exc
    except MemoryBusy as exc:
        raise ResourceError(msg.BUSY) from exc
    except (MemoryNotFound, IncompatibleMemory) as exc:
        raise ResourceError(msg.MEMORY_UNAVAILABLE.format(reason=exc)) from exc


def input_schema(spec: ToolSpec) -> dict[str, Any]:
    """The published input schema: the spec's argument model, closed to other names."""
    schema = spec.args.model_json_schema()
    schema["additionalProperties"] = False
    return schema


def signature(spec: ToolSpec) -> inspect.Signature:
    """Keyword-only parameters from the spec's argument model; returns ``CallToolResult`` of the result model."""
    params = []
    for name, field in spec.args.model_fields.items():
        # built at run time for the SDK's signature reader, which mypy cannot follow
        parts = (field.annotation, *field.metadata, Field(description=field.description))
        annotation = Annotated[parts]  # type: ignore[valid-type]
        default = inspect.Parameter.empty if field.is_required() else field.get_default(call_default_factory=True)
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation))
    return inspect.Signature(params, return_annotation=Annotated[CallToolResult, output_model(spec)])


def returns_images(spec: ToolSpec) -> bool:
    """Whether the tool answers with frames (``inspect_frames``, ``search_frames``)."""
    return get_type_hints(spec.method)["return"] in FRAME_OUTPUTS


def output_model(spec: ToolSpec) -> type[BaseModel]:
    result = get_type_hints(spec.method)["return"]
    return FRAME_OUTPUTS[result][0] if result in FRAME_OUTPUTS else result


def tool_function(spec: ToolSpec, tools: ToolsProvider, *,
                  structured_images: bool = True) -> Callable[..., CallToolResult]:
    """A sync function to register with the SDK (its signature gives the output schema); it runs ``call``."""

    def run(**arguments: Any) -> CallToolResult:
        return call(spec, tools, arguments, structured_images=structured_images)

    run.__name__ = run.__qualname__ = spec.name
    run.__doc__ = spec.description
    run.__signature__ = signature(spec)  # type: ignore[attr-defined]
    return run


def _structured(model: BaseModel) -> tuple[dict[str, Any], str]:
    data, cuts = cap_structured(model.model_dump(mode="json"))
    note = f"\n(Structured content shortened: {'; '.join(cuts)}; {NARROW_HINT}.)" if cuts else ""
    return data, note


def tool_result(result: ToolResult) -> CallToolResult:
    """Rendered text for the model plus the result as structured content, both within the limits."""
    data, note = _structured(result)
    return CallToolResult(content=[TextContent(type="text", text=cap_text(result.render() + note))],
                          structuredContent=data)


def frames_result(frames: Frames, *, structured: bool = True) -> CallToolResult:
    """Text that stands alone (times, macro events, resource URIs), then per frame a caption naming its resource
    URI, then the image as embedded base64 JPEG.

    Several clients drop image blocks, so nothing is said only by an image. The URIs go as text, not
    ``resource_link`` blocks: langchain-mcp-adapters turns an image ``resource_link`` into an image
    *URL* block (``memtools://...``) that no model provider can fetch, and any other link into a
    file block with that URL; text and base64 images survive every client.
    """
    out_model, item_model = FRAME_OUTPUTS[type(frames)]
    n = len(frames.frames)
    items: list[FrameOut] = []
    blocks: list[ContentBlock] = []
    used = 0
    for i, (item, jpeg) in enumerate(zip(frames.frames, frames.images, strict=True), 1):
        uri = keyframe_uri(item.keyframe_id) if item.keyframe_id else frame_uri(frames.video_id, item.t)
        fits = used + len(jpeg) <= IMAGE_BYTES_LIMIT
        used += len(jpeg) if fits else 0
        items.append(item_model(**item.model_dump(), uri=uri, image=fits))
        where = f" in {item.macro_id} ({clip(item.macro_label, 70)})" if item.macro_id else ""
        name = f" {item.keyframe_id}" if isinstance(item, FrameMatch) else ""
        caption = f"Frame {i}/{n}{name} at {hms(item.t)} ({item.t:.1f} s){where}; resource {uri}"
        if not fits:
            caption += " (image left out to keep this result small; read that resource)"
        blocks.append(TextContent(type="text", text=caption))
        if fits:
            blocks.append(ImageContent(type="image", data=base64.b64encode(jpeg).decode(), mimeType="image/jpeg"))
    out = out_model(**frames.model_dump(exclude={"frames"}), frames=items)
    data, note = _structured(out)
    text = out.render()
    if items:
        text += "\nThe frames follow as images; each is also a JPEG resource:\n"
        text += "\n".join(f"{i}. {f.uri}" for i, f in enumerate(items, 1))
    return CallToolResult(content=[TextContent(type="text", text=cap_text(text + note)), *blocks],
                          structuredContent=data if structured else None)
