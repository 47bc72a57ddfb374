"""The yes/no question each destructive write tool puts to the user before it runs (``ToolSpec.confirm``).

Each names exactly what the call will do, from the memory as it is now and the call's parsed arguments,
and says whether ``undo_change`` can bring it back. A wrong video, entity, person or change id is refused here,
as the tool itself refuses it, so the user is never asked about something that is not there (an undo the
log refuses, e.g. of a change undone already, is still asked and then refused: those checks stay the
tool's own). Served over MCP only (``memtools.mcp.confirm``): the Python API and the CLI run as the user.
"""

from __future__ import annotations

from typing import Any

from memtools.changes import actions, people
from memtools.changes.apply import read_video
from memtools.changes.log import ChangeLog
from memtools.errors import ToolNotFound
from memtools.tools.core import MemoryTools
from memtools.tools.text import clip

UNDOABLE = "undo_change can bring it back."


def _entity(tools: MemoryTools, entity_id: str) -> str:
    """``kitchen/entity_004 ('a wooden lid')``; a wrong id (or one a change joined into another) is refused as the
    tool refuses it."""
    video_id = actions._video_of(entity_id)
    _, name = actions._mentions(tools.memory, actions.need_video(read_video(tools.memory, video_id), video_id),
                                entity_id)
    return f"{entity_id} ('{clip(name, 60)}')"


def forget_video(tools: MemoryTools, args: Any) -> str:
    tools.memory.refresh()
    entry = tools.memory.manifest.videos.get(args.video_id)
    purge = getattr(args, "purge", False)  # forget_video(purge=True): nothing is kept to undo it
    if entry is None and purge:  # a purge also reaches a video forgotten before
        return (f"Purge video {args.video_id} for good? It is not in the memory now; what the change log kept of it "
                "to undo a forget is deleted, in every file of the memory: this cannot be undone.")
    if entry is None:
        raise ToolNotFound(f"no video {args.video_id!r} in this memory; list_videos gives the ids")
    counts = entry.counts or {}
    what = ", ".join(f"{counts[k]} {label}" for k, label in (("macro", "macro events"), ("entity", "entities"),
                                                             ("keyframe", "keyframes")) if counts.get(k))
    title = f"'{clip(entry.title, 80)}'" if entry.title else ""
    about = ", ".join(p for p in (title, what) if p)
    if purge:
        return (f"Forget video {args.video_id}{f' ({about})' if about else ''} for good? Its graph, vectors, "
                "keyframes, voices and faces are deleted and nothing is kept: this cannot be undone.")
    return (f"Forget video {args.video_id}{f' ({about})' if about else ''}? Its graph, vectors, keyframes, voices "
            f"and faces are removed from the memory; {UNDOABLE}")


def merge_entities(tools: MemoryTools, args: Any) -> str:
    return (f"Merge entity {_entity(tools, args.other_id)} into {_entity(tools, args.entity_id)}? They become one "
            f"entity, named and answering as {args.entity_id}; {UNDOABLE}")


def split_entity(tools: MemoryTools, args: Any) -> str:
    n = len(args.mention_ids)
    shown = ", ".join(args.mention_ids[:3]) + (f" and {n - 3} more" if n > 3 else "")
    name = f" named '{clip(args.new_name, 60)}'" if args.new_name else ""
    return (f"Split {n} mention(s) ({shown}) off entity {_entity(tools, args.entity_id)} into a new entity{name}? "
            f"{UNDOABLE}")


def forget_person(tools: MemoryTools, args: Any) -> str:
    clusters = people._clusters(tools.memory, args.target, forgotten=True)  # refuses a wrong target, as the tool
    videos = len({c[0] for c in clusters})
    return (f"Delete the voice and face vectors (biometric data) of {args.target.strip()}: {len(clusters)} "
            f"cluster(s) in {videos} video(s)? The transcript keeps its text. This cannot be undone.")


def undo_change(tools: MemoryTools, args: Any) -> str:
    found = ChangeLog(tools.memory.path).get(args.change_id)
    if found is None:
        raise ToolNotFound(f"no change {args.change_id!r} in this memory's log; list_changes lists them")
    again = " (an undo: undoing it redoes what it undid)" if found.undoes else ""
    return (f"Undo change {found.id}{again}: {found.action} of video {found.video_id}, "
            f"'{clip(found.summary, 160)}' by {found.who}? The video goes back to how it was before that change; "
            "undoing the undo redoes it.")
