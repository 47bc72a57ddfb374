"""Typed results of the entity tools (``search_entities``, ``get_entity_timeline``)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from memtools.tools.people_results import PersonTimeline, render_people
from memtools.tools.results import _Result
from memtools.tools.text import budgeted, clip, hms, span


class Seen(BaseModel):
    """Where and when a library entity was seen (first or last)."""

    video_id: str
    t_start: float
    t_end: float
    recorded_at: str | None = Field(default=None, description="the video's recording start (ISO 8601) when known")
    place: str = Field(default="", description="the place (LOCATION entity) of that appearance")


class EntityItem(BaseModel):
    id: str
    video_id: str = Field(description="its video (a library entity: the video it was first seen in)")
    name: str
    entity_type: str
    aliases: list[str] = Field(default_factory=list)
    description: str = ""
    t_first: float
    t_last: float
    appearances: int
    score: float | None = None
    rerank_score: float | None = Field(default=None, description=(
        "the reranker's score (its own scale) when a reranker ordered this entity"))
    videos: int | None = Field(default=None, description="a library entity: how many videos it is seen in")
    days: int | None = Field(default=None, description=(
        "a library entity: on how many days (recording dates; None when a video has no recording start)"))
    first_seen: Seen | None = None
    last_seen: Seen | None = None


class EntityList(_Result):
    query: str
    entities: list[EntityItem]
    as_of_sec: float | None = None
    reranked_by: str = Field(default="", description="the reranker that ordered the entities (empty: none)")
    rerank_warning: str = Field(default="", description=(
        "why a configured reranker did not order the entities (they are in first-stage order)"))

    def render(self) -> str:
        when = f" as of {hms(self.as_of_sec)}" if self.as_of_sec is not None else ""
        if not self.entities:
            return (f"No entities match {self.query!r}{when}. Try a shorter name ('ball', 'cook') or search_nodes "
                    "for actions.")
        lines = [f"{len(self.entities)} entit{'y' if len(self.entities) == 1 else 'ies'} for "
                 f"{clip(self.query, 80)!r}{when}"
                 + (f", reranked by {clip(self.reranked_by, 80)}:" if self.reranked_by else ":")]
        if self.rerank_warning:
            lines.append(f"Not reranked ({clip(self.rerank_warning, 200)}): entities are in first-stage order.")
        for i, e in enumerate(self.entities, 1):
            aka = f" (also: {', '.join(clip(a, 40) for a in e.aliases[:4])})" if e.aliases else ""
            lines.append(f"{i}. {e.id} {e.entity_type} {clip(e.name, 80)}{aka} {seen_text(e)}")
            if e.description and e.description.rstrip(".") != e.name.rstrip("."):
                lines.append(f"   {clip(e.description, 160)}")
        lines = budgeted(lines, "lower top_k or pass video_id")
        lines.append("Next: get_entity_timeline(entity_id=...) for when each appears and what it does.")
        return "\n".join(lines)


def _when(seen: Seen) -> str:
    return f"{seen.video_id} {span(seen.t_start, seen.t_end)}" + (f" in {clip(seen.place, 40)}" if seen.place else "")


def seen_text(e: EntityItem) -> str:
    """How often and where an entity is seen: times in its video, or across the library."""
    if e.videos is None or e.first_seen is None or e.last_seen is None:
        return f"{span(e.t_first, e.t_last)}, {e.appearances} appearance(s)"
    days = f" on {e.days} day(s)" if e.days is not None else ""
    return (f"seen in {e.videos} video(s){days}, {e.appearances} appearance(s); first {_when(e.first_seen)}, "
            f"last {_when(e.last_seen)}")


class RoleItem(BaseModel):
    label: str
    direction: str  # "out": the entity -LABEL-> node; "in": node -LABEL-> the entity
    node_id: str
    text: str = ""
    t_start: float | None = None
    t_end: float | None = None


class Appearance(BaseModel):
    mention_id: str
    macro_id: str
    macro_label: str
    super_id: str
    t_start: float
    t_end: float
    seen_at: float | None = None
    description: str = ""
    roles: list[RoleItem] = Field(default_factory=list)


class EntityTimelineItem(BaseModel):
    entity: EntityItem
    appearances: list[Appearance]


class LibraryAppearance(BaseModel):
    """One appearance of a library entity: a canonical entity of one video, where it was, and why it is linked."""

    video_id: str
    entity_id: str = Field(description="the canonical entity in that video ('<video>/entity_003')")
    recorded_at: str | None = Field(default=None, description="the video's recording start (ISO 8601) when known")
    t_start: float
    t_end: float
    macro_id: str = ""
    macro_label: str = ""
    place: str = Field(default="", description="the place (LOCATION entity) it was seen in")
    place_id: str = Field(default="", description="that place's library entity id")
    doing: list[str] = Field(default_factory=list, description="what it does there (role edges with their actions)")
    present: list[str] = Field(default_factory=list, description=(
        "a place: the entities seen there in that video"))
    evidence: list[str] = Field(default_factory=list, description=(
        "why it is linked: name, vector, head (the same head noun), meaning (names that mean the same), "
        "place (or first: the library entity's first appearance)"))
    confidence: float = 1.0


class LibraryTimelineItem(BaseModel):
    entity: EntityItem
    appearances: list[LibraryAppearance]


class EntityTimeline(_Result):
    timelines: list[EntityTimelineItem]
    as_of_sec: float | None = None
    library: list[LibraryTimelineItem] = Field(default_factory=list, description=(
        "library entities: one timeline across videos in recording order (wall clock when known, else library "
        "order); empty when answered per video"))
    note: str = Field(default="", description="why the answer is per video when a library answer was asked for")
    people: list[PersonTimeline] = Field(default_factory=list, description=(
        "library-level persons (voice, face, named-speaker clusters linked across videos, in recording order) "
        "of the entities shown, or the person asked for"))

    def render(self) -> str:
        when = f" as of {hms(self.as_of_sec)}" if self.as_of_sec is not None else ""
        lines: list[str] = [self.note] if self.note else []
        for lib in self.library:
            e = lib.entity
            aka = f" (also: {', '.join(clip(a, 40) for a in e.aliases[:4])})" if e.aliases else ""
            lines.append(f"Library entity {e.id} {e.entity_type} {clip(e.name, 80)}{aka}: {seen_text(e)}{when}")
            for n, la in enumerate(lib.appearances, 1):
                clock = f" (recorded {la.recorded_at})" if la.recorded_at else ""
                where = f" in {clip(la.place, 40)}" if la.place else ""
                how = ("first seen" if la.evidence == ["first"] else
                       f"linked by {', '.join(la.evidence)} {la.confidence:.2f}")
                lines.append(f"{n}. {la.video_id}{clock} {span(la.t_start, la.t_end)}{where}: "
                             f"{clip(la.macro_label, 80)} (as {la.entity_id}, {how})")
                if la.doing:
                    lines.append("    does: " + "; ".join(clip(d, 80) for d in la.doing[:4]))
                if la.present:
                    lines.append("    with: " + ", ".join(clip(p, 40) for p in la.present[:12]))
        for item in self.timelines:
            e = item.entity
            aka = f" (also: {', '.join(clip(a, 40) for a in e.aliases[:4])})" if e.aliases else ""
            lines.append(f"Entity {e.id} {e.entity_type} {clip(e.name, 80)}{aka}: {len(item.appearances)} "
                         f"appearance(s){when}")
            for a in item.appearances:
                seen = f", clearest at {hms(a.seen_at)}" if a.seen_at is not None else ""
                lines.append(f"- {span(a.t_start, a.t_end)} {a.macro_id} {clip(a.macro_label, 80)}"
                             f" (as {a.mention_id.rsplit('/', 1)[-1]}{seen})")
                if a.description and a.description.rstrip(".") != e.name.rstrip("."):
                    lines.append(f"    {clip(a.description, 140)}")
                for r in a.roles:
                    end = r.t_start if r.t_end is None else r.t_end
                    t = f" {span(r.t_start, end)}" if r.t_start is not None and end is not None else ""
                    arrow = f"-{r.label}->" if r.direction == "out" else f"<-{r.label}-"
                    lines.append(f"    {arrow} {r.node_id.rsplit('/', 1)[-1]}{t} {clip(r.text, 110)}")
        lines += render_people(self.people)
        if not lines:
            return f"No appearances{when}."
        lines = budgeted(lines, "pass video_id, or as_of_sec, or an entity_id instead of a name")
        if self.library:
            lines.append("Next: get_entity_timeline(entity_id=..., video_id=...) for one video's episodes and roles, "
                         "or get_event_chain(activity=...) for an activity across days.")
            return "\n".join(lines)
        lines.append("Next: get_subgraph(macro_id=...) for an appearance's episode, or get_relations(node_id=...) "
                     "on a mention.")
        return "\n".join(lines)
