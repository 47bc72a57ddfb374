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
vectors are stored anywhere), and from the copies a forgotten video keeps for an undo (``changes/<id>/``,
``memtools.changes.kept_video``: a person's clusters there are found by the person ids kept with them, a
forgotten video's cluster by its name). The transcript keeps its text and its speaker labels (``S1`` or the name):
who said what is not biometric, the vectors are. It is recorded in the change log as ``pending`` with the
clusters it forgets, before any file is touched; a kill part-way is finished by the next change (the
deletion is done again: it is idempotent), so it is whole. It cannot be undone: the vectors are deleted for
good, not kept in the log (``undo_change`` says so; a rebuild with ``--speakers`` computes them again).

Both check their target first and refuse, writing nothing and logging nothing, what is not there: a video the
memory does not hold, a cluster the video has no vectors for (never computed, or forgotten already: the change
that forgot them is named), a name the cluster has already.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from memtools.changes.actions import pinned_change
from memtools.changes.apply import Applied, Edit, read_video, settle_pending
from memtools.changes.edits import next_user_id
from memtools.changes.forgetting import FORGET, delete_vectors
from memtools.changes.kept_video import has_kept, kept_clusters
from memtools.changes.log import ChangeLog
from memtools.errors import ToolError, ToolNotFound
from memtools.schema import Edge, EdgeCategory, Entity, EntityType, Grounding, VideoGraph, entity_id
from memtools.store.faults import fault_point
from memtools.store.library.identity import USER_MARK, user_mark
from memtools.store.library.reads import ClusterLink, PeopleReads
from memtools.store.tables.id_ledger import IdLedger
from memtools.store.tables.voices import load_voices
from memtools.tools.caller import require_write

if TYPE_CHECKING:
    from memtools.store import Memory

CLUSTER = re.compile(r"^([^/]+)/([SF]\d+)$")
PERSON = re.compile(r"^lib/person_\d{4,}$")
TARGET_HINT = ("name a cluster '<video>/S1' (a voice) or '<video>/F1' (a face), or a person 'lib/person_0001' "
               "(get_relations on an utterance, or get_entity_timeline, gives them)")


def _reads(memory: Memory) -> PeopleReads | None:
    memory.refresh()
    return PeopleReads.open(memory.path, memory.manifest.generation)  # type: ignore[return-value]


def _clusters(memory: Memory, target: str, forgotten: bool = False) -> list[tuple[str, ...]]:
    """(video, kind, label) of the voice and face clusters ``target`` names (a cluster, or a person's); with
    ``forgotten``, a person's clusters that forgotten videos left in the change log too (``(..., change)``)."""
    target = target.strip()
    m = CLUSTER.match(target)
    if m:
        return [(m.group(1), "voice" if m.group(2).startswith("S") else "face", m.group(2))]
    if not PERSON.match(target):
        raise ToolError(f"{target!r} is not a person or a cluster; {TARGET_HINT}")
    reads = _reads(memory)
    found: list[ClusterLink] = reads.clusters_of_people([target]) if reads is not None else []
    kept = kept_clusters(memory.path, [target]) if forgotten else []
    if not found and not kept:
        why = "" if reads is not None else " (the library layer is not computed: run `memtools repair`)"
        raise ToolNotFound(f"no person {target!r} in this memory{why}; {TARGET_HINT}")
    return [*((c.video_id, c.kind, c.label) for c in found if c.kind in ("voice", "face")), *kept]


def _face_times(memory: Memory, video_id: str, label: str) -> list[float]:
    for face in _faces_of(memory, video_id):
        if face.label == label:
            return sorted(float(s["t"] if isinstance(s, dict) else s.t) for s in face.sightings)
    return []


def _faces_of(memory: Memory, video_id: str) -> list[Any]:
    from memtools.store.library.people import _faces

    return _faces(memory.path, video_id)


def _no_user_ids(prefix: str) -> int:
    return 0


def named(graph: VideoGraph, kind: str, label: str, name: str, face_times: list[float],
          floor: Callable[[str], int] = _no_user_ids) -> VideoGraph:
    """The video with cluster (``kind``, ``label``) named ``name`` by the user (module docstring); ``floor`` gives
    the highest mark number issued before (``IdLedger.highest``), so an undone mark's id is not reused."""
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
    if mark is not None and mark.name == name and all(s.speaker == name for s in lines):
        raise ToolError(f"{kind} {label} of {graph.video_id} is already named {name!r}; nothing to change")
    for s in lines:
        s.speaker = name
    if mark is not None:
        mark.name = name
        return out
    t = min(times)
    macro = min(out.macros, key=lambda m: (not (m.t_start <= t <= m.t_end), abs(m.t_start - t)))
    mark_id = next_user_id(lambda n: entity_id(macro.id, n), {e.id for e in out.entities}, floor)
    mention = Entity(id=mark_id, video_id=out.video_id, macro_id=macro.id, name=name,
                     entity_type=EntityType.PERSON,
                     grounding=Grounding(primary_time=t, distinctive_features=[user_mark(kind, label)]))
    out.entities.append(mention)
    out.edges += [Edge(source=mention.id, target=s.id, category=EdgeCategory.SPEECH, label="SAYS",
                       description="named by the user") for s in lines]
    return out


def label_person(memory: Memory, target: str, name: str) -> Applied:
    """Name a voice or face cluster (or a library person, through its first cluster) as the user."""
    video_id, kind, label = _clusters(memory, target)[0][:3]
    faces = _face_times(memory, video_id, label) if kind == "face" else []

    def make(graph: VideoGraph, ledger: IdLedger) -> Edit:
        after = named(graph, kind, label, name, faces, ledger.highest)
        return Edit("label_person", video_id, f"named {kind} {label} of {video_id} {' '.join(name.split())!r}",
                    after)

    return pinned_change(memory, video_id, make)


def _has_vectors(memory: Memory, video_id: str, kind: str, label: str) -> bool:
    if kind == "voice":
        return any(v.label == label for v in load_voices(memory.path, video_id))
    return any(f.label == label for f in _faces_of(memory, video_id))


def _forgot_by(log: ChangeLog, cluster: tuple[str, ...]) -> str | None:
    """The change that forgot this cluster's vectors already, if the log has one."""
    for c in log.entries(500):
        if c.action == FORGET and c.state == "done" and list(cluster) in (log.before(c.id) or {}).get(FORGET, []):
            return c.id
    return None


def _with_vectors(memory: Memory, target: str, clusters: list[tuple[str, ...]], log: ChangeLog
                  ) -> list[tuple[str, ...]]:
    """The clusters of ``target`` whose vectors are there to forget (a forgotten video's in the change log's kept
    copy: ``memtools.changes.kept_video``); none is refused, saying why."""
    memory.refresh()
    live = [c for c in clusters if len(c) == 3]
    missing = sorted({c[0] for c in live} - set(memory.manifest.videos.ids()))
    left: list[tuple[str, ...]] = [k for c in live if c[0] in missing
                                   for k in kept_clusters(memory.path, video_id=c[0], label=c[2]) if k[1] == c[1]]
    left += [c for c in clusters if len(c) == 4 and has_kept(memory.path, (c[0], c[1], c[2], c[3]))]
    if missing and len(missing) == len({c[0] for c in live}) and not left:
        raise ToolNotFound(f"no video {missing[0]!r} in this memory; list_videos gives the ids")
    kept: list[tuple[str, ...]] = [c for c in live if c[0] not in missing and _has_vectors(memory, *c[:3])]
    kept += left
    if kept:
        return kept
    forgot = next((cid for c in clusters if (cid := _forgot_by(log, c))), None)
    if forgot:
        raise ToolError(f"the voice and face vectors of {target.strip()} were forgotten already, by change {forgot}; "
                        "nothing is left to forget")
    video_id, kind, label = clusters[0][:3]
    raise ToolNotFound(f"video {video_id!r} has no {kind} vectors for {target.strip()} (its {kind} clusters: "
                       f"{_labels(memory, video_id, kind) or 'none'}); {TARGET_HINT}")


def _labels(memory: Memory, video_id: str, kind: str) -> str:
    found = load_voices(memory.path, video_id) if kind == "voice" else _faces_of(memory, video_id)
    return ", ".join(sorted(x.label for x in found))


def forget_person(memory: Memory, target: str, *, purge: bool = False) -> Applied:
    """Delete the voice and face vectors of a person (or of one cluster); the transcript keeps its text and labels.
    ``purge``: then write the memory's files again so that no byte of them is left (``memtools.changes.purge``,
    reason "forget_person"); ``Applied.receipt`` says what was rewritten."""
    applied = _forget_person(memory, target)
    if not purge:
        return applied
    from memtools.changes.purge import purge_videos

    clusters = [list(c) for c in (ChangeLog(memory.path).before(applied.change_id) or {}).get(FORGET, [])]
    receipt = purge_videos(memory, [], reason="forget_person", clusters=clusters)
    return replace(applied, receipt=receipt)


def _forget_person(memory: Memory, target: str) -> Applied:
    caller = require_write()
    log = ChangeLog(memory.path)
    clusters = _clusters(memory, target, forgotten=True)
    if not clusters:
        raise ToolNotFound(f"{target!r} has no voice or face clusters (only named speakers): there are no vectors "
                           "to forget")
    with memory.writes_paused():
        memory.finish_recovery()
        settle_pending(memory, log)  # a forget_person a kill left pending is finished there
        clusters = _with_vectors(memory, target, clusters, log)  # under the lock: no second forget slips past
        video_id = clusters[0][0]
        summary = (f"forgot the voice and face vectors of {target.strip()} ({len(clusters)} cluster(s) in "
                   f"{len({c[0] for c in clusters})} video(s)); this cannot be undone")
        cid = log.begin(front_end=caller.front_end, who=caller.who, action=FORGET, summary=summary,
                        video_id=video_id, before=json.dumps({FORGET: clusters}), after_digest=None)
        fault_point("change-recorded")
        delete_vectors(memory, clusters)
        fault_point("change-written")
        log.settle(cid, True)
    return Applied(cid, FORGET, summary, video_id, read_video(memory, video_id))


__all__ = ["forget_person", "label_person", "named"]
