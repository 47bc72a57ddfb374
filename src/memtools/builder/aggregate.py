"""Upward aggregation: macro events -> super events, macro/super relations and the root.

``clean_chunk`` turns one aggregation answer (over a contiguous run of macro events) into
super events that partition the run: every macro event in exactly one super event, each
super event a contiguous run (a super event the model made of scattered macro events is
split at the gaps), missing macro events joined to their neighbour's super event. Macro
relations are kept only inside one super event; ``BEFORE`` between consecutive super
events is generated, never taken from the model.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from pydantic import BaseModel

from memtools.builder.prompts import MacroBrief, hms
from memtools.builder.repair import canonical_label
from memtools.builder.report import Issue
from memtools.builder.responses import Aggregation, RelationAnswer, RootAnswer, RootSynthesis
from memtools.schema import LABELS, EdgeCategory

STAGE = "aggregate"
_MACRO_LABELS = LABELS[EdgeCategory.MACRO_CAUSAL]
_SUPER_LABELS = LABELS[EdgeCategory.PROGRESSION] - {"BEFORE"}


class SuperDraft(BaseModel):
    """A super event before it has its final ordinal; ``macros`` are short macro ids."""

    label: str
    description: str = ""
    key_entities: list[str] = []
    macros: list[str]
    model_id: str = ""


class Relation(BaseModel):
    source: str
    target: str
    label: str
    description: str = ""


class ChunkResult(BaseModel):
    """The checkpoint of one aggregation call."""

    index: int
    supers: list[SuperDraft]
    macro_relations: list[Relation] = []
    super_relations: list[Relation] = []  # between indexes into ``supers`` (as strings)
    root: RootAnswer | None = None
    issues: list[Issue] = []


class RootResult(BaseModel):
    """The checkpoint of the root call of a chunked build; relations between global super ordinals."""

    super_relations: list[Relation] = []
    root: RootAnswer | None = None
    issues: list[Issue] = []


def target_supers(n_macros: int) -> tuple[int, int]:
    """How many super events to ask for: 3-8 macro events each, at most 20."""
    low = min(20, max(1, n_macros // 8))
    high = max(low, min(20, math.ceil(n_macros / 3)))
    return low, high


def chunks(n: int, size: int) -> list[range]:
    """``range(n)`` in ``ceil(n / size)`` contiguous, equally long parts."""
    parts = max(1, math.ceil(n / size))
    bounds = [round(i * n / parts) for i in range(parts + 1)]
    return [range(bounds[i], bounds[i + 1]) for i in range(parts)]


def _resolver(ids: Sequence[str]):
    """Matches what a model wrote for an id ("macro_0003", "vid/macro_0003", "3", "M3") to an id."""
    exact = {i.lower(): i for i in ids}
    by_number: dict[int, str] = {}
    for i in ids:
        digits = re.findall(r"\d+", i.rsplit("/", 1)[-1])
        if digits:
            by_number.setdefault(int(digits[-1]), i)

    def resolve(raw: str) -> str | None:
        key = raw.strip().lower()
        if key in exact:
            return exact[key]
        tail = key.rsplit("/", 1)[-1]
        if tail in exact:
            return exact[tail]
        digits = re.findall(r"\d+", tail)
        if len(digits) == 1:
            return by_number.get(int(digits[0]))
        return None

    return resolve


def clean_chunk(index: int, answer: Aggregation | None, macros: Sequence[MacroBrief]) -> ChunkResult:
    """Super events partitioning ``macros`` (in time order) from the model's answer (None: unusable)."""
    step = f"chunk_{index:02d}"
    issues: list[Issue] = []

    def note(severity: str, detail: str) -> None:
        issues.append(Issue(stage=STAGE, step=step, severity=severity, detail=detail))

    ids = [m.macro_id for m in macros]
    if answer is None or not answer.super_events:
        if answer is not None:
            note("fallback", "the answer had no super events; grouped the macro events by time")
        else:
            note("fallback", "no usable answer; grouped the macro events by time")
        return ChunkResult(index=index, supers=_fallback_supers(macros), issues=issues)

    resolve = _resolver(ids)
    owner: dict[str, int] = {}  # macro id -> index of the model's super event
    for s_index, sup in enumerate(answer.super_events):
        for raw in sup.sub_macro_ids:
            mid = resolve(raw)
            if mid is None:
                note("dropped", f"super event {sup.label!r} lists {raw!r}, which is not a macro event here")
            elif mid in owner:
                if owner[mid] != s_index:
                    note("repaired", f"{mid} was in two super events; kept it in the first")
            else:
                owner[mid] = s_index
    if not owner:
        note("fallback", "no super event named a known macro event; grouped the macro events by time")
        return ChunkResult(index=index, supers=_fallback_supers(macros), issues=issues)

    assigned: list[int] = []
    for i, mid in enumerate(ids):
        if mid in owner:
            assigned.append(owner[mid])
            continue
        neighbour = assigned[-1] if assigned else next(owner[m] for m in ids[i + 1:] if m in owner)
        assigned.append(neighbour)
        note("repaired", f"{mid} was in no super event; joined it to its neighbour's")

    drafts: list[SuperDraft] = []
    first_draft_of: dict[int, int] = {}
    runs_of: dict[int, int] = {}
    for mid, s_index in zip(ids, assigned, strict=True):
        if drafts and drafts[-1].model_id == str(s_index):
            drafts[-1].macros.append(mid)
            continue
        sup = answer.super_events[s_index]
        runs_of[s_index] = runs_of.get(s_index, 0) + 1
        label = sup.label.strip() or _label_from(macros, mid)
        if runs_of[s_index] > 1:
            note("repaired", f"super event {sup.label!r} was not one contiguous run; split it at the gap")
            label = f"{label} (continued)"
        first_draft_of.setdefault(s_index, len(drafts))
        drafts.append(SuperDraft(label=label[:120], description=sup.description.strip(),
                                 key_entities=list(dict.fromkeys(sup.key_entities))[:10], macros=[mid],
                                 model_id=str(s_index)))

    super_of = {mid: d_index for d_index, d in enumerate(drafts) for mid in d.macros}
    macro_relations = _relations(answer.macro_relations, resolve, _MACRO_LABELS, "macro", note,
                                 same_group=super_of)
    super_resolve = _super_resolver(answer, first_draft_of)
    super_relations = _relations(answer.super_relations, super_resolve, _SUPER_LABELS, "super", note)
    return ChunkResult(index=index, supers=drafts, macro_relations=macro_relations,
                       super_relations=super_relations, root=answer.root, issues=issues)


def _super_resolver(answer: Aggregation, first_draft_of: dict[int, int]):
    """The model's super ids (or labels) -> index of our first draft made from that super event."""
    names: dict[str, str] = {}
    for s_index, sup in enumerate(answer.super_events):
        if s_index not in first_draft_of:
            continue
        for name in (sup.super_id, sup.label):
            if name.strip():
                names.setdefault(name.strip().lower(), str(first_draft_of[s_index]))

    def resolve(raw: str) -> str | None:
        return names.get(raw.strip().lower())

    return resolve


def clean_root(answer: RootSynthesis | None, super_ids: Sequence[str]) -> RootResult:
    """Relations between super events (short ids like ``super_03``) and the root, for a chunked build."""
    issues: list[Issue] = []

    def note(severity: str, detail: str) -> None:
        issues.append(Issue(stage=STAGE, step="root", severity=severity, detail=detail))

    if answer is None:
        note("fallback", "no usable root answer; the root is made from the super-event labels")
        return RootResult(issues=issues)
    relations = _relations(answer.super_relations, _resolver(super_ids), _SUPER_LABELS, "super", note)
    return RootResult(super_relations=relations, root=answer.root, issues=issues)


def _relations(raw: Sequence[RelationAnswer], resolve, allowed: frozenset[str], kind: str, note,
               same_group: dict[str, int] | None = None) -> list[Relation]:
    out: list[Relation] = []
    seen: set[tuple[str, str, str]] = set()
    for r in raw:
        what = f"{kind} relation {r.source!r} -{r.type}-> {r.target!r}"
        src, dst = resolve(r.source), resolve(r.target)
        if src is None or dst is None:
            note("dropped", f"{what}: no {kind} event {(r.source if src is None else r.target)!r}")
            continue
        label, flipped = canonical_label(r.type, allowed)
        if label is None:
            if canonical_label(r.type, {"BEFORE"})[0] is None:
                note("dropped", f"{what}: {r.type!r} is not one of {', '.join(sorted(allowed))}")
            continue  # BEFORE/AFTER: chronology is implied (and generated between super events)
        if flipped:
            src, dst = dst, src
        if src == dst or (src, dst, label) in seen:
            continue
        if same_group is not None and same_group[src] != same_group[dst]:
            note("dropped", f"{what}: the two macro events are in different super events")
            continue
        seen.add((src, dst, label))
        out.append(Relation(source=src, target=dst, label=label, description=r.reason.strip()))
    return out


def _label_from(macros: Sequence[MacroBrief], mid: str) -> str:
    return next((m.label for m in macros if m.macro_id == mid), mid)


def _fallback_supers(macros: Sequence[MacroBrief]) -> list[SuperDraft]:
    """Consecutive groups of about five macro events, named after their first one."""
    drafts = []
    for part in chunks(len(macros), 5):
        group = [macros[i] for i in part]
        first, last = group[0], group[-1]
        label = first.label if len(group) == 1 else f"{first.label} to {last.label}"
        drafts.append(SuperDraft(label=label[:120], macros=[m.macro_id for m in group],
                                 description=" ".join(f"[{hms(m.t_start)}] {m.label}." for m in group),
                                 key_entities=list(dict.fromkeys(e for m in group for e in m.key_entities))[:10]))
    return drafts
