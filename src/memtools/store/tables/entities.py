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
  decided they are different things there;
* mentions that carry a canonical id (``Grounding.entity_id``, set once a change tool wrote the video) are
  one entity with every mention of that id and never one with a mention of another id: the user's
  corrections, not a later name or vector, decide them.

**Ids.** An entity whose mentions carry an id keeps it; one that carries none (a video no change touched,
or a mention a later write added) takes the next number after the highest id the video holds, in order
of first appearance: a fresh build numbers its entities ``entity_001``, ``entity_002``, ... as before. So a
rename, merge, split, note or undo never renumbers the others (docs/writing.md, "Ids that stay").

Each profile lists every appearance in time order with the role edges of that mention
(PERFORMS / RECEIVES / USES_TOOL / ... with the micro-event's action and times) and its
spatial edges, so ``get_entity_timeline`` needs no graph query. Profiles are a derived index:
they are recomputed from the graph whenever a video is written.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from memtools.describe import clip
from memtools.schema import EdgeCategory, Entity, MicroEvent, OcrText, VideoGraph

SAME_VECTOR = 0.9
SIMILARITY_BLOCK = 1024
_ARTICLES = re.compile(r"^(?:the|a|an|some|this|that)\s+")
_NUMBER = re.compile(r"/entity_(\d+)$")


def canonical_id(video_id: str, n: int) -> str:
    return f"{video_id}/entity_{n:03d}"


def id_number(entity_id: str | None) -> int:
    """The number of a canonical id (``kitchen/entity_012`` -> 12); 0 for anything else."""
    m = _NUMBER.search(entity_id or "")
    return int(m.group(1)) if m else 0


def _norm(text: str | None) -> str:
    text = " ".join((text or "").lower().replace("-", " ").split()).strip(" .,;:!?\"'")
    return _ARTICLES.sub("", text)


def _key(e: Entity) -> str:
    return _norm(e.name) or _norm(e.description)


def _attribute_values(e: Entity) -> dict[str, set[str]]:
    return {k: {_norm(v)} for k, v in e.attributes.items()}


class _Groups:
    """Union-find over mention indices that keeps each group's macro events and attribute values.

    Two groups conflict when they share an attribute whose values are not one and the same value
    on both sides (some member of one disagrees with some member of the other), so a merge costs
    the size of the attribute maps, not the product of the groups' sizes.
    """

    def __init__(self, mentions: Sequence[Entity]) -> None:
        self.parent = list(range(len(mentions)))
        self.macros = [{m.macro_id} for m in mentions]
        self.values = [_attribute_values(m) for m in mentions]
        self.ids = [{m.grounding.entity_id} - {None} for m in mentions]
        self.refused: set[tuple[int, int]] = set()  # groups only grow, so a refusal stays one

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def _conflict(self, a: int, b: int) -> bool:
        mine, theirs = self.values[a], self.values[b]
        return any(len(mine[k] | theirs[k]) > 1 for k in mine.keys() & theirs.keys())

    def union(self, i: int, j: int, *, force: bool = False) -> None:
        a, b = self.find(i), self.find(j)
        if a == b or (not force and (min(a, b), max(a, b)) in self.refused):
            return
        if len(self.ids[a] | self.ids[b]) > 1:  # two canonical ids: the user kept them apart, even by IS_SAME_AS
            self.refused.add((min(a, b), max(a, b)))
            return
        if not force and (self.macros[a] & self.macros[b] or self._conflict(a, b)):
            self.refused.add((min(a, b), max(a, b)))
            return
        self.parent[b] = a
        self.macros[a] |= self.macros[b]
        self.ids[a] |= self.ids[b]
        for key, values in self.values[b].items():
            self.values[a].setdefault(key, set()).update(values)


def _close_pairs(have: Sequence[int], mentions: Sequence[Entity],
                 vectors: Mapping[str, np.ndarray]) -> Iterator[tuple[int, int]]:
    """Pairs of mentions of one type whose vectors are very close, in row-major order, a block of
    rows at a time (a day-long video's similarity matrix would not fit in memory whole)."""
    matrix = np.stack([np.asarray(vectors[mentions[i].id], dtype=np.float32) for i in have])
    types = np.array([mentions[i].entity_type.value for i in have])
    columns = np.arange(len(have))
    for a0 in range(0, len(have), SIMILARITY_BLOCK):
        block = matrix[a0:a0 + SIMILARITY_BLOCK] @ matrix.T >= SAME_VECTOR
        rows = columns[a0:a0 + SIMILARITY_BLOCK]
        block &= (columns[None, :] > rows[:, None]) & (types[a0:a0 + SIMILARITY_BLOCK, None] == types[None, :])
        for a, b in np.argwhere(block).tolist():
            yield have[a0 + a], have[b]


def canonicalize(graph: VideoGraph, vectors: Mapping[str, np.ndarray] | None = None) -> list[list[Entity]]:
    """Groups of mentions, each one canonical entity, in order of first appearance."""
    macro_start = {m.id: m.t_start for m in graph.macros}
    mentions = sorted(graph.entities, key=lambda e: (macro_start.get(e.macro_id, 0.0), e.id))
    index = {e.id: i for i, e in enumerate(mentions)}
    groups = _Groups(mentions)
    first_of: dict[str, int] = {}
    for i, e in enumerate(mentions):
        if e.grounding.entity_id:
            groups.union(first_of.setdefault(e.grounding.entity_id, i), i, force=True)
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
            for i, j in _close_pairs(have, mentions, vectors):
                groups.union(i, j)
    found: dict[int, list[Entity]] = defaultdict(list)
    for i, e in enumerate(mentions):
        found[groups.find(i)].append(e)
    return sorted(found.values(), key=lambda g: index[g[0].id])


class _Roles:
    """The role and spatial edges of every mention of one video, read once per video."""

    def __init__(self, graph: VideoGraph) -> None:
        self.macros = {m.id: m for m in graph.macros}
        events = {e.id: e for e in graph.events}
        names: dict[str, Entity | OcrText] = {n.id: n for n in graph.entities}
        names.update({n.id: n for n in graph.ocr})
        self.by_mention: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for edge in graph.edges:
            if edge.category not in (EdgeCategory.ROLE, EdgeCategory.SPATIAL) or edge.label == "IS_SAME_AS":
                continue
            for mine, other, direction in ((edge.source, edge.target, "out"), (edge.target, edge.source, "in")):
                if mine not in names:
                    continue
                item: dict[str, Any] = {"label": edge.label, "direction": direction, "node_id": other}
                node = events.get(other) or names.get(other)
                if isinstance(node, MicroEvent):
                    item.update(text=clip(node.action or node.description, 140), t_start=node.t_start,
                                t_end=node.t_end)
                elif node is not None:
                    words = f'"{node.text}"' if isinstance(node, OcrText) else (node.name or node.description)
                    item["text"] = clip(words, 100)
                self.by_mention[mine].append(item)

    def appearances(self, group: Sequence[Entity]) -> list[dict[str, Any]]:
        out = []
        for e in group:
            macro = self.macros[e.macro_id]
            acts = sorted(self.by_mention.get(e.id, []), key=lambda r: (r.get("t_start", macro.t_start), r["label"]))
            out.append({"mention_id": e.id, "macro_id": macro.id, "macro_label": clip(macro.label, 120),
                        "super_id": macro.super_id, "t_start": macro.t_start, "t_end": macro.t_end,
                        "seen_at": e.grounding.primary_time, "description": clip(e.description, 200),
                        "roles": acts})
        return sorted(out, key=lambda a: (a["t_start"], a["mention_id"]))


def entity_ids(video_id: str, groups: Sequence[Sequence[Entity]]) -> list[str]:
    """The canonical id of each group (module docstring, "Ids"): the one its mentions carry, else the next
    number after the highest the video holds."""
    last = max((id_number(e.grounding.entity_id) for g in groups for e in g), default=0)
    ids = []
    for group in groups:
        carried = next((e.grounding.entity_id for e in group if e.grounding.entity_id), None)
        if carried is None:
            last += 1
            carried = canonical_id(video_id, last)
        ids.append(carried)
    return ids


def entity_rows(graphs: Sequence[VideoGraph], vectors: Mapping[str, np.ndarray] | None = None) -> list[dict[str, Any]]:
    """Rows of the lance ``entities`` table (without vectors) for these videos."""
    rows: list[dict[str, Any]] = []
    for graph in graphs:
        roles = _Roles(graph)
        groups = canonicalize(graph, vectors)
        for entity_id, group in zip(entity_ids(graph.video_id, groups), groups, strict=True):
            first = group[0]
            names = list(dict.fromkeys(x.strip().rstrip(".") for e in group for x in (e.name, e.description)
                                       if x and x.strip()))
            name = next((e.name for e in group if e.name), None) or (names[0] if names else
                                                                    first.entity_type.value.lower())
            aliases = [a for a in names if _norm(a) != _norm(name)]
            timeline = roles.appearances(group)
            attrs = {k: v for e in group for k, v in e.attributes.items()}
            text = ". ".join(p for p in (name, first.entity_type.value.lower(), "; ".join(aliases[:6]),
                                          ", ".join(f"{k}: {v}" for k, v in attrs.items())) if p)
            rows.append({
                "id": entity_id, "video_id": graph.video_id, "name": clip(name, 120),
                "entity_type": first.entity_type.value, "aliases": json.dumps(aliases[:12], ensure_ascii=False),
                "description": clip(max((e.description for e in group), key=len, default=""), 300),
                "mentions": json.dumps([e.id for e in group]), "t_first": timeline[0]["t_start"],
                "t_last": timeline[-1]["t_end"], "text": text,
                "timeline": json.dumps(timeline, ensure_ascii=False),
            })
    return rows
