"""The stage outputs of one video -> one ``VideoGraph`` that passes ``check()``.

Everything here is deterministic: nodes in time order, ids from ordinals, no clock time, so
a resumed build writes exactly what an uninterrupted one would.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

from memtools.builder.aggregate import ChunkResult, Relation, RootResult
from memtools.builder.extract import Extracted
from memtools.builder.keyframes import StoredKeyframe
from memtools.builder.responses import RootAnswer
from memtools.schema import (
    Edge,
    EdgeCategory,
    Keyframe,
    MacroEvent,
    SuperEvent,
    Video,
    VideoGraph,
    keyframe_id,
    super_id,
)
from memtools.video import VideoInfo


def assemble(video_id: str, info: VideoInfo, source: Path, extracted: Sequence[Extracted],
             chunk_results: Sequence[ChunkResult], root_result: RootResult | None,
             keyframes: Sequence[StoredKeyframe]) -> VideoGraph:
    by_short = {x.macro.id.rsplit("/", 1)[-1]: x for x in extracted}
    supers: list[SuperEvent] = []
    macros: list[MacroEvent] = []
    edges: list[Edge] = []
    super_ids_by_chunk: list[list[str]] = []
    for chunk in chunk_results:
        ids = []
        for draft in chunk.supers:
            sid = super_id(video_id, len(supers))
            members = [by_short[m] for m in draft.macros]
            key_entities = draft.key_entities or list(dict.fromkeys(e for x in members for e in x.key_entities))[:10]
            supers.append(SuperEvent(id=sid, video_id=video_id, ordinal=len(supers), label=draft.label,
                                     description=draft.description, key_entities=key_entities,
                                     t_start=min(x.macro.t_start for x in members),
                                     t_end=max(x.macro.t_end for x in members)))
            for x in members:
                macros.append(MacroEvent(id=x.macro.id, video_id=video_id, super_id=sid, ordinal=x.macro.ordinal,
                                         label=x.macro.label, summary=x.summary, t_start=x.macro.t_start,
                                         t_end=x.macro.t_end, key_entities=x.key_entities))
            ids.append(sid)
        super_ids_by_chunk.append(ids)
        for r in chunk.macro_relations:
            edges.append(_edge(f"{video_id}/{r.source}", f"{video_id}/{r.target}", EdgeCategory.MACRO_CAUSAL, r))
        for r in chunk.super_relations:
            edges.append(_edge(ids[int(r.source)], ids[int(r.target)], EdgeCategory.PROGRESSION, r))
    macros.sort(key=lambda m: m.ordinal)
    if root_result is not None:
        for r in root_result.super_relations:
            edges.append(_edge(f"{video_id}/{r.source}", f"{video_id}/{r.target}", EdgeCategory.PROGRESSION, r))
    for a, b in pairwise(supers):
        edges.append(Edge(source=a.id, target=b.id, category=EdgeCategory.PROGRESSION, label="BEFORE",
                          description="Consecutive narrative phases."))

    entities = [e for x in extracted for e in x.entities]
    events = [e for x in extracted for e in x.events]
    ocr = [o for x in extracted for o in x.ocr]
    speech = [u for x in extracted for u in x.speech]
    edges += [e for x in extracted for e in x.edges]

    frames: list[Keyframe] = []
    for n, k in enumerate(keyframes):
        macro = _macro_at(macros, k.t)
        kid = keyframe_id(video_id, n if k.n is None else k.n)
        frames.append(Keyframe(id=kid, video_id=video_id, t=k.t, path=k.path, macro_id=macro.id if macro else None))
        if macro is not None:
            edges.append(Edge(source=kid, target=macro.id, category=EdgeCategory.GROUNDING, label="DEPICTS"))

    root = root_result.root if root_result is not None and root_result.root else _single_root(chunk_results)
    video = Video(id=video_id, title=(root.title.strip() if root else "") or _title_from(source),
                  description=(root.description.strip() if root else "") or _description_from(supers),
                  themes=list(dict.fromkeys(root.themes))[:8] if root else [],
                  key_entities=list(dict.fromkeys(root.key_entities))[:12] if root else [],
                  emotional_tone=root.emotional_tone.strip() if root else "",
                  duration=info.duration, fps=info.fps, width=info.width, height=info.height,
                  source_path=str(source), content_hash=info.content_hash)
    graph = VideoGraph(video=video, supers=supers, macros=macros, entities=entities, events=events, ocr=ocr,
                       speech=speech, keyframes=frames, edges=_unique(edges))
    graph.check()
    return graph


def _edge(source: str, target: str, category: EdgeCategory, r: Relation) -> Edge:
    return Edge(source=source, target=target, category=category, label=r.label, description=r.description)


def _unique(edges: list[Edge]) -> list[Edge]:
    seen: set[tuple[str, str, str]] = set()
    out = []
    for e in edges:
        key = (e.source, e.target, e.label)
        if key not in seen:
            seen.add(key)
            out.append(e)
    return out


def _macro_at(macros: Sequence[MacroEvent], t: float) -> MacroEvent | None:
    for m in macros:
        if m.t_start <= t < m.t_end:
            return m
    return macros[-1] if macros and t >= macros[-1].t_start else (macros[0] if macros else None)


def _single_root(chunk_results: Sequence[ChunkResult]) -> RootAnswer | None:
    if len(chunk_results) == 1:
        return chunk_results[0].root
    return None


def _title_from(source: Path) -> str:
    return source.stem.replace("_", " ").replace("-", " ").strip() or source.name


def _description_from(supers: Sequence[SuperEvent]) -> str:
    return " ".join(f"{s.label}." for s in supers)
