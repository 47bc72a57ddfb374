"""People in ``library.sqlite``: each voice, face and named-speaker cluster of a video, the PERSON entity it
is attached to there, and the library-level person (``lib/person_0001``) it belongs to across videos
(the rules: ``memtools.store.library.identity``).

Derived data, like the rest of the layer. Table ``clusters``: one row per cluster (video, kind, label),
its name, times, attachment (entity, evidence, confidence) and its person (id, evidence, confidence). The
per-video part is computed from the graph (Speech nodes' ``speaker``, ``SAYS`` edges, the user's naming
mentions) and the ``entities`` rows when a video is written; the centroids are read from
``voices/<video>.json`` (and ``faces/<video>.json`` where ``memtools.store.tables.faces`` exists: a face
cluster plugs in through ``FACE_LOADER``) and never copied here, so forgetting them there forgets them. The
cross-video part is computed whole at every layer update (a library holds few clusters), in the same
transaction, after the entities are linked. Person ids are kept across re-imports in the layer's ``ids``
table (video, ``person:voice``, ``S1``) -> ``lib/person_0003``.
"""

from __future__ import annotations

import importlib
import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memtools.schema import VideoGraph
from memtools.store.library.identity import (
    SPEAKER_LABEL,
    USER_MARK,
    Cluster,
    PersonEntity,
    assign,
    attach,
)
from memtools.store.tables.voices import load_voices

PERSON = "PERSON"
SCHEMA = """
CREATE TABLE IF NOT EXISTS clusters (video_id TEXT NOT NULL, kind TEXT NOT NULL, label TEXT NOT NULL,
  name TEXT, user_named INTEGER NOT NULL, spans TEXT NOT NULL, canonical_id TEXT, sources TEXT NOT NULL,
  confidence REAL NOT NULL, person_id TEXT, link TEXT, link_confidence REAL, PRIMARY KEY (video_id, kind, label));
CREATE INDEX IF NOT EXISTS clusters_person ON clusters(person_id);
CREATE INDEX IF NOT EXISTS clusters_canonical ON clusters(canonical_id);
"""
FACE_LOADER = "memtools.store.tables.faces"
"""The module whose ``load_faces(memory_path, video_id)`` gives a video's face clusters (label, centroid,
sightings with ``t``); optional: without it, people are voices and names."""


@dataclass
class PeopleInput:
    """What one video gives the people table (no vectors: those are read from their files)."""

    video_id: str
    speakers: dict[str, list[tuple[float, float]]]  # cluster label (a voice's, or a speaker's name) -> its times
    says: dict[str, dict[str, int]]  # speaker -> model mention id -> utterances it SAYS
    user_mentions: dict[tuple[str, str], tuple[str, str]]  # (kind, label) -> (mention id, the name given)
    persons: list[PersonEntity]


def people_input(graph: VideoGraph, rows: Sequence[Mapping[str, Any]]) -> PeopleInput:
    """The people input of one video from its graph and its canonical ``entities`` rows (timeline decoded)."""
    user: dict[tuple[str, str], tuple[str, str]] = {}
    for e in graph.entities:
        for feature in e.grounding.distinctive_features if e.entity_type == PERSON else ():
            if m := USER_MARK.match(feature):
                user[(m.group(1), m.group(2))] = (e.id, e.display_name)
    label_of_mark = {mid: label for (kind, label), (mid, _) in user.items() if kind == "voice"}
    named_line = {edge.target: label_of_mark[edge.source] for edge in graph.edges
                  if edge.label == "SAYS" and edge.source in label_of_mark}
    speakers: dict[str, list[tuple[float, float]]] = {}
    speaker_of: dict[str, str] = {}
    for s in graph.speech:
        label = named_line.get(s.id) or s.speaker  # a line the user named keeps its voice label here
        if label:
            speakers.setdefault(label, []).append((float(s.t_start), float(s.t_end)))
            speaker_of[s.id] = label
    says: dict[str, dict[str, int]] = {}
    for edge in graph.edges:
        if edge.label == "SAYS" and edge.target in speaker_of and edge.source not in label_of_mark:
            per = says.setdefault(speaker_of[edge.target], {})
            per[edge.source] = per.get(edge.source, 0) + 1
    persons = [PersonEntity(r["id"], r["name"], frozenset(r["mentions"]),
                            tuple((float(a["t_start"]), float(a["t_end"])) for a in r["timeline"]))
               for r in rows if r["entity_type"] == PERSON]
    return PeopleInput(graph.video_id, speakers, says, user, persons)


def _faces(folder: Path, video_id: str) -> list[Any]:
    try:
        module = importlib.import_module(FACE_LOADER)
    except ImportError:
        return []
    loader: Callable[[Path, str], list[Any]] = module.load_faces
    return list(loader(folder, video_id))


def _unit(vector: Any) -> np.ndarray | None:
    if vector is None or len(vector) == 0:
        return None
    v = np.asarray(vector, dtype=np.float32)
    n = float(np.linalg.norm(v))
    return v / n if n else None


def clusters_of(folder: Path, data: PeopleInput) -> list[Cluster]:
    """One video's clusters with their attachment to its PERSON entities (centroids from the files)."""
    out: list[Cluster] = []
    voices = {v.label: v for v in load_voices(folder, data.video_id)}
    named_voice = {label: name for (kind, label), (_, name) in data.user_mentions.items() if kind == "voice"}
    for label, spans in data.speakers.items():
        if label in voices or label in named_voice or SPEAKER_LABEL.match(label):
            voice = voices.get(label)
            c = Cluster("voice", data.video_id, label, spans, _unit(voice.centroid if voice else None),
                        name=named_voice.get(label), user_named=label in named_voice)
        else:
            c = Cluster("name", data.video_id, label, spans, None, name=label)
        attach(c, data.persons, {k: m for k, (m, _) in data.user_mentions.items()}, data.says.get(label, {}))
        out.append(c)
    named_face = {label: name for (kind, label), (_, name) in data.user_mentions.items() if kind == "face"}
    for face in _faces(folder, data.video_id):
        times = sorted(float(s["t"] if isinstance(s, Mapping) else s.t) for s in face.sightings) \
            if hasattr(face, "sightings") else []
        c = Cluster("face", data.video_id, face.label, [(t, t) for t in times], _unit(face.centroid),
                    name=named_face.get(face.label), user_named=face.label in named_face)
        attach(c, data.persons, {k: m for k, (m, _) in data.user_mentions.items()}, {})
        out.append(c)
    return out


def _row_cluster(row: tuple, folder: Path, centroids: dict[tuple[str, str], dict[str, np.ndarray | None]]
                 ) -> Cluster:
    vid, kind, label, name, user_named, spans, canonical, sources, confidence = row
    if (vid, kind) not in centroids:
        if kind == "voice":
            centroids[(vid, kind)] = {v.label: _unit(v.centroid) for v in load_voices(folder, vid)}
        elif kind == "face":
            centroids[(vid, kind)] = {f.label: _unit(f.centroid) for f in _faces(folder, vid)}
        else:
            centroids[(vid, kind)] = {}
    return Cluster(kind, vid, label, [tuple(s) for s in json.loads(spans)], centroids[(vid, kind)].get(label),
                   name=name, user_named=bool(user_named), canonical_id=canonical, sources=json.loads(sources),
                   confidence=confidence)


def store_video(conn: sqlite3.Connection, folder: Path, data: PeopleInput) -> None:
    """Replace one video's clusters (their per-video part; ``relink`` places them across videos)."""
    conn.execute("DELETE FROM clusters WHERE video_id = ?", (data.video_id,))
    conn.executemany("INSERT INTO clusters VALUES (?,?,?,?,?,?,?,?,?,NULL,NULL,NULL)", [
        (c.video_id, c.kind, c.label, c.name, int(c.user_named), json.dumps(c.spans), c.canonical_id,
         json.dumps(c.sources), c.confidence) for c in clusters_of(folder, data)])


def relink(conn: sqlite3.Connection, folder: Path) -> None:
    """Place every cluster in its library person again (inside the caller's transaction)."""
    centroids: dict[tuple[str, str], dict[str, np.ndarray | None]] = {}
    clusters = [_row_cluster(r, folder, centroids) for r in conn.execute(
        "SELECT video_id, kind, label, name, user_named, spans, canonical_id, sources, confidence FROM clusters")]
    remembered = {(v, t.split(":", 1)[1], k): lib for v, t, k, lib in conn.execute(
        "SELECT video_id, entity_type, key, lib_id FROM ids WHERE entity_type LIKE 'person:%'")}
    row = conn.execute("SELECT value FROM meta WHERE key = 'next_person'").fetchone()
    order = sorted({c.video_id for c in clusters})  # library order: stable whatever is written again
    _, links, next_number = assign(clusters, order, remembered, 1 if row is None else int(row[0]))
    conn.executemany("UPDATE clusters SET person_id = ?, link = ?, link_confidence = ? WHERE video_id = ? AND "
                     "kind = ? AND label = ?", [(pid, json.dumps(ev), conf, *key)
                                                for key, (pid, ev, conf) in links.items()])
    conn.executemany("INSERT OR REPLACE INTO ids VALUES (?,?,?,?)",
                     [(v, f"person:{k}", label, pid) for (v, k, label), (pid, _, _) in links.items()])
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('next_person', ?)", (next_number,))


__all__ = ["FACE_LOADER", "PeopleInput", "clusters_of", "people_input", "relink", "store_video"]
