"""The tool catalogue: name, description an LLM can follow, and a typed argument model per tool.

Every front end (CLI, MCP server, LangChain tools, the ORA loop) is generated from
``TOOL_SPECS``, so the nine tools are described once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memtools.tools.core import LIST_LIMIT, LIST_MAX, MAX_FRAMES, MAX_IDS, TOP_K_MAX, MemoryTools

VideoId = Annotated[str | None, Field(
    default=None, max_length=128,
    description="Video id from list_videos. May be omitted when the memory holds a single video.")]
Seconds = Annotated[float, Field(ge=0, le=10_000_000, description="Seconds from the start of the video.")]
NodeType = Literal["super", "macro", "entity", "event", "ocr"]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NoArgs(_Args):
    pass


class ListVideosArgs(_Args):
    offset: int = Field(default=0, ge=0, le=1_000_000_000, description="Skip this many videos (for the next page).")
    limit: int = Field(default=LIST_LIMIT, ge=1, le=LIST_MAX, description=f"At most this many videos (1-{LIST_MAX}).")
    query: str | None = Field(default=None, max_length=200, description=(
        "Only videos whose id or name contains this text (any case), e.g. 'kitchen'."))


class SummaryArgs(_Args):
    video_id: VideoId = None


class SuperEventsArgs(_Args):
    video_id: VideoId = None
    super_ids: list[Annotated[str, Field(max_length=256)]] | None = Field(
        default=None, max_length=MAX_IDS, description="Only these super events (ids like '<video>/super_01').")


class MacroEventsArgs(_Args):
    super_id: str | None = Field(default=None, max_length=256,
                                 description="All macro events of this super event (id like '<video>/super_01').")
    macro_ids: list[Annotated[str, Field(max_length=256)]] | None = Field(
        default=None, max_length=MAX_IDS, description="Or these macro events (ids like '<video>/macro_0003').")


class SubgraphArgs(_Args):
    macro_id: str = Field(max_length=256, description="Macro event id, e.g. '<video>/macro_0003'.")


class SearchArgs(_Args):
    query: str = Field(min_length=1, max_length=1000, description=(
        "A descriptive statement of what you look for, not a question, e.g. 'a man chops onions on a board'."))
    top_k: int = Field(default=10, ge=1, le=TOP_K_MAX, description="How many matches to return (1-50).")
    node_types: list[NodeType] | None = Field(default=None, description=(
        "Only these kinds: super, macro, entity, event (micro-event), ocr (on-screen text). Default: all."))
    video_id: VideoId = Field(default=None, max_length=128, description="Only this video. Default: every video.")
    start_sec: Seconds | None = Field(default=None, description="Only nodes ending after this second.")
    end_sec: Seconds | None = Field(default=None, description="Only nodes starting before this second.")


class TimeArgs(_Args):
    start_sec: Seconds
    end_sec: Seconds
    video_id: VideoId = None


class RelationsArgs(_Args):
    node_id: str = Field(max_length=256, description="Any node id, e.g. '<video>/macro_0003/evt_002'.")
    direction: Literal["out", "in", "both"] = Field(default="both", description="Which edges: out, in or both.")
    relation_types: list[Annotated[str, Field(max_length=40)]] | None = Field(
        default=None, max_length=20, description="Only these labels, e.g. ['CAUSES', 'PERFORMS']. Default: all.")


class FramesArgs(_Args):
    video_id: str = Field(max_length=128, description="Video id from list_videos.")
    start_sec: Seconds
    end_sec: Seconds
    max_frames: int = Field(default=6, ge=1, le=MAX_FRAMES, description=f"At most this many frames (1-{MAX_FRAMES}).")


@dataclass(frozen=True)
class ToolSpec:
    name: str
    group: str
    description: str
    args: type[BaseModel]
    method: Callable[..., Any]

    def call(self, tools: MemoryTools, arguments: dict[str, Any] | BaseModel) -> Any:
        """Validate arguments with the spec's model and run the tool."""
        args = arguments if isinstance(arguments, self.args) else self.args.model_validate(arguments)
        return self.method(tools, **args.model_dump())


TOOL_SPECS: dict[str, ToolSpec] = {s.name: s for s in (
    ToolSpec("list_videos", "navigation",
             "List the videos in this memory with their ids, titles, durations and build status, a page at a "
             "time (offset, limit); query keeps the videos whose id or title contains it.",
             ListVideosArgs, MemoryTools.list_videos),
    ToolSpec("get_summary", "navigation",
             "Overview of one video: title, description, themes, key entities and its super events (narrative "
             "phases) with time ranges. Start here.", SummaryArgs, MemoryTools.get_summary),
    ToolSpec("get_super_events", "navigation",
             "Super events (narrative phases) of a video: label, time range, description, key entities and their "
             "macro event ids.", SuperEventsArgs, MemoryTools.get_super_events),
    ToolSpec("get_macro_events", "navigation",
             "Macro events (self-contained episodes) of one super event, or a list of macro ids: label, time "
             "range, key entities, summary. Summaries are short: open details with get_subgraph.",
             MacroEventsArgs, MemoryTools.get_macro_events),
    ToolSpec("get_subgraph", "navigation",
             "Everything inside one macro event: entities, micro-events with times, on-screen text, and the typed "
             "edges among them (who did what, causes). The richest tool; find the macro id first.",
             SubgraphArgs, MemoryTools.get_subgraph),
    ToolSpec("search_nodes", "search",
             "Semantic + keyword search over entities, micro-events, on-screen text, macro and super events. Each "
             "match comes with its time, parent macro event and a few connected nodes. Write the query as a "
             "descriptive statement.", SearchArgs, MemoryTools.search_nodes),
    ToolSpec("search_by_time", "search",
             "Macro events overlapping a time window [start_sec, end_sec], with their super event labels. Use it "
             "when the question names a time.", TimeArgs, MemoryTools.search_by_time),
    ToolSpec("get_relations", "traversal",
             "Typed edges at any node (outgoing, incoming or both) with labels and reasons: follow causes "
             "(CAUSES, PREVENTS, ENABLES), roles (PERFORMS, RECEIVES, USES_TOOL) and layout (LOCATED_IN, ...).",
             RelationsArgs, MemoryTools.get_relations),
    ToolSpec("inspect_frames", "inspect",
             "Frames of a time window as images with timestamps and the macro event each belongs to, for "
             "checking visual details the text memory lacks.", FramesArgs, MemoryTools.inspect_frames),
)}
