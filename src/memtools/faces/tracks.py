"""Faces followed within a macro event, then clustered per video into ``F1``, ``F2``, ...

    tracks = track(seen)                        # lists of indices into ``seen``, one list per track
    faces = cluster_faces(seen, step=2.0)       # [Face] with centroids, sightings and seconds on screen

**Tracks.** Within one macro event, keyframe after keyframe, a face continues the track of a face on
the previous keyframe when their descriptors are within ``TRACK_DISTANCE`` and their boxes overlap
(IoU at least ``OVERLAP``), or, anywhere in the frame, within ``JUMP_DISTANCE`` (a cut, a turn of
the camera). Pairs are taken closest first; each face continues at most one track.

**Clusters.** Each track's mean descriptor is one row; rows are clustered by average linkage on
euclidean distance (``memtools.linkage``), stopping at ``THRESHOLD``. Two tracks seen on the same
keyframe are two people and never merge. ``THRESHOLD`` (0.5) was chosen on data with
``benchmarks/faces.py`` (docs/faces.md gives the sweep): on the real photos available offline, varied
as keyframes vary, one person's faces sit 0.06-0.55 apart and different people 0.64-0.92, and every
threshold from 0.45 to 0.6 clusters them perfectly; 0.5 leaves a margin below dlib's 0.6 because a
person split in two is easier to mend (merge) than two people made one.
Above ``MAX_TRACKS`` tracks the longest are clustered and each other joins its nearest cluster
(within the threshold) or stands alone, so time stays bounded.

A face's ``seconds`` on screen is the sum over its tracks of (last sighting - first sighting + ``step``),
``step`` being the usual gap between keyframes (a single sighting stands for one gap).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memtools.linkage import average_linkage, renumbered
from memtools.store.tables.faces import Face, Sighting

THRESHOLD = 0.5  # euclidean distance at which face clusters stop merging (benchmarks/faces.py)
TRACK_DISTANCE = 0.6  # a face continues a track on the next keyframe within this, where the boxes overlap...
OVERLAP = 0.2  # ...by at least this intersection over union
JUMP_DISTANCE = 0.45  # or anywhere in the frame within this
MAX_TRACKS = 1500
PREFIX = "F"


@dataclass(frozen=True)
class Seen:
    """One face found on one keyframe."""

    keyframe: str
    t: float
    box: tuple[int, int, int, int]
    vector: np.ndarray
    macro_id: str | None = None


def iou(a: Sequence[int], b: Sequence[int]) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def track(seen: Sequence[Seen]) -> list[list[int]]:
    """Tracks (indices into ``seen`` in time order), each within one macro event, in order of first sighting."""
    tracks: list[list[int]] = []
    groups: dict[str | None, dict[tuple[float, str], list[int]]] = {}
    for i, s in sorted(enumerate(seen), key=lambda p: (p[1].t, p[0])):
        groups.setdefault(s.macro_id, {}).setdefault((s.t, s.keyframe), []).append(i)
    for frames in groups.values():
        open_tracks: list[int] = []
        for frame in frames.values():  # in time order (inserted so)
            pairs = []
            for k in open_tracks:
                last = seen[tracks[k][-1]]
                for i in frame:
                    d = float(np.linalg.norm(seen[i].vector - last.vector))
                    if d <= JUMP_DISTANCE or (d <= TRACK_DISTANCE and iou(last.box, seen[i].box) >= OVERLAP):
                        pairs.append((d, k, i))
            taken_tracks: set[int] = set()
            taken: set[int] = set()
            for _, k, i in sorted(pairs):
                if k not in taken_tracks and i not in taken:
                    tracks[k].append(i)
                    taken_tracks.add(k)
                    taken.add(i)
            for i in frame:
                if i not in taken:
                    tracks.append([i])
                    taken_tracks.add(len(tracks) - 1)
            open_tracks = sorted(taken_tracks)
    tracks.sort(key=lambda members: (seen[members[0]].t, members[0]))
    return tracks


def _cluster_tracks(seen: Sequence[Seen], tracks: list[list[int]], threshold: float) -> np.ndarray:
    means = np.array([np.mean([seen[i].vector for i in members], axis=0) for members in tracks])
    order = sorted(range(len(tracks)), key=lambda k: -len(tracks[k]))
    core = sorted(order[:MAX_TRACKS])
    dist = np.linalg.norm(means[core][:, None, :] - means[core][None, :, :], axis=2)
    frames = [{seen[i].keyframe for i in tracks[k]} for k in core]
    for a in range(len(core)):
        for b in range(a + 1, len(core)):
            if frames[a] & frames[b]:
                dist[a, b] = dist[b, a] = np.inf  # on one keyframe together: two people
    owner = np.full(len(tracks), -1, dtype=np.int64)
    owner[core] = average_linkage(dist, threshold)
    if len(core) < len(tracks):
        clusters = np.unique(owner[core])
        centroids = np.array([means[core][owner[core] == c].mean(axis=0) for c in clusters])
        for k in order[MAX_TRACKS:]:
            d = np.linalg.norm(centroids - means[k], axis=1)
            owner[k] = clusters[int(np.argmin(d))] if d.min() <= threshold else len(tracks) + k
    return renumbered(owner)


def cluster_faces(seen: Sequence[Seen], threshold: float = THRESHOLD, *, step: float | None = None) -> list[Face]:
    """The faces of one video: tracks clustered, labelled ``F1``, ``F2``, ... in order of first sighting."""
    if not seen:
        return []
    tracks = track(seen)
    labels = _cluster_tracks(seen, tracks, threshold)
    if step is None:
        times = np.unique([s.t for s in seen])
        step = float(np.median(np.diff(times))) if len(times) > 1 else 0.0
    faces = []
    for number in range(int(labels.max()) + 1):
        members = [tracks[k] for k in np.flatnonzero(labels == number)]
        rows = sorted((i for m in members for i in m), key=lambda i: (seen[i].t, i))
        centroid = np.mean([seen[i].vector for i in rows], axis=0)
        seconds = sum(seen[m[-1]].t - seen[m[0]].t + step for m in members)
        faces.append(Face(
            label=f"{PREFIX}{number + 1}", centroid=[round(float(v), 5) for v in centroid],
            sightings=[Sighting(t=seen[i].t, keyframe=seen[i].keyframe, box=list(seen[i].box),
                                macro_id=seen[i].macro_id) for i in rows],
            seconds=round(seconds, 3)))
    return faces
