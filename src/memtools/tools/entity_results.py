"""Typed results of the entity tools (``search_entities``, ``get_entity_timeline``)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from memtools.tools.results import _Result
from memtools.tools.text import budgeted, clip, hms, span


class EntityItem(BaseModel):
    id: str
    video_id: str
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
            lines.append(f"{i}. {e.id} {e.entity_type} {clip(e.name, 80)}{aka} {span(e.t_first, e.t_last)}, "
                         f"{e.appearances} appearance(s)")
            if e.description and e.description.rstrip(".") != e.name.rstrip("."):
                lines.append(f"   {clip(e.description, 160)}")
        lines = budgeted(lines, "lower top_k or pass video_id")
        lines.append("Next: get_entity_timeline(entity_id=...) for when each appears and what it does.")
        return "\n".join(lines)


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


class EntityTimeline(_Result):
    timelines: list[EntityTimelineItem]
    as_of_sec: float | None = None

    def render(self) -> str:
        when = f" as of {hms(self.as_of_sec)}" if self.as_of_sec is not None else ""
        lines: list[str] = []
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
        if not lines:
            return f"No appearances{when}."
        lines = budgeted(lines, "pass video_id, or as_of_sec, or an entity_id instead of a name")
        lines.append("Next: get_subgraph(macro_id=...) for an appearance's episode, or get_relations(node_id=...) "
                     "on a mention.")
        return "\n".join(lines)
