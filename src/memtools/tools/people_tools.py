"""People in the tools: ``get_entity_timeline`` follows a library-level person (``lib/person_0001``) across
videos in recording order and shows the identities (voice, face, named speaker) of the entities it shows;
``get_relations`` shows the identity of an entity mention or an utterance. Read from the library layer's
people (``memtools.store.library.people``); without the layer, or before it has people, nothing is added.
A mixin of ``MemoryTools`` (before ``EntityTools``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memtools.errors import ToolError, ToolNotFound
from memtools.store.library.reads import ClusterLink, PeopleReads, recording_order
from memtools.tools.entities import EntityTools
from memtools.tools.entity_results import EntityTimeline
from memtools.tools.library_tools import NOT_LINKED
from memtools.tools.people_results import IdentityLink, PersonTimeline

PERSON_ID = re.compile(r"^lib/person_\d{4,}$")


class PeopleTools(EntityTools):
    """Identities in ``get_entity_timeline`` and ``get_relations``."""

    def _people(self) -> PeopleReads | None:
        with self._reading():
            self.memory.refresh()
            return PeopleReads.open(self.memory.path, self.memory.manifest.generation)  # type: ignore[return-value]

    def _timelines(self, reads: PeopleReads, person_ids: Sequence[str]) -> list[PersonTimeline]:
        clusters = reads.clusters_of_people(list(person_ids))
        videos = {c.video_id for c in clusters}
        starts = self.memory.recorded_starts(sorted(videos))
        order = {v: i for i, v in enumerate(recording_order(videos, {v: starts.get(v) for v in videos}))}
        names = {r.id: r.name for r in self.memory.entities.by_ids(sorted({c.canonical_id for c in clusters
                                                                             if c.canonical_id}))}
        out = []
        for pid in person_ids:
            mine = sorted((c for c in clusters if c.person_id == pid),
                          key=lambda c: (order[c.video_id], min((a for a, _ in c.spans), default=0.0), c.label))
            if not mine:
                continue
            links = [_link(c, starts.get(c.video_id)) for c in mine]
            name = next((c.name for c in mine if c.user_named and c.name), None) or \
                next((c.name for c in mine if c.name), None) or \
                next((names[c.canonical_id] for c in mine if c.canonical_id in names and c.confidence >= 0.8), "")
            out.append(PersonTimeline(person_id=pid, name=name or "", videos=len({c.video_id for c in mine}),
                                      links=links))
        return out

    def get_entity_timeline(self, entity_id: str | None = None, name: str | None = None,
                            video_id: str | None = None, as_of_sec: float | None = None) -> EntityTimeline:
        if entity_id is not None and PERSON_ID.match(entity_id.strip()):
            reads = self._people()
            if reads is None:
                raise ToolError(NOT_LINKED.strip("()").replace(" M`", f" {self.memory.path}`"))
            people = self._timelines(reads, [entity_id.strip()])
            if not people:
                raise ToolNotFound(f"no person {entity_id!r} in this memory; get_entity_timeline(name=...) or "
                                   "get_relations on an utterance gives person ids like 'lib/person_0001'")
            if video_id is not None:
                vid = self._video_id(video_id)
                people = [p.model_copy(update={"links": [k for k in p.links if k.video_id == vid]}) for p in people]
            return EntityTimeline(timelines=[], people=people)
        missing: ToolNotFound | None = None
        found: EntityTimeline | None = None
        try:
            found = super().get_entity_timeline(entity_id, name, video_id, as_of_sec)
        except ToolNotFound as exc:
            missing = exc
        reads = self._people()
        ids: list[str] = []
        if reads is not None:
            shown = [t.entity.id for t in (found.timelines if found else [])]
            shown += [a.entity_id for lib in (found.library if found else []) for a in lib.appearances]
            ids = reads.people_of_entities(shown)
            if name and name.strip():
                ids += [p for p in reads.people_named(name) if p not in ids]
        if found is None:
            if not ids and missing is not None:
                raise missing
            found = EntityTimeline(timelines=[])
        if not ids:
            return found
        return found.model_copy(update={"people": self._timelines(reads, ids) if reads is not None else []})

    def _identities(self, node_id: str) -> list[IdentityLink]:
        """The identity of an utterance (its speaker's cluster) or of an entity (its clusters), for get_relations."""
        reads = self._people()
        if reads is None:
            return []
        vid = node_id.split("/", 1)[0]
        links: list[ClusterLink] = []
        if "/utt_" in node_id:
            with self._reading() as g:
                speaker = getattr(g.get(node_id), "speaker", None)
            if speaker:
                cluster = reads.cluster(vid, speaker)
                links = [cluster] if cluster is not None else [
                    c for c in reads.clusters_of_people(reads.people_named(speaker)) if c.video_id == vid]
        elif "/entity_" in node_id or "/ent_" in node_id:
            canonical = [r.id for r in self.memory.entities.of_video(vid) if r.id == node_id or node_id in r.mentions]
            links = [c for c in reads.clusters_of_people(reads.people_of_entities(canonical))
                     if c.canonical_id in canonical]
        starts = self.memory.recorded_starts([vid]) if links else {}
        return [_link(c, starts.get(c.video_id)) for c in links]


def _link(c: ClusterLink, start) -> IdentityLink:
    return IdentityLink(person_id=c.person_id, kind=c.kind, video_id=c.video_id, label=c.label, name=c.name,
                        entity_id=c.canonical_id, attached_by=c.sources, confidence=c.confidence,
                        linked_by=c.link, link_confidence=c.link_confidence,
                        recorded_at=start.isoformat() if start is not None else None,
                        t_first=min((a for a, _ in c.spans), default=0.0),
                        t_last=max((b for _, b in c.spans), default=0.0))


__all__ = ["PERSON_ID", "PeopleTools"]
