"""The tool catalogue: name, description an LLM can follow, and a typed argument model per tool.

Every front end (CLI, MCP server, LangChain tools, the ORA loop) is generated from
``TOOL_SPECS``, so each tool is described once (a new tool needs no change outside ``memtools.tools``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memtools.tools.core import LIST_LIMIT, LIST_MAX, MAX_FRAMES, MAX_IDS, TOP_K_MAX, MemoryTools
from memtools.tools.frames_search import FRAMES_TOP_K, FRAMES_TOP_K_MAX
from memtools.tools.invoke import ToolOutcome, invoke, parse_arguments

VideoId = Annotated[str | None, Field(
    default=None, max_length=128,
    description="Video id from list_videos. May be omitted when the memory holds a single video.")]
Seconds = Annotated[float, Field(ge=0, le=10_000_000, allow_inf_nan=False,
                                  description="Seconds from the start of the video.")]
NodeType = Literal["super", "macro", "entity", "event", "ocr", "speech"]
AsOf = Annotated[float | None, Field(
    default=None, ge=0, le=10_000_000,
    description="Only what had happened (ended) by this second of the video, e.g. for 'what had happened by "
                "0:05:00?'. Default: everything.")]


ClockTime = Annotated[str | None, Field(
    default=None, min_length=4, max_length=40,
    description="A clock time, ISO 8601 with its zone, e.g. '2026-11-20T14:00+01:00' (without a zone: the "
                "recordings' own offset). Only for videos with a recording time.")]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NoArgs(_Args):
    pass


class ListVideosArgs(_Args):
    offset: int = Field(default=0, ge=0, le=1_000_000_000, description="Skip this many videos (for the next page).")
    limit: int = Field(default=LIST_LIMIT, ge=1, le=LIST_MAX, description=f"At most this many videos (1-{LIST_MAX}).")
    query: str | None = Field(default=None, max_length=200, description=(
        "Only videos whose id or name contains this text (any case), e.g. 'kitchen'."))
    recorded_from: ClockTime = Field(default=None, description=(
        "Only videos recorded from this date or time on, listed in recording order, e.g. '2026-11-20'."))
    recorded_to: ClockTime = Field(default=None, description=(
        "Only videos recorded up to this date (that whole day) or time, e.g. '2026-11-22'."))


class SummaryArgs(_Args):
    video_id: str | None = Field(default=None, max_length=128, description=(
        "Video id from list_videos, or a day or week node: 'day/2026-11-20', 'week/2026-W47' (a summary of the "
        "videos recorded then). May be omitted when the memory holds a single video."))
    as_of_sec: AsOf = None


class SuperEventsArgs(_Args):
    video_id: VideoId = None
    super_ids: list[Annotated[str, Field(max_length=256)]] | None = Field(
        default=None, max_length=MAX_IDS, description="Only these super events (ids like '<video>/super_01').")
    as_of_sec: AsOf = None


class MacroEventsArgs(_Args):
    super_id: str | None = Field(default=None, max_length=256,
                                 description="All macro events of this super event (id like '<video>/super_01').")
    macro_ids: list[Annotated[str, Field(max_length=256)]] | None = Field(
        default=None, max_length=MAX_IDS, description="Or these macro events (ids like '<video>/macro_0003').")
    as_of_sec: AsOf = None


class SubgraphArgs(_Args):
    macro_id: str = Field(max_length=256, description="Macro event id, e.g. '<video>/macro_0003'.")
    as_of_sec: AsOf = None


class SearchArgs(_Args):
    query: str = Field(min_length=1, max_length=1000, description=(
        "A descriptive statement of what you look for, not a question, e.g. 'a man chops onions on a board'."))
    top_k: int = Field(default=10, ge=1, le=TOP_K_MAX, description="How many matches to return (1-50).")
    node_types: list[NodeType] | None = Field(default=None, description=(
        "Only these kinds: super, macro, entity, event (micro-event), ocr (on-screen text), speech (what was said). "
        "Default: all."))
    video_id: VideoId = Field(default=None, max_length=128, description="Only this video. Default: every video.")
    start_sec: Seconds | None = Field(default=None, description="Only nodes ending after this second.")
    end_sec: Seconds | None = Field(default=None, description="Only nodes starting before this second.")
    as_of_sec: AsOf = None


class GraphSearchArgs(_Args):
    query: str = Field(min_length=1, max_length=1000, description=(
        "A descriptive statement of what you look for, e.g. 'the ball knocks the boxes over'."))
    top_k: int = Field(default=10, ge=1, le=TOP_K_MAX, description="How many matches to return (1-50).")
    node_types: list[NodeType] | None = Field(default=None, description=(
        "Only return these kinds (the walk still crosses every kind). Default: all."))
    video_id: VideoId = Field(default=None, max_length=128, description="Only this video. Default: every video.")
    as_of_sec: AsOf = None


class EntitySearchArgs(_Args):
    query: str = Field(min_length=1, max_length=300, description="A name or description, e.g. 'red ball', 'the cook'.")
    top_k: int = Field(default=10, ge=1, le=TOP_K_MAX, description="How many entities to return (1-50).")
    video_id: VideoId = Field(default=None, max_length=128, description=(
        "Only this video (its own entities, '<video>/entity_003'). Default: the whole library (library entities, "
        "'lib/entity_0007', each linked across videos)."))
    as_of_sec: AsOf = None


class EntityTimelineArgs(_Args):
    entity_id: str | None = Field(default=None, max_length=256, description=(
        "Entity id from search_entities: a library entity 'lib/entity_0007' or a video's '<video>/entity_003'."))
    name: str | None = Field(default=None, max_length=300, description=(
        "Or a name to look up (matches names and aliases, e.g. 'ball'); every matching entity is shown."))
    video_id: VideoId = Field(default=None, max_length=128, description=(
        "Only this video (its episodes and roles). Default: the whole library, one timeline across videos."))
    as_of_sec: AsOf = None


class EventChainArgs(_Args):
    activity: str = Field(min_length=1, max_length=300, description=(
        "The activity to follow across videos and days, as an action, e.g. 'cooking on a stove', 'opening a door'."))
    video_id: VideoId = Field(default=None, max_length=128, description="Only this video. Default: every video.")


class TimeArgs(_Args):
    start_sec: Seconds | None = Field(default=None, description="Seconds from the start of the video (with end_sec).")
    end_sec: Seconds | None = Field(default=None, description="Seconds from the start of the video.")
    start_time: ClockTime = Field(default=None, description=(
        "Or a clock window across the library: its start, ISO 8601, e.g. '2026-11-20T14:00+01:00' (a date alone, "
        "'2026-11-20', is that whole day)."))
    end_time: ClockTime = Field(default=None, description=(
        "The clock window's end, e.g. '2026-11-20T16:00+01:00', or just '16:00' on start_time's day."))
    video_id: VideoId = Field(default=None, max_length=128, description=(
        "Video id from list_videos (needed with start_sec/end_sec when the memory holds several videos; with a "
        "clock window it keeps one video)."))
    as_of_sec: AsOf = None
    as_of_time: ClockTime = Field(default=None, description=(
        "Only what had happened (ended) by this clock time, e.g. '2026-11-20T15:00+01:00', across videos."))


class TranscriptArgs(_Args):
    video_id: VideoId = None
    start_sec: Seconds
    end_sec: Seconds
    as_of_sec: AsOf = None
    speaker: str | None = Field(default=None, max_length=100, description=(
        "Only this speaker's lines, as the transcript names them: 'S2' (a voice label) or a person's name. "
        "Default: everyone."))


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


class FrameSearchArgs(_Args):
    query: str | None = Field(default=None, max_length=300, description=(
        "What the frame shows, as a short visual description, e.g. 'a red van parked on a street'."))
    frame_id: str | None = Field(default=None, max_length=256, description=(
        "Or a keyframe id from search_frames / inspect_frames (like '<video>/kf_0003'): frames that look like it."))
    video_id: VideoId = Field(default=None, max_length=128, description="Only this video. Default: every video.")
    start_sec: Seconds | None = Field(default=None, description="Only frames at or after this second.")
    end_sec: Seconds | None = Field(default=None, description="Only frames at or before this second.")
    top_k: int = Field(default=FRAMES_TOP_K, ge=1, le=FRAMES_TOP_K_MAX,
                       description=f"How many frames to return (1-{FRAMES_TOP_K_MAX}).")


@dataclass(frozen=True)
class Hints:
    """What a tool does to the memory, published as MCP's tool annotations (``memtools.mcp.adapter.tool_annotations``)
    and checked against what each tool really does (tests/test_tool_hints.py).

    ``read_only``: changes nothing. ``destructive``: may delete or overwrite what is there (even when
    ``undo_change`` can bring it back); ``False``: it only adds. ``idempotent``: a second call with the same
    arguments changes nothing more (no second change is recorded either). ``open_world``: reaches beyond the
    memory (the network, a model)."""

    read_only: bool = True
    destructive: bool = False
    idempotent: bool = True
    open_world: bool = False


READS = Hints()
"""Every tool of ``TOOL_SPECS``: it reads the memory, and nothing else."""


@dataclass(frozen=True)
class ToolSpec:
    name: str
    group: str
    description: str
    args: type[BaseModel]
    method: Callable[..., Any]
    write: bool = False
    """A tool of the change path (a change, or the change log: who changed what): served over MCP only with
    ``--allow-writes``, listed and callable only for a caller that may write (``memtools.mcp.permission``); kept
    out of ``TOOL_SPECS`` (the read catalogue every front end builds its tools from) and listed in
    ``memtools.changes.tool_specs.WRITE_TOOL_SPECS``. What the tool does to the memory is ``hints``."""
    hints: Hints = READS
    confirm: Callable[[MemoryTools, Any], str] | None = None
    """For a change the user should agree to first (forget, merge, split, undo): the yes/no question naming exactly
    what the call will do, made from the memory and the parsed arguments (it may raise ``ToolError`` for a wrong id).
    The MCP server asks it of the user, or wants ``confirm: true`` (``memtools.mcp.confirm``); the Python API and
    the CLI never ask (their caller is the user)."""

    def call(self, tools: MemoryTools, arguments: dict[str, Any] | BaseModel) -> Any:
        """Validate arguments with the spec's model and run the tool."""
        args = arguments if isinstance(arguments, self.args) else self.args.model_validate(arguments)
        return self.method(tools, **args.model_dump())

    def parse(self, arguments: Any, *, strict: bool = True, name_of: Callable[[str], str] = str) -> BaseModel:
        """The argument model, or a one-line ``ToolError`` naming each wrong argument (see ``tools.invoke``)."""
        return parse_arguments(self, arguments, strict=strict, name_of=name_of)

    def invoke(self, tools: MemoryTools, arguments: Any, *, strict: bool = True) -> ToolOutcome:
        """Run one call from a front end: strict arguments in, a ``ToolOutcome`` (result or error kind) out."""
        return invoke(self, tools, arguments, strict=strict)


TOOL_SPECS: dict[str, ToolSpec] = {s.name: s for s in (
    ToolSpec("list_videos", "navigation",
             "List the videos in this memory with their ids, titles, durations, recording times and build status, "
             "a page at a time (offset, limit); query keeps the videos whose id or title contains it; "
             "recorded_from/recorded_to keep those recorded between two dates, in recording order.",
             ListVideosArgs, MemoryTools.list_videos),
    ToolSpec("get_summary", "navigation",
             "Overview of one video: title, description, recording time, themes, key entities and its super events "
             "(narrative phases) with time ranges. Start here. Also a whole day or week: video_id='day/2026-11-20' "
             "or 'week/2026-W47' summarises the videos recorded then.", SummaryArgs, MemoryTools.get_summary),
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
             "Search entities, micro-events, on-screen text, macro and super events. Across a library it finds the "
             "right videos first (from their summaries and episodes), then the moments inside them; adjacent "
             "matches merge into one span. Each match names its video, episode (macro event), time and a few "
             "connected nodes. Write the query as a descriptive statement.", SearchArgs, MemoryTools.search_nodes),
    ToolSpec("search_graph", "search",
             "Search by walking the memory graph from the best matches (personalized PageRank over typed edges): "
             "finds nodes connected to what matches, e.g. the cause of an event or who performed it, each with "
             "the path that led there.", GraphSearchArgs, MemoryTools.search_graph),
    ToolSpec("search_entities", "search",
             "Find people, objects, places and groups by name or description. Each entity merges its mentions "
             "across episodes and, across the library, across videos: aliases, how many videos and days it is "
             "seen in, and where and when it was first and last seen.",
             EntitySearchArgs, MemoryTools.search_entities),
    ToolSpec("get_entity_timeline", "traversal",
             "Every appearance of one entity (by entity_id or name) in time order. Across the library: a short "
             "biography, one line per appearance in recording order (video, time, place, what it does, why it is "
             "linked), first and last seen and on how many days. With video_id: the episodes it is in and what it "
             "does there (PERFORMS, RECEIVES, USES_TOOL, ... with the micro-events and their times).",
             EntityTimelineArgs, MemoryTools.get_entity_timeline),
    ToolSpec("get_event_chain", "traversal",
             "An activity across videos and days: every time it happened, in recording order, with the video, "
             "time and place of each, how many days, and where it usually happens. Use it for 'when did I last "
             "...?', 'on how many days did I ...?', 'where do I usually ...?'.",
             EventChainArgs, MemoryTools.get_event_chain),
    ToolSpec("search_by_time", "search",
             "Macro events overlapping a time window, with their super event labels: [start_sec, end_sec] in one "
             "video, or a clock window [start_time, end_time] (ISO 8601) across every video recorded then, in clock "
             "order. Use it when the question names a time or a day.", TimeArgs, MemoryTools.search_by_time),
    ToolSpec("get_transcript", "search",
             "What was said (speech recognised from the audio, or subtitles) between start_sec and end_sec: one "
             "utterance per line with its time and speaker when known, a page at a time. Use it for questions "
             "about what someone said; speaker='S2' keeps one speaker's lines.",
             TranscriptArgs, MemoryTools.get_transcript),
    ToolSpec("get_relations", "traversal",
             "Typed edges at any node (outgoing, incoming or both) with labels and reasons: follow causes "
             "(CAUSES, PREVENTS, ENABLES), roles (PERFORMS, RECEIVES, USES_TOOL) and layout (LOCATED_IN, ...).",
             RelationsArgs, MemoryTools.get_relations),
    ToolSpec("inspect_frames", "inspect",
             "Frames of a time window as images with timestamps and the macro event each belongs to, for "
             "checking visual details the text memory lacks.", FramesArgs, MemoryTools.inspect_frames),
    ToolSpec("search_frames", "inspect",
             "Search the keyframes themselves by how they look (image-text similarity), e.g. 'a red van', or find "
             "frames like a given frame_id. Each match gives its time, macro event and the image. Use it for visual "
             "details the text memory may have missed.", FrameSearchArgs, MemoryTools.search_frames),
)}
