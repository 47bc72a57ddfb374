"""What the ORA loop carries from round to round, and what it is configured with.

``ORAState`` is the graph state: plain JSON-able values, so any LangGraph checkpointer can
store it. Raw tool observations live in it for one round only (``observation``); what
persists is ``useful_info``, the clue the model distilled from each observation (MEMDREAMER
Eqs. 2-3: ``c_t = R(o_t, Q)``, ``H_t = H_{t-1} ∪ {(a_t, c_t)}``), plus a small exploration
history. The gold answer has no field here: ``ORAInput`` (question, options, scope) is all the
graph accepts.

``ORAContext`` is the run-time context (LangGraph ``context_schema``): the tool core, the chat
model and the loop's settings. It never enters the state, so a checkpointer never sees a
database handle or a model client.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ConfigDict
from pydantic.json_schema import SkipJsonSchema
from typing_extensions import NotRequired, Required, TypedDict

from memtools.tools import MemoryTools

Protocol = Literal["auto", "tools", "json"]
Status = Literal["answered", "forced", "no_answer"]


class ToolCall(TypedDict):
    """One action a_t: a tool name from ``TOOL_SPECS`` and the model's arguments."""

    tool: str
    args: dict[str, Any]
    notes: NotRequired[list[str]]  # remarks for the next observation (e.g. extra calls ignored)


class Clue(TypedDict):
    """One (a_t, c_t) pair: the call whose observation was read and what was kept of it."""

    round: int
    source: str  # the call, rendered ("search_nodes(query='pan fire')"), or "overview"
    text: str


class Exploration(TypedDict):
    """What the agent has already tried, shown back to it so it does not repeat itself."""

    queries: list[str]  # search_nodes queries and search_by_time windows
    calls: list[str]  # every rendered call, in order
    macros_found: list[str]  # macro ids that appeared in any observation
    macros_opened: list[str]  # macro ids passed to get_subgraph


class ORAInput(TypedDict, total=False):
    """What a caller gives the graph. There is deliberately no field for a gold answer.

    On a thread with a checkpointer, pass ``options`` and ``scope`` with every question:
    LangGraph keeps the previous run's value of a key the input leaves out.
    """

    question: Required[str]
    options: dict[str, str]  # letter -> option text; empty for an open question
    scope: list[str]  # video ids the question is about; empty = the whole memory


class ORAState(TypedDict, total=False):
    question: Required[str]
    options: dict[str, str]
    scope: list[str]
    round: int  # tool rounds done; the observation in hand is o_round (o_0 = the overview)
    observation: str | None  # o_round as text; replaced every round, never accumulated
    observation_source: str  # the call that produced it ("overview" for round 0)
    observation_images: list[str]  # base64 JPEGs from inspect_frames, only when images are on
    useful_info: list[Clue]
    exploration: Exploration
    pending: ToolCall | None  # the action reason chose, for act to run
    result: dict[str, Any] | None  # what act got back (text, ok, images), for observe to turn into o_t
    failure: str | None  # why the last reason round produced no usable decision
    answer: str | None
    reasoning: str
    status: Status | None  # set by the answer node; a new run on the same thread starts over
    trace: list[dict[str, Any]]  # one record per reason / act / answer step, in order


class ORAOutput(TypedDict, total=False):
    question: str
    options: dict[str, str]
    scope: list[str]
    round: int
    answer: str | None
    reasoning: str
    status: Status
    useful_info: list[Clue]
    exploration: Exploration
    trace: list[dict[str, Any]]


def empty_exploration() -> Exploration:
    return Exploration(queries=[], calls=[], macros_found=[], macros_opened=[])


_BOUND: weakref.WeakKeyDictionary[ORAContext, tuple[str, Any]] = weakref.WeakKeyDictionary()
_BIND_LOCK = threading.Lock()


@dataclass(eq=False)
class ORAContext:
    """The ORA loop's run-time context: pass it as ``graph.invoke(..., context=ORAContext(...))``.

    ``tools``: the tool core over a memory. ``model``: any LangChain chat model.
    ``max_rounds`` (T_max): tool calls before the answer is forced. ``top_k``: search hits
    when the model does not say. ``protocol``: ``"tools"`` (native tool calling), ``"json"``
    (the JSON reply of MEMDREAMER Fig. 10) or ``"auto"`` (tools when the model has
    ``bind_tools``). ``max_retries``: re-asks after a malformed reply, with the error fed back.
    ``images``: offer ``inspect_frames`` and show its frames to a multimodal model.
    ``observation_chars`` / ``notes_chars``: the per-round prompt budget for the observation
    and for the carried notes.
    """

    __pydantic_config__ = ConfigDict(arbitrary_types_allowed=True)  # for LangGraph's context JSON schema

    tools: SkipJsonSchema[MemoryTools]
    model: SkipJsonSchema[Any]  # a langchain_core BaseChatModel
    max_rounds: int = 12
    top_k: int = 10
    protocol: Protocol = "auto"
    max_retries: int = 2
    images: bool = False
    tool_choice: str | None = "any"
    observation_chars: int = 4200
    notes_chars: int = 2600

    def __post_init__(self) -> None:
        if self.max_rounds < 1:
            raise ValueError(f"max_rounds must be at least 1, not {self.max_rounds}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, not {self.max_retries}")
        if self.protocol not in ("auto", "tools", "json"):
            raise ValueError(f"protocol must be 'auto', 'tools' or 'json', not {self.protocol!r}")

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The tools the reasoner may call: all with images, else all but inspect_frames; search_frames
        only in a memory with keyframe vectors (its hits are useful as text too)."""
        from memtools.tools import TOOL_SPECS

        visual = self.tools.memory.manifest.image_embedder is not None
        return tuple(n for n in TOOL_SPECS
                     if (self.images or n != "inspect_frames") and (visual or n != "search_frames"))

    def reasoner(self) -> tuple[str, Any]:
        """``(protocol, runnable)``: the model bound to the ORA tools, or the bare model for JSON."""
        with _BIND_LOCK:
            if self not in _BOUND:
                _BOUND[self] = self._bind()
            return _BOUND[self]

    def _bind(self) -> tuple[str, Any]:
        from memtools.agent.prompts import ora_tool_schemas

        if self.protocol == "json":
            return "json", self.model
        kwargs = {"tool_choice": self.tool_choice} if self.tool_choice else {}
        try:
            return "tools", self.model.bind_tools(ora_tool_schemas(self.tool_names), **kwargs)
        except NotImplementedError:
            if self.protocol == "tools":
                raise
            return "json", self.model
