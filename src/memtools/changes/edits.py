"""The edits themselves: pure functions from a video's ``VideoGraph`` to its new one (no store here).

- **Notes.** A user's statement becomes a micro-event of type ``user note`` said by ``the user``
  (``<macro>/evt_9NNN``, its text starting "User note: "): in the macro event at a moment
  (``video@t``), the one of an entity (joined to the entity by a ``CONTEXT_FOR`` role edge, so
  its timeline shows it), or the first one for a note about the whole video (spanning the
  video). It is embedded and found by ``search_nodes`` like any event, and every result shows it as the user's.
- **Entities.** The graph holds *mentions* (``<macro>/ent_002``) that the write groups into canonical
  entities (``<video>/entity_003``, ``memtools.store.tables.entities``). A rename names every mention of the
  entity; a merge joins a mention of each with ``IS_SAME_AS`` and gives the other's mentions the kept
  entity's id; a split cuts ``IS_SAME_AS`` edges between the parts, gives the part it takes a new id
  and each part its own ``identity`` attribute, so neither the name nor the look of the mentions joins
  them again. The edits get the video *pinned* (every mention carries its entity's id,
  ``memtools.changes.ids``), so the ids of the entities they do not touch stay as they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from memtools.errors import ToolError, ToolNotFound
from memtools.schema import Edge, EdgeCategory, Entity, MacroEvent, MicroEvent, VideoGraph, event_id

MAX_NOTE_CHARS = 10_000
"""The longest note: a statement, not a document (import a document as captions instead)."""
NOTE_TYPE = "user note"
NOTE_SUBJECT = "the user"
NOTE_PREFIX = "User note: "
"""Starts the note's text, so every result that shows it says whose it is."""
NOTE_FIRST = 9001
"""Notes are numbered from here inside their macro event, apart from the extracted micro-events."""
IDENTITY = "identity"
_TIME = re.compile(r"^(?:(\d+):)?(?:(\d+):)?(\d+(?:\.\d+)?)$")


def parse_seconds(text: str) -> float | None:
    """``125``, ``125.5``, ``2:05`` or ``1:02:05`` as seconds, or ``None``."""
    m = _TIME.match(text.strip())
    if not m:
        return None
    parts = [p for p in m.groups() if p is not None]
    seconds = 0.0
    for part in parts:
        seconds = seconds * 60 + float(part)
    return seconds


def check_note(text: str) -> str:
    text = text.strip()
    if not text:
        raise ToolError("the note is empty; write the statement to remember, e.g. 'the man in red is Tom'")
    if len(text) > MAX_NOTE_CHARS:
        raise ToolError(f"the note is {len(text):,} characters long; a note holds at most {MAX_NOTE_CHARS:,} (a "
                        "statement, not a document): shorten it or split it into several notes")
    return text


def _macro_at(graph: VideoGraph, t: float) -> MacroEvent:
    if not graph.macros:
        raise ToolError(f"video {graph.video_id!r} has no episodes (macro events) to attach a note to")
    covering = [m for m in graph.macros if m.t_start <= t <= m.t_end]
    if covering:
        return covering[0]
    if t > max(m.t_end for m in graph.macros) + 1.0:
        raise ToolError(f"video {graph.video_id!r} is {graph.video.duration:.0f} s long; {t:g} s is past its end")
    return min(graph.macros, key=lambda m: min(abs(m.t_start - t), abs(m.t_end - t)))


def _never_issued(prefix: str) -> int:
    return 0


def next_user_id(make_id: Callable[[int], str], taken: set[str], floor: Callable[[str], int]) -> str:
    """The next id of a user-made node (``make_id(n)``, from ``NOTE_FIRST``): after the highest the video holds
    and the highest ever issued (``floor(prefix)``: an undone note's id is not handed out again)."""
    prefix = make_id(NOTE_FIRST).removesuffix(str(NOTE_FIRST))
    n = max(NOTE_FIRST, floor(prefix) + 1)
    while make_id(n) in taken:
        n += 1
    return make_id(n)


def _same_note(graph: VideoGraph, macro_id: str, text: str, start: float, about: str, entity: Entity | None) -> str:
    """The id of a note the video already has with this text at this place ("" when there is none)."""
    about_entity = {e.target for e in graph.edges if entity is not None and e.source == entity.id}
    for ev in graph.events:
        if (ev.macro_id == macro_id and ev.event_type == NOTE_TYPE and ev.description == f"{NOTE_PREFIX}{text}"
                and ev.t_start == start and ev.object == about and (entity is None or ev.id in about_entity)):
            return ev.id
    return ""


def with_note(graph: VideoGraph, text: str, *, t: float | None = None, entity: Entity | None = None,
              floor: Callable[[str], int] = _never_issued) -> tuple[VideoGraph, str]:
    """The video with a note at moment ``t``, about ``entity``, or (neither) about the whole video; and its id.
    The same note again at the same place is refused: it would change nothing."""
    out = graph.model_copy(deep=True)
    if entity is not None:
        macro = next(m for m in out.macros if m.id == entity.macro_id)
        start = end = entity.grounding.primary_time if entity.grounding.primary_time is not None else macro.t_start
        about = entity.display_name
    elif t is not None:
        macro = _macro_at(out, t)
        start = end = t
        about = ""
    else:
        macro = _macro_at(out, 0.0)
        start, end, about = 0.0, max(out.video.duration, macro.t_end), ""
    same = _same_note(out, macro.id, text, start, about, entity)
    if same:
        raise ToolError(f"this note is already there ({same}); nothing to change")
    nid = next_user_id(lambda n: event_id(macro.id, n), {e.id for e in out.events}, floor)
    out.events.append(MicroEvent(id=nid, video_id=out.video_id, macro_id=macro.id, event_type=NOTE_TYPE,
                                 subject=NOTE_SUBJECT, object=about, description=f"{NOTE_PREFIX}{text}",
                                 t_start=start, t_end=end))
    if entity is not None:
        out.edges.append(Edge(source=entity.id, target=nid, category=EdgeCategory.ROLE, label="CONTEXT_FOR",
                              description="a note the user added about this entity"))
    return out, nid


def mentions_of(graph: VideoGraph, ids: Iterable[str]) -> list[Entity]:
    """The mentions ``ids`` name in ``graph`` (``ToolNotFound`` for an id it does not hold)."""
    by_id = {e.id: e for e in graph.entities}
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise ToolNotFound(f"video {graph.video_id!r} has no entity mention {missing[0]!r}; get_subgraph or "
                           "search_entities lists them")
    return [by_id[i] for i in ids]


def renamed(graph: VideoGraph, mention_ids: list[str], name: str) -> VideoGraph:
    name = " ".join(name.split())
    if not name:
        raise ToolError("the new name is empty; give the name to use, e.g. 'Tom'")
    wanted = set(mention_ids)
    if all(e.name == name for e in graph.entities if e.id in wanted):
        raise ToolError(f"this entity is already named {name!r}; nothing to change")
    out = graph.model_copy(deep=True)
    for e in out.entities:
        if e.id in wanted:
            e.name = name
    return out


def merged(graph: VideoGraph, keep: list[str], other: list[str], keep_name: str) -> VideoGraph:
    """``other``'s mentions joined to ``keep``'s: named as ``keep`` is (``keep_name``, its shown name), with its id."""
    if set(keep) & set(other):
        raise ToolError("these are already one entity; pass two different entities to merge")
    out = graph.model_copy(deep=True)
    first = mentions_of(out, keep)
    kept_id = first[0].grounding.entity_id
    name = next((e.name for e in first if e.name), None) or keep_name
    identities = {e.attributes.get(IDENTITY) for e in first} - {None}
    identity = next(iter(identities)) if len(identities) == 1 else None
    for e in mentions_of(out, other):
        e.grounding.entity_id = kept_id
        if name:
            e.name = name
        if identity is not None:
            e.attributes[IDENTITY] = identity
        else:
            e.attributes.pop(IDENTITY, None)
    if identity is None:
        for e in first:
            e.attributes.pop(IDENTITY, None)
    out.edges.append(Edge(source=keep[0], target=other[0], category=EdgeCategory.SPATIAL, label="IS_SAME_AS",
                          description="merged by the user"))
    return out


def split(graph: VideoGraph, group: list[str], part: list[str], new_name: str | None,
          new_id: str | None = None) -> VideoGraph:
    """``part`` (mentions of the entity whose mentions are ``group``) made an entity of its own, ``new_id``."""
    if not part:
        raise ToolError("name the mentions to split off (mention_ids, from get_entity_timeline)")
    outside = [p for p in part if p not in group]
    if outside:
        raise ToolError(f"{outside[0]!r} is not a mention of this entity; its mentions are {', '.join(group[:12])}")
    rest = [g for g in group if g not in part]
    if not rest:
        raise ToolError("that is every mention of the entity; leave at least one in it")
    out = graph.model_copy(deep=True)
    cut, kept = set(part), set(rest)
    out.edges = [e for e in out.edges if not (e.label == "IS_SAME_AS" and (
        (e.source in cut and e.target in kept) or (e.source in kept and e.target in cut)))]
    mentions = {e.id: e for e in out.entities}
    base = next((mentions[i].name for i in rest if mentions[i].name), None) or "entity"
    label = " ".join((new_name or "").split()) or f"{base} (split off)"
    for i in rest:
        mentions[i].attributes[IDENTITY] = base
    for i in part:
        mentions[i].attributes[IDENTITY] = label
        mentions[i].grounding.entity_id = new_id
        if new_name:
            mentions[i].name = label
    return out


__all__ = ["MAX_NOTE_CHARS", "NOTE_SUBJECT", "NOTE_TYPE", "check_note", "merged", "mentions_of", "next_user_id",
           "parse_seconds", "renamed", "split", "with_note"]
