"""Every model-facing error text, as constants: what went wrong and what to call instead."""

EMPTY_MEMORY = "this memory holds no videos yet; build one with `memtools build` or `memtools import-captions`"
NEED_VIDEO_ID = (
    "this memory holds {n} videos, so pass video_id; some ids: {some}. "
    "Call list_videos (query=... finds ids by title) to find the one"
)
UNKNOWN_VIDEO = ("no video {video_id!r} in this memory; known ids include: {some}. "
                 "Call list_videos (query=... finds ids by title) to find the right one")
VIDEO_NOT_READY = ("video {video_id!r} is {status}, not ready yet; "
                   "try again later or pick another video from list_videos")
VIDEO_FAILED = ("video {video_id!r} cannot be read: {advice}. Until a person does, pick another video from "
                "list_videos")
BAD_ID = (
    "{what} {node_id!r} does not exist. Ids look like '{example}'; {hint}"
)
SUPER_HINT = "call get_summary or get_super_events to list super events"
MACRO_HINT = "call get_macro_events(super_id=...) or search_by_time / search_nodes to find macro ids"
NODE_HINT = "copy an id from get_subgraph, search_nodes or get_macro_events output"
NEED_SUPER_OR_MACROS = ("pass either super_id (all macro events of one super event) or macro_ids (a list), "
                        "not both and not neither")
TOO_MANY_IDS = "at most {limit} ids per call; you passed {n}. Split the list over several calls"
WINDOW_KINDS = ("give a window either as start_sec and end_sec (seconds into one video) or as start_time and "
                "end_time (clock times, ISO 8601 such as '2026-11-20T14:00+01:00', across the library), not a mix")
BAD_WINDOW = "start_sec must be >= 0 and end_sec greater than start_sec; you passed start_sec={start}, end_sec={end}"
WINDOW_PAST_END = ("the window starts at {start} but video {video_id!r} is only {duration} long; "
                   "pick a window inside [0:00:00-{duration}]")
BAD_RANGE = "{name} must be between {low} and {high}; you passed {value}"
EMPTY_QUERY = "query is empty; write a short descriptive statement of what you look for, e.g. 'a man chops onions'"
QUERY_TOO_LONG = "query is {n} characters; keep it under {limit}: one descriptive sentence works best"
BAD_NODE_TYPES = "unknown node_types {bad}; use any of: {allowed}"
BAD_DIRECTION = "direction must be 'out', 'in' or 'both'; you passed {value!r}"
BAD_RELATION = "unknown relation types {bad}; use labels such as {allowed}"
BUSY = "memory is being updated, try again in a few seconds"
SUPER_NOT_MACRO = (
    "{node_id!r} is a super event, not a macro event; "
    "call get_macro_events(super_id='{node_id}') to list its macro events"
)

# --- structured search, entities, "as of t" ------------------------------------------------
BAD_AS_OF = "as_of_sec must be a number of seconds >= 0 (the moment to look back from); you passed {value}"
AS_OF_NO_SENSE = "as_of_sec does not apply to {what}; {hint}"
NOT_YET = (
    "{what} {node_id!r} ends at {end}, after as_of_sec={as_of}: it had not happened yet. "
    "Use search_by_time(..., as_of_sec={as_of_raw}) or get_macro_events to list what had"
)
WINDOW_AFTER_AS_OF = (
    "the window starts at {start}, after as_of_sec ({as_of}): nothing had happened there yet; "
    "pick a window before {as_of}"
)
NEED_ENTITY = ("pass entity_id (e.g. '<video>/entity_003', from search_entities) or name (e.g. 'ball'), "
               "not both and not neither")
BAD_ENTITY_ID = (
    "no entity {entity_id!r}; entity ids look like '<video>/entity_003'. Call search_entities(query=...) to find them"
)
NO_ENTITY_NAME = (
    "no entity named like {name!r}{where}. Call search_entities(query={name!r}) for similar entities, or "
    "search_nodes for actions"
)
NO_ENTITIES = (
    "this memory holds no entities (its videos were imported from captions or transcripts, which give "
    "events and speech only): search_nodes finds what happened, get_event_chain(activity=...) an activity "
    "across videos"
)
NO_ENTITY_INDEX = (
    "this memory has no entity profiles (it was written before memtools kept them); "
    "re-import or rebuild its videos to add them, meanwhile use search_nodes(node_types=['entity'])"
)
NOT_A_KEYFRAME = (
    "{keyframe_id!r} is not a keyframe id; keyframe ids look like '<video>/kf_0001' "
    "(URIs memtools://videos/<video>/keyframes/kf_0001) and inspect_frames returns them"
)
NO_KEYFRAME = "no keyframe {keyframe_id!r} in this memory; inspect_frames returns the keyframes of a time window"
KEYFRAME_FILE_MISSING = "keyframe {keyframe_id!r} has no image file in the memory folder"
# Argument checks shared by every front end (MCP, LangChain, the ORA loop, the CLI).
UNKNOWN_ARGUMENT = "unknown argument {name!r} for {tool}{suggestion}"
TOOL_ARGUMENTS = "its arguments are: {allowed}"
NO_ARGUMENTS = "it takes no arguments"
DID_YOU_MEAN = " (did you mean {name!r}?)"
MISSING_ARGUMENT = "missing required argument {name!r} for {tool}"
WRONG_TYPE = "{name} must be {expected}, not {value}"
NOT_FINITE = "{name} must be a finite number, not {value}"
BAD_VALUE = "{name} {problem}; you passed {value}"
ARGUMENTS_NOT_AN_OBJECT = "the arguments of {tool} must be an object of named arguments, not {value}"
MEMORY_UNAVAILABLE = "the memtools server cannot open its memory: {reason}"
MEMORY_FAILED = "the memtools server could not read its memory: {reason}"
# search_frames
NO_FRAME_VECTORS = (
    "this memory has no keyframe vectors (it was built without an image embedder), so frames cannot be searched "
    "by how they look; use search_nodes for the text memory and inspect_frames for the frames of a time window. "
    "The user can turn visual search on by building with --image-embedder"
)
FRAME_QUERY_OR_ID = (
    "pass exactly one of query (what the frame shows, e.g. 'a red van on a street') or frame_id (a keyframe id "
    "like '<video>/kf_0001' from search_frames or inspect_frames, for frames that look like it)"
)
NO_FRAME_VECTOR = (
    "no keyframe {frame_id!r} among the searchable frames; keyframe ids look like '<video>/kf_0001' and come from "
    "search_frames or inspect_frames"
)
WRITE_FORBIDDEN = ("this connection may only read the memory: changing it needs a server started with --allow-writes "
                   "and, over HTTP, a token that may write (--write-token-env, or the memtools:write scope)")
