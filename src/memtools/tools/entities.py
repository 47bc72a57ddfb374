"""The entity tools: ``search_entities`` and ``get_entity_timeline`` over canonical entities
(``memtools.store.tables.entities``). A mixin of ``MemoryTools``."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from memtools.errors import ToolError, ToolNotFound
from memtools.store.tables.entity_index import EntityRow
from memtools.store.tables.id_ledger import moved_message
from memtools.tools import messages as msg
from memtools.tools.entity_results import (
    Appearance,
    EntityItem,
    EntityList,
    EntityTimeline,
    EntityTimelineItem,
    RoleItem,
)
from memtools.tools.library_tools import LIB_ID, NOT_LINKED, LibraryTools
from memtools.tools.search import SearchConfig
from memtools.tools.searching import TOP_K_MAX, check_as_of

if TYPE_CHECKING:
    from memtools.rerank.base import Reranker

ENTITY_ID = re.compile(r"^(?!\.)[A-Za-z0-9_.-]{1,128}(?<!\.)/entity_\d{3,}$")
MAX_TIMELINES = 10
RELATIVE_FLOOR = 0.5  # search_entities drops profiles less than half as similar as the best one


def _appearances(row: EntityRow, as_of: float | None) -> list[Appearance]:
    out = []
    for a in row.timeline:
        if as_of is not None and a["t_end"] > as_of:
            continue
        roles = [RoleItem(**r) for r in a.get("roles", [])
                 if as_of is None or r.get("t_end") is None or r["t_end"] <= as_of]
        out.append(Appearance(**{**a, "roles": roles}))
    return out


def entity_document(item: EntityItem, appearances: list[Appearance]) -> str:
    """The text a reranker reads for an entity: its name, type, aliases, description and the
    episodes it appears in."""
    lines = [f"{item.name} ({item.entity_type.lower()})"]
    if item.aliases:
        lines.append("Also called: " + ", ".join(item.aliases[:6]))
    if item.description and item.description.rstrip(".") != item.name.rstrip("."):
        lines.append(item.description)
    episodes = list(dict.fromkeys(a.macro_label for a in appearances if a.macro_label))
    if episodes:
        lines.append("Appears in: " + "; ".join(episodes[:4]))
    text = "\n".join(lines)
    return text if len(text) <= 1200 else text[:1199] + "…"


def _item(row: EntityRow, appearances: list[Appearance], score: float | None = None) -> EntityItem:
    first = appearances[0].t_start if appearances else row.t_first
    last = max((a.t_end for a in appearances), default=row.t_last)
    return EntityItem(id=row.id, video_id=row.video_id, name=row.name, entity_type=row.entity_type,
                      aliases=row.aliases, description=row.description, t_first=first, t_last=last,
                      appearances=len(appearances), score=None if score is None else round(score, 4))


class EntityTools(LibraryTools):
    """``search_entities`` and ``get_entity_timeline``; mixed into ``MemoryTools``. Without ``video_id``
    both answer with library entities (linked across videos) when the library layer is computed."""

    search_config: SearchConfig
    reranker: Reranker | None

    def _entity_index(self):
        with self._reading():
            index = self.memory.entities
            if not index.exists():
                if self.memory.manifest.video_totals().entity_videos == 0:
                    raise ToolError(msg.NO_ENTITIES)  # events and speech only (a caption import)
                raise ToolError(msg.NO_ENTITY_INDEX)
        return index

    def search_entities(self, query: str, top_k: int = 10, video_id: str | None = None,
                        as_of_sec: float | None = None) -> EntityList:
        query = (query or "").strip()
        if not query:
            raise ToolError(msg.EMPTY_QUERY)
        if not (1 <= top_k <= TOP_K_MAX):
            raise ToolError(msg.BAD_RANGE.format(name="top_k", low=1, high=TOP_K_MAX, value=top_k))
        if video_id is not None:
            video_id = self._video_id(video_id)
        as_of = check_as_of(as_of_sec)
        reads = self._linked() if video_id is None else None
        if reads is None:
            return self._search_canonical(query, top_k, video_id, as_of)
        found = self._search_canonical(query, min(5 * top_k, 250), None, as_of)
        links = reads.links_of([e.id for e in found.entities])
        scores: dict[str, float] = {}
        for e in found.entities:
            lib = links[e.id].lib_id if e.id in links else None
            if lib is not None and lib not in scores and len(scores) < top_k:
                scores[lib] = e.score if e.score is not None else 1.0
        with self._reading():
            items = self._library_items(reads, list(scores), lambda row: _appearances(row, as_of), scores)
        return found.model_copy(update={"entities": [i.entity for i in items]})

    def _search_canonical(self, query: str, top_k: int, video_id: str | None, as_of: float | None) -> EntityList:
        index = self._entity_index()
        config = self.search_config
        depth = top_k if self.reranker is None else max(top_k, config.rerank_candidates)
        named = index.by_name(query, video_id, limit=depth)
        vector = self.memory.embedder.embed_query(query)
        with self._reading():
            similar = index.search(vector, 4 * depth if as_of is not None else depth, video_id)
        # Name matches first (what the user typed), then the profiles similar enough to the best.
        best = max((r.score for r in similar), default=0.0)
        similar = [r for r in similar if r.score >= RELATIVE_FLOOR * best]
        items, seen = [], set()
        documents: list[str] | None = None if self.reranker is None else []  # what the reranker reads
        for row in [*named, *similar]:
            if row.id in seen:
                continue
            seen.add(row.id)
            appearances = _appearances(row, as_of)
            if appearances:
                items.append(_item(row, appearances, row.score if row in similar else None))
                if documents is not None and len(documents) < config.rerank_candidates:
                    documents.append(entity_document(items[-1], appearances))
        if self.reranker is None or documents is None or not items:
            return EntityList(query=query, entities=items[:top_k], as_of_sec=as_of)
        from memtools.rerank.stage import rerank_order

        outcome = rerank_order(self.reranker, query, documents, config.rerank_timeout)
        if outcome.warning or outcome.scores is None:
            return EntityList(query=query, entities=items[:top_k], as_of_sec=as_of, rerank_warning=outcome.warning)
        ranked = [items[i].model_copy(update={"rerank_score": round(score, 4)})
                  for i, score in zip(outcome.order, outcome.scores, strict=True)]
        return EntityList(query=query, entities=[*ranked, *items[len(documents):]][:top_k], as_of_sec=as_of,
                          reranked_by=self.reranker.name)

    def get_entity_timeline(self, entity_id: str | None = None, name: str | None = None,
                            video_id: str | None = None, as_of_sec: float | None = None) -> EntityTimeline:
        if (entity_id is None) == (not (name or "").strip()):
            raise ToolError(msg.NEED_ENTITY)
        if video_id is not None:
            video_id = self._video_id(video_id)
        as_of = check_as_of(as_of_sec)
        index = self._entity_index()
        if entity_id is not None and LIB_ID.match(entity_id):
            return self._library_timeline(entity_id, video_id, as_of)
        reads = self._linked() if video_id is None else None
        if video_id is None and reads is not None and entity_id is None:
            needle = (name or "").strip()
            with self._reading():
                rows = index.by_name(needle, None, limit=5 * MAX_TIMELINES)
            if not rows:
                raise ToolNotFound(msg.NO_ENTITY_NAME.format(name=needle, where=""))
            links = reads.links_of([r.id for r in rows])
            libs = list(dict.fromkeys(links[r.id].lib_id for r in rows if r.id in links))[:MAX_TIMELINES]
            with self._reading():
                items = self._library_items(reads, libs, lambda row: _appearances(row, as_of))
            return EntityTimeline(timelines=[], library=items, as_of_sec=as_of)
        unlinked = video_id is None and entity_id is None and len(self.memory.manifest.videos) > 1
        note = NOT_LINKED.replace(" M`", f" {self.memory.path}`") if unlinked else ""
        with self._reading():
            if entity_id is not None:
                row = index.get(entity_id) if ENTITY_ID.match(entity_id) else None
                if row is None and ENTITY_ID.match(entity_id):
                    moved = moved_message(self.memory.path, entity_id, lambda i: index.get(i) is not None)
                    if moved is not None:
                        raise ToolNotFound(moved)
                if row is None or (video_id is not None and row.video_id != video_id):
                    raise ToolNotFound(msg.BAD_ENTITY_ID.format(entity_id=entity_id))
                rows = [row]
            else:
                needle = (name or "").strip()  # given: checked above
                rows = index.by_name(needle, video_id, limit=MAX_TIMELINES)
                if not rows:
                    where = f" in {video_id}" if video_id else ""
                    raise ToolNotFound(msg.NO_ENTITY_NAME.format(name=needle, where=where))
        rows.sort(key=lambda r: (r.video_id, r.t_first, r.id))
        timelines = [EntityTimelineItem(entity=_item(r, apps), appearances=apps)
                     for r in rows for apps in [_appearances(r, as_of)]]
        return EntityTimeline(timelines=timelines, as_of_sec=as_of, note=note)

    def _library_timeline(self, lib_id: str, video_id: str | None, as_of: float | None) -> EntityTimeline:
        """A library entity's biography across videos, or (``video_id``) its entity in that video."""
        reads = self._library()
        if reads is None:
            raise ToolError(NOT_LINKED.strip("()").replace(" M`", f" {self.memory.path}`"))
        members = reads.members([lib_id]).get(lib_id, [])
        if not members:
            raise ToolNotFound(msg.BAD_ENTITY_ID.format(entity_id=lib_id))
        if video_id is not None:
            here = [m.canonical_id for m in members if m.video_id == video_id]
            if not here:
                raise ToolNotFound(f"library entity {lib_id} is not seen in {video_id}; "
                                   f"get_entity_timeline(entity_id={lib_id!r}) lists where it is")
            return self.get_entity_timeline(entity_id=here[0], video_id=video_id, as_of_sec=as_of)
        with self._reading():
            items = self._library_items(reads, [lib_id], lambda row: _appearances(row, as_of))
        return EntityTimeline(timelines=[], library=items, as_of_sec=as_of)
