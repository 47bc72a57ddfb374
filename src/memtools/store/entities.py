"""Canonical entities: the mentions of one real-world referent across a video's macro events,
merged into one profile with names, aliases, a description and a dated timeline.

A macro event's subgraph holds *mentions* (``<video>/macro_0003/ent_002``); the same ball or
cook appears again as a new mention in every episode it is seen in. MEMDREAMER canonicalises
key entities across a whole video ("LeBron", "King James" -> one name); here the same is done
for the graph's entity mentions, deterministically and without a model:

* mentions joined by an ``IS_SAME_AS`` edge are one entity;
* otherwise two mentions in *different* macro events are one entity when they have the same
  type and the same normalised name (or, unnamed, the same normalised description), or when
  their search vectors are very close (cosine >= ``SAME_VECTOR``) and no shared attribute
  disagrees (a red ball is never merged with a white one);
* two mentions of one macro event are never merged by name or vector: the extractor already
  decided they are different things there.

Each profile lists every appearance in time order with the role edges of that mention
(PERFORMS / RECEIVES / USES_TOOL / ... with the micro-event's action and times) and its
spatial edges, so ``get_entity_timeline`` needs no graph query. Profiles are a derived index:
they are recomputed from the graph whenever a video is written.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from memtools.describe import clip
from memtools.schema import EdgeCategory, Entity, MicroEvent, VideoGraph

SAME_VECTOR = 0.9
_ARTICLES = re.compile(r"^(?:the|a|an|some|this|that)\s+")


def canonical_id(video_id: str, n: int) -> str:
    return f"{video_id}/entity_{n:03d}"


def _norm(text: str | None) -> str:
    text = " ".join((text or "").lower().replace("-", " ").split()).strip(" .,;:!?\"'")
    return _ARTICLES.sub("", text)


def _key(e: Entity) -> str:
    return _norm(e.name) or _norm(e.description)


def _conflict(a: Entity, b: Entity) -> bool:
    shared = set(a.attributes) & set(b.attributes)
    return any(_norm(a.attributes[k]) != _norm(b.attributes[k]) for k in shared)


class _Groups:
    """Union-find over mention indices that keeps each group's set of macro events."""

    def __init__(self, mentions: Sequence[Entity]) -> None:
        self.parent = list(range(len(mentions)))
        self.macros = [{m.macro_id} for m in mentions]
        self.mentions = mentions

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, i: int, j: int, *, force: bool = False) -> None:
        a, b = self.find(i), self.find(j)
        if a == b or (not force and self.macros[a] & self.macros[b]):
            return
        if any(_conflict(self.mentions[x], self.mentions[y]) for x in self.members(a) for y in self.members(b)):
            if not force:
                return
        self.parent[b] = a
        self.macros[a] |= self.macros[b]

    def members(self, root: int) -> list[int]:
        return [i for i in range(len(self.parent)) if self.find(i) == root]


def canonicalize(graph: VideoGraph, vectors: Mapping[str, np.ndarray] | None = None) -> list[list[Entity]]:
    """Groups of mentions, each one canonical entity, in order of first appearance."""
    macro_start = {m.id: m.t_start for m in graph.macros}
    mentions = sorted(graph.entities, key=lambda e: (macro_start.get(e.macro_id, 0.0), e.id))
    index = {e.id: i for i, e in enumerate(mentions)}
    groups = _Groups(mentions)
    for edge in graph.edges:
        if edge.label == "IS_SAME_AS" and edge.source in index and edge.target in index:
            groups.union(index[edge.source], index[edge.target], force=True)
    by_key: dict[tuple[str, str], int] = {}
    for i, e in enumerate(mentions):
        key = (e.entity_type.value, _key(e))
        if key[1] and key in by_key:
            groups.union(by_key[key], i)
        by_key.setdefault(key, i)
    if vectors:
        have = [i for i, e in enumerate(mentions) if e.id in vectors]
        if len(have) > 1:
            matrix = np.stack([np.asarray(vectors[mentions[i].id], dtype=np.float32) for i in have])
            sims = matrix @ matrix.T
            for a in range(len(have)):
                for b in range(a + 1, len(have)):
                    i, j = have[a], have[b]
                    if sims[a, b] >= SAME_VECTOR and mentions[i].entity_type == mentions[j].entity_type:
                        groups.union(i, j)
    found: dict[int, list[Entity]] = defaultdict(list)
    for i, e in enumerate(mentions):
        found[groups.find(i)].append(e)
    return sorted(found.values(), key=lambda g: index[g[0].id])


def _appearances(graph: VideoGraph, group: Sequence[Entity]) -> list[dict[str, Any]]:
    macros = {m.id: m for m in graph.macros}
    events = {e.id: e for e in graph.events}
    names = {n.id: n for n in (*graph.entities, *graph.ocr)}
    ids = {e.id for e in group}
    roles: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for edge in graph.edges:
        if edge.category not in (EdgeCategory.ROLE, EdgeCategory.SPATIAL) or edge.label == "IS_SAME_AS":
            continue
        for mine, other, direction in ((edge.source, edge.target, "out"), (edge.target, edge.source, "in")):
            if mine not in ids:
                continue
            item: dict[str, Any] = {"label": edge.label, "direction": direction, "node_id": other}
            node = events.get(other) or names.get(other)
            if isinstance(node, MicroEvent):
                item.update(text=clip(node.action or node.description, 140), t_start=node.t_start, t_end=node.t_end)
            elif node is not None:
                words = f'"{node.text}"' if hasattr(node, "text") else (node.name or node.description)
                item["text"] = clip(words, 100)
            roles[mine].append(item)
    out = []
    for e in group:
        macro = macros[e.macro_id]
        acts = sorted(roles.get(e.id, []), key=lambda r: (r.get("t_start", macro.t_start), r["label"]))
        out.append({"mention_id": e.id, "macro_id": macro.id, "macro_label": clip(macro.label, 120),
                    "super_id": macro.super_id, "t_start": macro.t_start, "t_end": macro.t_end,
                    "seen_at": e.grounding.primary_time, "description": clip(e.description, 200), "roles": acts})
    return sorted(out, key=lambda a: (a["t_start"], a["mention_id"]))


def entity_rows(graphs: Sequence[VideoGraph], vectors: Mapping[str, np.ndarray] | None = None) -> list[dict[str, Any]]:
    """Rows of the lance ``entities`` table (without vectors) for these videos."""
    rows: list[dict[str, Any]] = []
    for graph in graphs:
        for n, group in enumerate(canonicalize(graph, vectors), 1):
            first = group[0]
            names = list(dict.fromkeys(x.strip().rstrip(".") for e in group for x in (e.name, e.description)
                                       if x and x.strip()))
            name = next((e.name for e in group if e.name), None) or (names[0] if names else
                                                                    first.entity_type.value.lower())
            aliases = [a for a in names if _norm(a) != _norm(name)]
            timeline = _appearances(graph, group)
            attrs = {k: v for e in group for k, v in e.attributes.items()}
            text = ". ".join(p for p in (name, first.entity_type.value.lower(), "; ".join(aliases[:6]),
                                          ", ".join(f"{k}: {v}" for k, v in attrs.items())) if p)
            rows.append({
                "id": canonical_id(graph.video_id, n), "video_id": graph.video_id, "name": clip(name, 120),
                "entity_type": first.entity_type.value, "aliases": json.dumps(aliases[:12], ensure_ascii=False),
                "description": clip(max((e.description for e in group), key=len, default=""), 300),
                "mentions": json.dumps([e.id for e in group]), "t_first": timeline[0]["t_start"],
                "t_last": timeline[-1]["t_end"], "text": text,
                "timeline": json.dumps(timeline, ensure_ascii=False),
            })
    return rows
