"""What a build did: counts, model usage, and every repair or loss, for people to read.

Issues are recorded by the stage that met them and travel inside that stage's checkpoint, so
a resumed build reports the same issues as an uninterrupted one.
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

from pydantic import BaseModel, Field

Severity = Literal["repaired", "dropped", "fallback"]
MEANING = {"repaired": "fixed, kept", "dropped": "left out", "fallback": "whole answer unusable, stand-in used"}
SHOWN_ISSUES = 3
"""Issues listed in the summary per video; the build report lists them all."""


class Issue(BaseModel):
    """One thing the model got wrong. ``repaired``: fixed; ``dropped``: that item is not in the
    memory; ``fallback``: a whole answer was unusable and a stand-in was used."""

    stage: str
    step: str
    severity: Severity
    detail: str


class Usage(BaseModel):
    calls: int = 0
    cached_calls: int = 0
    retries: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, other: Usage) -> None:
        for name in type(self).model_fields:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class VideoReport(BaseModel):
    """The build report of one video, written to ``work/<video_id>/report.json``."""

    video_id: str
    source: str
    duration: float = 0.0
    counts: dict[str, int] = Field(default_factory=dict)
    usage: Usage = Field(default_factory=Usage)
    issues: list[Issue] = Field(default_factory=list)
    seconds: float = 0.0
    resumed: bool = False
    skipped: bool = False

    def issue_counts(self) -> dict[str, int]:
        return dict(Counter(i.severity for i in self.issues))

    def summary_lines(self) -> list[str]:
        c = self.counts
        line = (f"{self.video_id}: {c.get('super', 0)} super / {c.get('macro', 0)} macro events, "
                f"{c.get('entity', 0)} entities, {c.get('event', 0)} micro-events, {c.get('ocr', 0)} texts, "
                f"{c.get('edges', 0)} edges, {c.get('keyframe', 0)} keyframes"
                + (f", {c['speech']} utterances" if c.get("speech") else ""))
        if self.skipped:
            return [f"{self.video_id}: already built and unchanged (use --fresh to rebuild)"]
        lines = [line]
        if self.issues:
            lines.append(f"  model output: {_tally(self.issue_counts(), meaning=True)}; "
                         "the rest is stored as answered:")
            lines += [f"    {i.stage} {i.step} ({i.severity}): {i.detail}" for i in self.issues[:SHOWN_ISSUES]]
            if len(self.issues) > SHOWN_ISSUES:
                lines.append(f"    ... and {len(self.issues) - SHOWN_ISSUES} more in the build report")
        return lines


class BuildSummary(BaseModel):
    """All videos of one ``build`` run."""

    videos: list[VideoReport] = Field(default_factory=list)
    seconds: float = 0.0

    @property
    def usage(self) -> Usage:
        total = Usage()
        for v in self.videos:
            total.add(v.usage)
        return total

    def render(self, memory_path: str, report_paths: list[str] | None = None) -> str:
        usage = self.usage
        totals: Counter[str] = Counter()
        for v in self.videos:
            totals.update(v.counts)
        issues: Counter[str] = Counter()
        for v in self.videos:
            issues.update(v.issue_counts())
        lines = [f"Built {len(self.videos)} video(s) into {memory_path} in {_duration(self.seconds)}:"]
        for v in self.videos:
            lines += ["  " + line for line in v.summary_lines()]
        lines.append(f"Totals: {totals.get('super', 0)} super / {totals.get('macro', 0)} macro events, "
                     f"{totals.get('entity', 0)} entities, {totals.get('event', 0)} micro-events, "
                     f"{totals.get('edges', 0)} edges")
        lines.append(f"Model: {usage.calls} calls ({usage.cached_calls} reused from checkpoints, "
                     f"{usage.retries} retries), {usage.input_tokens:,} input + {usage.output_tokens:,} output tokens")
        lines.append("Repairs of model output: " + (f"{_tally(issues)} (each listed in the report)" if issues
                                                    else "none needed"))
        for path in report_paths or []:
            lines.append(f"Report: {path}")
        lines.append("Next:")
        lines.append(f"  memtools tool get_summary --memory {memory_path}")
        lines.append(f"  memtools tool search_nodes --memory {memory_path} --query \"...\"")
        return "\n".join(lines)


def _tally(counts: dict[str, int], *, meaning: bool = False) -> str:
    """``2 repaired (fixed, kept), 1 dropped (left out)``: the severities in the order they matter."""
    return ", ".join(f"{counts[k]} {k}" + (f" ({MEANING[k]})" if meaning else "") for k in MEANING if counts.get(k))


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes} min {secs:02d} s"
