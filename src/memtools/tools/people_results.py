"""Typed results about people (``get_entity_timeline`` on a person, identities in ``get_relations``)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from memtools.tools.text import clip, span


class IdentityLink(BaseModel):
    """A voice, face or named-speaker cluster of one video, the person entity it is attached to there, and the
    library-level person it belongs to, each link with its evidence and confidence."""

    person_id: str = Field(description="the library-level person ('lib/person_0001'), one across videos")
    kind: str = Field(description="voice (a speaker label S1, S2 ...), face (F1 ...), or name (a named speaker)")
    video_id: str
    label: str = Field(description="the cluster's label in its video (S1, F1, or the speaker's name)")
    name: str | None = Field(default=None, description="the name given to it (by the user or a subtitle)")
    entity_id: str | None = Field(default=None, description="the PERSON entity of that video it is attached to")
    attached_by: list[str] = Field(default_factory=list, description=(
        "why it is that entity: user (named by the user), name (the speaker's name), model (the model's "
        "entity says its lines, or is on screen while it speaks)"))
    confidence: float = 0.0
    linked_by: list[str] = Field(default_factory=list, description=(
        "why it is that library person: user, name, voice, face (or first: the person's first cluster)"))
    link_confidence: float = 0.0
    recorded_at: str | None = Field(default=None, description="the video's recording start (ISO 8601) when known")
    t_first: float = 0.0
    t_last: float = 0.0

    def line(self) -> str:
        name = f" {self.name!r}" if self.name else ""
        entity = (f", attached to {self.entity_id} by {', '.join(self.attached_by)} {self.confidence:.2f}"
                  if self.entity_id else "")
        how = "first seen" if self.linked_by == ["first"] else \
            f"linked by {', '.join(self.linked_by)} {self.link_confidence:.2f}"
        clock = f" (recorded {self.recorded_at})" if self.recorded_at else ""
        return (f"{self.video_id}{clock} {span(self.t_first, self.t_last)}: {self.kind} {self.label}{name} "
                f"({self.person_id}, {how}{entity})")


class PersonTimeline(BaseModel):
    """One library-level person across videos in recording order: each video's clusters and when they speak."""

    person_id: str
    name: str = Field(default="", description="the user's name for it, else a speaker's or its entity's name")
    videos: int
    links: list[IdentityLink]


def render_people(people: list[PersonTimeline]) -> list[str]:
    lines = []
    for p in people:
        name = f" {clip(p.name, 60)!r}" if p.name else ""
        lines.append(f"Person {p.person_id}{name}: heard or seen in {p.videos} video(s)")
        lines += [f"{n}. {link.line()}" for n, link in enumerate(p.links, 1)]
    return lines


__all__ = ["IdentityLink", "PersonTimeline", "render_people"]
