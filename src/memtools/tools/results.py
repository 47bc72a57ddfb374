"""Typed tool results. Each has ``render()``: compact text an LLM reads (ids, absolute times)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from memtools.tools.people_results import IdentityLink
from memtools.tools.text import RENDER_BUDGET, budgeted, clip, hms, span
from memtools.wallclock import absolute, day_of, iso, start_of


class _Result(BaseModel):
    def render(self) -> str:  # pragma: no cover - every result overrides it
        raise NotImplementedError

    def __str__(self) -> str:
        return self.render()


ToolResult = _Result
"""The base of every tool's result: a pydantic model with ``render()`` (the text the model reads)."""


class VideoItem(BaseModel):
    video_id: str
    title: str
    duration: float
    status: str
    counts: dict[str, int] = Field(default_factory=dict)
    recorded_at: str | None = None  # recording start, ISO 8601 (None: unknown)


class VideoList(_Result):
    """One page of ``list_videos``: ``total`` videos match, these start at ``offset``."""

    videos: list[VideoItem]
    total: int = -1  # -1: the page is the whole list
    offset: int = 0
    limit: int = 0
    query: str = ""
    warning: str = ""  # the memory is damaged: what and how to repair it
    recorded: str = ""  # listed by recording time: the window ("recorded from ... to ...")
    untimed: int = 0  # videos without a recording time (left out of a window; named when some have one)

    def render(self) -> str:
        total = len(self.videos) if self.total < 0 else self.total
        matching = (f" matching {self.query!r}" if self.query else "") + (f" {self.recorded}" if self.recorded else "")
        timed = any(v.recorded_at for v in self.videos)
        head = [f"Warning: {self.warning}"] if self.warning else []
        if not self.videos:
            if total and self.offset >= total:
                text = f"No videos past offset {self.offset}: {total} video(s){matching}. Call list_videos(offset=0)."
            elif self.recorded:
                text = (f"No videos{matching}. Call list_videos() without recorded_from/recorded_to to see all"
                        + (f" ({self.untimed} have no recording time)." if self.untimed else "."))
            elif self.query:
                text = f"No video id or title contains {self.query!r}. Call list_videos() without query to see all."
            else:
                text = "No videos in this memory yet."
            return "\n".join([*head, text])
        if self.offset == 0 and len(self.videos) == total and not self.query and not self.recorded:
            head.append(f"{total} video(s):")
        else:
            head.append(f"Videos {self.offset + 1}-{self.offset + len(self.videos)} of {total}{matching}:")
        lines: list[str] = []
        used = sum(len(h) + 1 for h in head)
        for v in self.videos:
            when = f" recorded {v.recorded_at}" if v.recorded_at else " (no recording time)" if timed else ""
            line = (f"- {v.video_id} [{hms(0)}-{hms(v.duration)}] {clip(v.title, 80) or '(untitled)'}{when}"
                    + ("" if v.status == "ready" else f" ({v.status})"))
            if lines and used + len(line) + 1 > RENDER_BUDGET:
                break
            lines.append(line)
            used += len(line) + 1
        if len(lines) < len(self.videos):
            head[-1] = f"Videos {self.offset + 1}-{self.offset + len(lines)} of {total}{matching}:"
        end = self.offset + len(lines)
        if end < total:
            query = f", query={self.query!r}" if self.query else ""
            query += ", recorded_from=..., recorded_to=..." if self.recorded else ""
            lines.append(f"More: list_videos(offset={end}{query}) lists the next ones ({total - end} not shown); "
                         "query=... finds videos by id or title.")
        if self.recorded and self.untimed:
            lines.append(f"({self.untimed} video(s) have no recording time and are not listed by date.)")
        day = " (or video_id='day/YYYY-MM-DD' for a day)" if timed else ""
        lines.append(f"Next: get_summary(video_id=...){day} for an overview, or search_nodes(query=...) across all "
                     "videos.")
        return "\n".join([*head, *lines])


class SuperBrief(BaseModel):
    id: str
    label: str
    t_start: float
    t_end: float
    macro_count: int = 0


class Summary(_Result):
    video_id: str
    title: str
    description: str
    themes: list[str]
    key_entities: list[str]
    emotional_tone: str
    duration: float
    supers: list[SuperBrief]
    as_of_sec: float | None = None
    recorded_at: str | None = None  # recording start, ISO 8601 (None: unknown)

    def render(self) -> str:
        lines = [f"Video {self.video_id} {span(0, self.duration)}: {self.title or '(untitled)'}"]
        if start := start_of(self.recorded_at):
            lines.append(f"Recorded: {self.recorded_at} (its day: {day_of(start)}; clock time = this + the time in "
                         "the video)")
        if self.as_of_sec is not None:
            lines.append(f"As of {hms(self.as_of_sec)}: only what had ended by then (the video's description "
                         "covers all of it and is hidden).")
        if self.description:
            lines.append(f"Description: {clip(self.description, 1200)}")
        if self.themes:
            lines.append("Themes: " + ", ".join(self.themes))
        if self.key_entities:
            lines.append("Key entities: " + ", ".join(self.key_entities[:15]))
        if self.emotional_tone:
            lines.append(f"Tone: {self.emotional_tone}")
        lines.append(f"Super events ({len(self.supers)}):")
        lines += [f"- {s.id} {span(s.t_start, s.t_end)} {clip(s.label, 100)} ({s.macro_count} macro events)"
                  for s in self.supers]
        lines = budgeted(lines, "call get_super_events(video_id=..., super_ids=[...]) for specific phases")
        lines.append("Next: get_macro_events(super_id=...) to open a phase, "
                     "or search_nodes(query=...) to find details.")
        return "\n".join(lines)


class SuperItem(BaseModel):
    id: str
    label: str
    t_start: float
    t_end: float
    description: str
    key_entities: list[str]
    macro_ids: list[str]


class SuperEvents(_Result):
    video_id: str
    supers: list[SuperItem]

    def render(self) -> str:
        lines = [f"{len(self.supers)} super event(s) of {self.video_id}:"]
        for s in self.supers:
            lines.append(f"- {s.id} {span(s.t_start, s.t_end)} {clip(s.label, 100)}")
            if s.key_entities:
                lines.append("  key entities: " + ", ".join(s.key_entities[:10]))
            if s.description:
                lines.append(f"  {clip(s.description, 400)}")
            lines.append(f"  macros: {', '.join(s.macro_ids[:30])}" + (
                f" … ({len(s.macro_ids) - 30} more: get_macro_events(super_id='{s.id}'))"
                if len(s.macro_ids) > 30 else ""))
        lines = budgeted(lines, "pass super_ids=[...] to read fewer super events at a time")
        lines.append("Next: get_macro_events(super_id=...) or get_subgraph(macro_id=...).")
        return "\n".join(lines)


class MacroItem(BaseModel):
    id: str
    super_id: str
    super_label: str = ""
    label: str
    t_start: float
    t_end: float
    key_entities: list[str]
    summary: str


class MacroEvents(_Result):
    macros: list[MacroItem]
    missing: list[str] = Field(default_factory=list)

    def render(self) -> str:
        lines = [f"{len(self.macros)} macro event(s):"]
        for m in self.macros:
            lines.append(f"- {m.id} {span(m.t_start, m.t_end)} {clip(m.label, 100)}")
            if m.key_entities:
                lines.append("  key entities: " + ", ".join(m.key_entities[:10]))
            if m.summary:
                lines.append(f"  {clip(m.summary, 500)}")
        if self.missing:
            lines.append("Not found: " + ", ".join(self.missing))
        lines = budgeted(lines, "pass macro_ids=[...] (ids from get_super_events) to read the rest a few at a time")
        lines.append("Next: get_subgraph(macro_id=...) for entities, actions and on-screen text.")
        return "\n".join(lines)


class NodeItem(BaseModel):
    """A subgraph node in one flat shape: entity, event or ocr."""

    id: str
    kind: str
    text: str
    t_start: float | None = None
    t_end: float | None = None
    detail: str = ""


class EdgeItem(BaseModel):
    source: str
    target: str
    category: str
    label: str
    description: str = ""
    other_text: str = ""


class Subgraph(_Result):
    macro: MacroItem
    entities: list[NodeItem]
    events: list[NodeItem]
    ocr: list[NodeItem]
    edges: list[EdgeItem]
    speech: list[NodeItem] = Field(default_factory=list)

    def render(self) -> str:
        m = self.macro
        lines = [f"Macro event {m.id} {span(m.t_start, m.t_end)} {m.label}", f"In super event {m.super_id}"
                 + (f" ({clip(m.super_label, 80)})" if m.super_label else "")]
        if m.summary:
            lines.append(f"Summary: {clip(m.summary, 800)}")
        short = {n.id: n.id.rsplit("/", 1)[-1] for n in [*self.entities, *self.events, *self.ocr, *self.speech]}
        lines.append(f"Entities ({len(self.entities)}):")
        lines += [f"- {short[e.id]} {e.text}" + (f" — {clip(e.detail, 200)}" if e.detail else "")
                  for e in self.entities]
        lines.append(f"Micro-events ({len(self.events)}):")
        lines += [f"- {short[e.id]} {span(e.t_start or 0, e.t_end or 0)} {e.text}"
                  + (f" — {clip(e.detail, 200)}" if e.detail else "") for e in self.events]
        if self.ocr:
            lines.append(f"On-screen text ({len(self.ocr)}):")
            lines += [f"- {short[o.id]} {span(o.t_start or 0, o.t_end or 0)} {o.text}"
                      + (f" — {clip(o.detail, 150)}" if o.detail else "") for o in self.ocr]
        if self.speech:
            lines.append(f"Speech ({len(self.speech)}):")
            lines += [f"- {short[u.id]} {span(u.t_start or 0, u.t_end or 0)} {clip(u.text, 300)}" for u in self.speech]
        if self.edges:
            lines.append(f"Edges ({len(self.edges)}):")
            for e in self.edges:
                reason = f" ({clip(e.description, 120)})" if e.description else ""
                lines.append(f"- {short.get(e.source, e.source)} -{e.label}-> {short.get(e.target, e.target)}{reason}")
        lines.append(f"Ids above are short; full ids are '{m.id}/<short id>'.")
        lines = budgeted(lines, f"use get_relations(node_id='{m.id}/<short id>') or search_nodes to focus")
        lines.append("Next: get_relations(node_id=...) to follow causes and roles across events.")
        return "\n".join(lines)


class SearchHit(BaseModel):
    id: str
    kind: str
    video_id: str
    t_start: float
    t_end: float
    text: str
    score: float
    macro_id: str = ""
    macro_label: str = ""
    context: list[str] = Field(default_factory=list)
    video_title: str = ""
    members: list[str] = Field(default_factory=list, description="node ids a merged span was built from")
    path: list[str] = Field(default_factory=list, description="graph walk: seed -LABEL-> ... -> this node")
    rerank_score: float | None = Field(default=None, description=(
        "the reranker's score (its own scale) when a reranker ordered this hit; score stays the first stage's"))


class SearchResult(_Result):
    query: str
    mode: str
    hits: list[SearchHit]
    strategy: str = "flat"
    as_of_sec: float | None = None
    reranked_by: str = Field(default="", description="the reranker that ordered the hits (empty: none)")
    rerank_warning: str = Field(default="", description=(
        "why a configured reranker did not order the hits (they are in first-stage order)"))

    def render(self) -> str:
        when = f" as of {hms(self.as_of_sec)}" if self.as_of_sec is not None else ""
        if not self.hits:
            return (f"No matches for {self.query!r}{when}. Try other words (describe the scene or action), drop "
                    "filters, or browse with get_summary / search_by_time.")
        videos = list(dict.fromkeys(h.video_id for h in self.hits))
        lines = [f"{len(self.hits)} match(es) for {clip(self.query, 80)!r}{when} in {len(videos)} video(s)"
                 + (f", reranked by {clip(self.reranked_by, 80)}:" if self.reranked_by else ":")]
        if self.rerank_warning:
            lines.append(f"Not reranked ({clip(self.rerank_warning, 200)}): hits are in first-stage order.")
        for i, h in enumerate(self.hits, 1):
            kind = f"span of {len(h.members)}" if h.members else h.kind
            lines.append(f"{i}. [{kind}] {h.id} {span(h.t_start, h.t_end)} {clip(h.text, 220)}")
            where = [f"video {h.video_id}" + (f" ({clip(h.video_title, 60)})" if h.video_title else "")]
            if h.macro_id and h.macro_id != h.id:
                where.append(f"episode {h.macro_id}: {clip(h.macro_label, 80)}")
            lines.append("   in " + "; ".join(where))
            if h.members:
                lines.append("   merged: " + ", ".join(m.rsplit("/", 1)[-1] for m in h.members))
            if len(h.path) > 1:
                lines.append("   path: " + " ".join(p if p.isupper() else p.split("/", 1)[-1] for p in h.path))
            lines += [f"   {c}" for c in h.context]
        lines = budgeted(lines, "lower top_k or add node_types / video_id / a time window")
        lines.append("Next: get_subgraph(macro_id=...) on a promising episode, or get_relations(node_id=...).")
        return "\n".join(lines)


class TimeMatch(BaseModel):
    video_id: str
    macro: MacroItem
    speech: list[str] = Field(default_factory=list)  # a few utterances of the window in this macro event
    speech_total: int = 0


class TimeResult(_Result):
    start_sec: float | None = None  # None: a clock window (tools/time_results.WallTimeResult)
    end_sec: float | None = None
    matches: list[TimeMatch]
    recorded_at: str | None = None  # the video's recording start: each match also shows its clock time

    def render(self) -> str:
        window = span(self.start_sec or 0.0, self.end_sec or 0.0)
        if not self.matches:
            return f"No macro events overlap {window}. Check the video's length with get_summary."
        lines = [f"{len(self.matches)} macro event(s) overlap {window}:"]
        for t in self.matches:
            m = t.macro
            clock = absolute(self.recorded_at, m.t_start)
            at = f" at {iso(clock)}" if clock else ""
            lines.append(f"- {m.id} {span(m.t_start, m.t_end)}{at} {clip(m.label, 100)}"
                         f" (super {m.super_id}: {clip(m.super_label, 60)})")
            if t.speech:
                more = t.speech_total - len(t.speech)
                lines.append("  said: " + " | ".join(clip(q, 120) for q in t.speech)
                             + (f" (+{more} more)" if more > 0 else ""))
        if any(t.speech_total > len(t.speech) for t in self.matches):
            vid = self.matches[0].video_id
            lines.append(f"Everything said: get_transcript(video_id='{vid}', start_sec={self.start_sec:g}, "
                         f"end_sec={self.end_sec:g}).")
        lines = budgeted(lines, "narrow the window or pass video_id")
        lines.append("Next: get_subgraph(macro_id=...) for what happens inside.")
        return "\n".join(lines)


class Relations(_Result):
    node_id: str
    kind: str
    text: str
    outgoing: list[EdgeItem]
    incoming: list[EdgeItem]
    identities: list[IdentityLink] = Field(default_factory=list, description=(
        "an utterance's speaker or an entity: its voice / face / named-speaker clusters and their library person"))

    def render(self) -> str:
        lines = [f"{self.kind} {self.node_id}: {clip(self.text, 160)}"]
        lines += [f"Identity: {link.line()}" for link in self.identities]
        lines.append(f"Outgoing ({len(self.outgoing)}):")
        lines += [f"- -{e.label}-> {e.target} {clip(e.other_text, 90)}"
                  + (f" — {clip(e.description, 140)}" if e.description else "") for e in self.outgoing]
        lines.append(f"Incoming ({len(self.incoming)}):")
        lines += [f"- {e.source} {clip(e.other_text, 90)} -{e.label}->"
                  + (f" — {clip(e.description, 140)}" if e.description else "") for e in self.incoming]
        lines = budgeted(lines, "pass direction='out' or 'in', or relation_types=[...]")
        lines.append("Next: get_relations on a neighbour to follow the chain, or get_subgraph on its macro.")
        return "\n".join(lines)
