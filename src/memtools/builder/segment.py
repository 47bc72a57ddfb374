"""Streaming adaptive segmentation: windows of tau seconds -> self-contained episodes.

Each window ``[start, start + tau]`` goes to the model; its answer is cleaned into episodes
that cover the window from ``start`` without gaps or overlaps. When the video goes on past
the window, the last episode is taken as unfinished (the model said so, or it runs up to the
window's end) and dropped: the next window starts where it started, i.e. where the last
complete episode ended (MEMDREAMER §3.1). Episodes shorter than ``min_episode_sec`` are
merged into a neighbour, longer than ``max_episode_sec`` split into equal parts. A window's
episodes are final once cleaned, so their extraction can start while the next window is
still being segmented.
"""

from __future__ import annotations

import math
from itertools import pairwise

from pydantic import BaseModel

from memtools.builder.config import BuildConfig
from memtools.builder.prompts import hms
from memtools.builder.report import Issue
from memtools.builder.responses import Episode, Segmentation

STAGE = "segment"
_EPS = 1e-6


class Span(BaseModel):
    """One episode, in absolute seconds."""

    t_start: float
    t_end: float
    title: str

    @property
    def length(self) -> float:
        return self.t_end - self.t_start


class Window(BaseModel):
    """One segmentation window and what came of it."""

    index: int
    start: float
    end: float
    at_end: bool
    episodes: list[Span] = []
    next_start: float = 0.0
    issues: list[Issue] = []


def plan_window(index: int, start: float, duration: float, config: BuildConfig) -> Window:
    """The window starting at ``start``; it runs to the video's end when less than a minimum
    episode would be left over after it."""
    end = min(start + config.window_sec, duration)
    if duration - end < max(config.min_episode_sec, 1.0):
        end = duration
    return Window(index=index, start=start, end=end, at_end=end >= duration - _EPS)


def clean_window(window: Window, answer: Segmentation | None, config: BuildConfig, frame_step: float) -> Window:
    """Fill ``window.episodes``/``next_start`` from the model's answer (None: it was unusable)."""
    step = f"window_{window.index:03d}"
    issues: list[Issue] = list(window.issues)

    def note(severity: str, detail: str) -> None:
        issues.append(Issue(stage=STAGE, step=step, severity=severity, detail=detail))

    start, end = window.start, window.end
    tol = max(2.0, frame_step)
    spans: list[tuple[Span, bool]] = []
    if answer is not None:
        spans = _spans_from_answer(answer.episodes, start, end, tol, note)
    if not spans:
        if answer is not None:
            note("fallback", "no usable episode in the answer; cut the window into equal parts")
        spans = [(s, True) for s in _equal_parts(start, end, config.max_episode_sec, "Part")]

    # cover [start, ...] without gaps or overlaps: each episode runs to the next one's start
    spans[0][0].t_start = start
    for (span, _), (nxt, _) in pairwise(spans):
        span.t_end = nxt.t_start
    last, last_complete = spans[-1]
    if window.at_end:
        last.t_end = end
    elif len(spans) > 1 and (not last_complete or last.t_end >= end - tol):
        spans.pop()  # unfinished: the next window starts where it starts
    elif last.t_end >= end - tol:
        last.t_end = end  # a single episode fills the whole window
    episodes = [s for s, _ in spans]

    covered = episodes[-1].t_end - start
    floor = max(config.min_episode_sec, 1.0)
    if not window.at_end and covered < floor - _EPS:
        episodes[-1].t_end = min(end, start + floor)
        note("repaired", f"the episodes covered only {covered:.1f}s; extended the last to {hms(episodes[-1].t_end)}")

    episodes = _merge_short(episodes, config.min_episode_sec, note)
    episodes = _split_long(episodes, config.max_episode_sec, note)
    return window.model_copy(update={"episodes": episodes, "next_start": episodes[-1].t_end, "issues": issues})


def _spans_from_answer(episodes: list[Episode], start: float, end: float, tol: float,
                       note) -> list[tuple[Span, bool]]:
    times = [t for e in episodes for t in (e.start_time, e.end_time)]
    length = end - start
    if start > tol and times and max(times) <= length + tol and min(times) < start - tol:
        note("repaired", "times were relative to the window; shifted them to the video clock")
        episodes = [e.model_copy(update={"start_time": e.start_time + start, "end_time": e.end_time + start})
                    for e in episodes]
    spans: list[tuple[Span, bool]] = []
    for e in sorted(episodes, key=lambda e: (e.start_time, e.end_time)):
        a, b = sorted((e.start_time, e.end_time))
        if b < start - tol or a > end + tol:
            note("dropped", f"episode {e.episode_title!r} [{hms(a)}-{hms(b)}] lies outside the window "
                            f"[{hms(start)}-{hms(end)}]")
            continue
        if a < start - tol or b > end + tol:
            note("repaired", f"clipped episode {e.episode_title!r} into the window")
        a, b = min(max(a, start), end), min(max(b, start), end)
        title = _title(e.episode_title) or f"Episode at {hms(a)}"
        if spans and a <= spans[-1][0].t_start + _EPS:
            if b > spans[-1][0].t_end:  # same start: keep one, spanning both
                spans[-1][0].t_end = b
            note("repaired", f"merged episode {title!r} that starts together with the one before")
            continue
        spans.append((Span(t_start=a, t_end=b, title=title), e.complete))
    return spans


def _title(raw: str) -> str:
    text = " ".join(raw.replace("_", " ").split())
    return text[:120]


def _equal_parts(start: float, end: float, max_len: float, title: str) -> list[Span]:
    n = max(1, math.ceil((end - start) / max_len - _EPS))
    step = (end - start) / n
    return [Span(t_start=start + i * step, t_end=end if i == n - 1 else start + (i + 1) * step,
                 title=f"{title} at {hms(start + i * step)}") for i in range(n)]


def _merge_short(episodes: list[Span], min_len: float, note) -> list[Span]:
    """Merge each episode shorter than ``min_len`` into its shorter neighbour (the previous one
    on a tie), until none is left or one episode remains."""
    out = [e.model_copy() for e in episodes]
    while len(out) > 1:
        i = next((k for k, e in enumerate(out) if e.length < min_len - _EPS), None)
        if i is None:
            break
        e = out[i]
        prev = out[i - 1] if i > 0 else None
        nxt = out[i + 1] if i + 1 < len(out) else None
        if prev is not None and (nxt is None or prev.length <= nxt.length):
            prev.t_end = e.t_end
            note("repaired", f"merged the {e.length:.1f}s episode {e.title!r} into {prev.title!r}")
        else:
            assert nxt is not None  # two episodes or more: a first one has a next
            nxt.t_start = e.t_start
            note("repaired", f"merged the {e.length:.1f}s episode {e.title!r} into {nxt.title!r}")
        del out[i]
    return out


def _split_long(episodes: list[Span], max_len: float, note) -> list[Span]:
    out: list[Span] = []
    for e in episodes:
        if e.length <= max_len + _EPS:
            out.append(e)
            continue
        n = math.ceil(e.length / max_len - _EPS)
        step = e.length / n
        note("repaired", f"split the {e.length:.0f}s episode {e.title!r} into {n} parts of at most {max_len:g}s")
        for k in range(n):
            out.append(Span(t_start=e.t_start + k * step, t_end=e.t_end if k == n - 1 else e.t_start + (k + 1) * step,
                            title=f"{e.title} (part {k + 1}/{n})"))
    return out
