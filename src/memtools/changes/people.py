"""Correcting who is who: ``label_person`` names a voice or face cluster (the strongest evidence there is), and
``forget_person`` deletes the voice and face vectors of a person. See docs/people.md.

    label_person(memory, "talk/S1", "Ada Lovelace")        # a cluster of a video
    label_person(memory, "lib/person_0002", "Ada")          # a library person: its first cluster is named
    forget_person(memory, "lib/person_0002")                # its centroids, in every video, are deleted

**label_person** is a change to one video, journaled, logged and undone like a rename: the Speech nodes of
the cluster take the name as their ``speaker`` (so ``get_transcript`` shows it), and a PERSON mention with
that name is added in the episode where the cluster is first heard or seen (``<macro>/ent_9001``; a
distinctive feature of it says which cluster the user named, and it SAYS the cluster's lines), or renamed when the user
named this cluster before. The library layer attaches the cluster to that mention's entity with evidence
``user`` and links persons across videos by the user's names before any vector.

**forget_person** removes the centroids of the person's voice and face clusters from ``voices/<video>.json``
and ``faces/<video>.json`` (and the build's speaker checkpoint, which holds them too; no per-utterance
vectors are stored anywhere). The transcript keeps its text and its speaker labels (``S1`` or the name):
who said what is not biometric, the vectors are. It is recorded in the change log as ``pending`` with the
clusters it forgets, before any file is touched; a kill part-way is finished by the next change (the
deletion is done again: it is idempotent), so it is whole. It cannot be undone: the vectors are deleted for
good, not kept in the log (``undo_change`` says so; a rebuild with ``--speakers`` computes them again).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from memtools.changes.apply import Applied, Edit, change, read_video, settle_pending
from memtools.changes.forgetting import FORGET, delete_vectors
from memtools.changes.log import ChangeLog
from memtools.errors import ToolError, ToolNotFound
from memtools.schema import Edge, EdgeCategory, Entity, EntityType, Grounding, VideoGraph, entity_id
from memtools.store.faults import fault_point
from memtools.store.library.identity import USER_MARK, user_mark
from memtools.store.library.reads import ClusterLink, PeopleReads
from memtools.tools.caller import require_write

if TYPE_CHECKING:
    from memtools.store import Memory

CLUSTER = re.compile(r"^([^/]+)/([SF]\d+)$")
PERSON = re.compile(r"^lib/person_\d{4,}$")
TARGET_HINT = ("name a cluster '<video>/S1' (a voice) or '<video>/F1' (a face), or a person 'lib/person_0001' "
               "(get_relations on an utterance, or get_entity_timeline, gives them)")
FIRST_MARK = 9001


def _reads(memory: Memory) -> PeopleReads | None:
    memory.refresh()
    return PeopleReads.open(memory.path, memory.manifest.generation)  # type: ignore[return-value]


def _clusters(memory: Memory, target: str) -> list[tuple[str, str, str]]:
    """(video, kind, label) of the voice and face clusters ``target`` names (a cluster, or a person's)."""
    target = target.strip()
    m = CLUSTER.match(target)
    if m:
        return [(m.group(1), "voice" if m.group(2).startswith("S") else "face", m.group(2))]
    if not PERSON.match(target):
        raise ToolError(f"{target!r} is not a person or a cluster; {TARGET_HINT}")
    reads = _reads(memory)
    found: list[ClusterLink] = reads.clusters_of_people([target]) if reads is not None else []
    if not found:
        why = "" if reads is not None else " (the library layer is not computed: run `memtools repair`)"
        raise ToolNotFound(f"no person {target!r} in this memory{why}; {TARGET_HINT}")
    return [(c.video_id, c.kind, c.label) for c in found if c.kind in ("voice", "face")]


def _face_times(memory: Memory, video_id: str, label: str) -> list[float]:
    from memtools.store.library.people import _faces

    for face in _faces(memory.path, video_id):
        if face.label == label:
            return sorted(float(s["t"] if isinstance(s, dict) else s.t) for s in face.sightings)
    return []


def named(graph: VideoGraph, kind: str, label: str, name: str, face_times: list[float]) -> VideoGraph:
    """The video with cluster (``kind``, ``label``) named ``name`` by the user (module docstring)."""
    name = " ".join(name.split())
    if not name:
        raise ToolError("the name is empty; give the person's name, e.g. 'Ada'")
    out = graph.model_copy(deep=True)
    mark = next((e for e in out.entities for f in e.grounding.distinctive_features
                 if (m := USER_MARK.match(f)) and m.groups() == (kind, label)), None)
    said = {e.target for e in out.edges if mark is not None and e.source == mark.id and e.label == "SAYS"}
    lines = [s for s in out.speech if kind == "voice" and (s.id in said or s.speaker == label)]
    times = [s.t_start for s in lines] if kind == "voice" else face_times
    if not times:
        raise ToolNotFound(f"video {graph.video_id!r} has no {kind} {label!r}; {TARGET_HINT}")
    for s in lines:
        s.speaker = name
    if mark is not None:
        mark.name = name
        return out
    t = min(times)
    macro = min(out.macros, key=lambda m: (not (m.t_start <= t <= m.t_end), abs(m.t_start - t)))
    taken = {e.id for e in out.entities}
    n = FIRST_MARK
    while entity_id(macro.id, n) in taken:
        n += 1
    mention = Entity(id=entity_id(macro.id, n), video_id=out.video_id, macro_id=macro.id, name=name,
                     entity_type=EntityType.PERSON,
                     grounding=Grounding(primary_time=t, distinctive_features=[user_mark(kind, label)]))
    out.entities.append(mention)
    out.edges += [Edge(source=mention.id, target=s.id, category=EdgeCategory.SPEECH, label="SAYS",
                       description="named by the user") for s in lines]
    return out


def label_person(memory: Memory, target: str, name: str) -> Applied:
    """Name a voice or face cluster (or a library person, through its first cluster) as the user."""
    video_id, kind, label = _clusters(memory, target)[0]
    faces = _face_times(memory, video_id, label) if kind == "face" else []

    def make(graph: VideoGraph | None) -> Edit:
        if graph is None:
            raise ToolNotFound(f"no video {video_id!r} in this memory; list_videos gives the ids")
        after = named(graph, kind, label, name, faces)
        return Edit("label_person", video_id, f"named {kind} {label} of {video_id} {' '.join(name.split())!r}",
                    after)

    return change(memory, video_id, make)


def forget_person(memory: Memory, target: str) -> Applied:
    """Delete the voice and face vectors of a person (or of one cluster); the transcript keeps its text and labels."""
    caller = require_write()
    clusters = _clusters(memory, target)
    if not clusters:
        raise ToolNotFound(f"{target!r} has no voice or face clusters (only named speakers): there are no vectors "
                           "to forget")
    log = ChangeLog(memory.path)
    video_id = clusters[0][0]
    summary = (f"forgot the voice and face vectors of {target.strip()} ({len(clusters)} cluster(s) in "
               f"{len({v for v, _, _ in clusters})} video(s)); this cannot be undone")
    with memory.writes_paused():
        memory.finish_recovery()
        settle_pending(memory, log)  # a forget_person a kill left pending is finished there
        cid = log.begin(front_end=caller.front_end, who=caller.who, action=FORGET, summary=summary,
                        video_id=video_id, before=json.dumps({FORGET: clusters}), after_digest=None)
        fault_point("change-recorded")
        delete_vectors(memory, clusters)
        fault_point("change-written")
        log.settle(cid, True)
    return Applied(cid, FORGET, summary, video_id, read_video(memory, video_id))


__all__ = ["forget_person", "label_person", "named"]
