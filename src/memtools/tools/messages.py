"""Every model-facing error text, as constants: what went wrong and what to call instead."""

EMPTY_MEMORY = "this memory holds no videos yet; build one with `memtools build` or `memtools import-captions`"
NEED_VIDEO_ID = (
    "this memory holds {n} videos, so pass video_id; some ids: {some}. Call list_videos (query=... finds ids by title) to find the one"
)
UNKNOWN_VIDEO = "no video {video_id!r} in this memory; known ids include: {some}. Call list_videos (query=... finds ids by title) to find the right one"
VIDEO_NOT_READY = "video {video_id!r} is {status}, not ready yet; try again later or pick another video from list_videos"
BAD_ID = (
    "{what} {node_id!r} does not exist. Ids look like '{example}'; {hint}"
)
SUPER_HINT = "call get_summary or get_super_events to list super events"
MACRO_HINT = "call get_macro_events(super_id=...) or search_by_time / search_nodes to find macro ids"
NODE_HINT = "copy an id from get_subgraph, search_nodes or get_macro_events output"
NEED_SUPER_OR_MACROS = "pass either super_id (all macro events of one super event) or macro_ids (a list), not both and not neither"
TOO_MANY_IDS = "at most {limit} ids per call; you passed {n}. Split the list over several calls"
BAD_WINDOW = "start_sec must be >= 0 and end_sec greater than start_sec; you passed start_sec={start}, end_sec={end}"
WINDOW_PAST_END = "the window starts at {start} but video {video_id!r} is only {duration} long; pick a window inside [0:00:00-{duration}]"
BAD_RANGE = "{name} must be between {low} and {high}; you passed {value}"
EMPTY_QUERY = "query is empty; write a short descriptive statement of what you look for, e.g. 'a man chops onions'"
QUERY_TOO_LONG = "query is {n} characters; keep it under {limit}: one descriptive sentence works best"
BAD_NODE_TYPES = "unknown node_types {bad}; use any of: {allowed}"
BAD_DIRECTION = "direction must be 'out', 'in' or 'both'; you passed {value!r}"
BAD_RELATION = "unknown relation types {bad}; use labels such as {allowed}"
BUSY = "memory is being updated, try again in a few seconds"
SUPER_NOT_MACRO = (
    "{node_id!r} is a super event, not a macro event; call get_macro_events(super_id='{node_id}') to list its macro events"
)
