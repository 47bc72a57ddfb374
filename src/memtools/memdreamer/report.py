"""What a MEMDREAMER import did: per video, what was imported, dropped, repaired, and why.

Model output is untrusted input, so the importer never fails a whole video over one bad
edge: it drops or repairs the item and counts it here under a short, readable reason
("edge: dangling endpoint", "time clipped into the macro event's range"). A video that
cannot be read at all is reported with ``status="skipped"`` and an ``error``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

COUNT_KINDS = ("super", "macro", "entity", "event", "ocr", "keyframe", "edges")
SHOWN_REASONS = 6


class VideoReport(BaseModel):
    """One video folder of the release."""

    key: str
    video_id: str
    folder: str = ""
    status: Literal["parsed", "imported", "skipped"] = "parsed"
    error: str = ""
    counts: dict[str, int] = Field(default_factory=dict)
    dropped: dict[str, int] = Field(default_factory=dict, description="reason -> how many items were left out")
    repaired: dict[str, int] = Field(default_factory=dict, description="reason -> how many items were fixed up")
    notes: list[str] = Field(default_factory=list)
    source_embedding_dim: int | None = Field(default=None, description="dimension found in embeddings.json")
    id_map: dict[str, str] = Field(
        default_factory=dict,
        description="MEMDREAMER id (super_01, macro_0012, slot30_ent_008) -> memtools id",
    )

    def drop(self, reason: str, n: int = 1) -> None:
        if n:
            self.dropped[reason] = self.dropped.get(reason, 0) + n

    def repair(self, reason: str, n: int = 1) -> None:
        if n:
            self.repaired[reason] = self.repaired.get(reason, 0) + n

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    @property
    def nodes(self) -> int:
        return sum(v for k, v in self.counts.items() if k != "edges")

    def render(self) -> str:
        if self.status == "skipped":
            return f"- {self.key}: skipped — {self.error}"
        counts = ", ".join(f"{self.counts.get(k, 0)} {k}" for k in COUNT_KINDS)
        name = self.key if self.key == self.video_id else f"{self.key} -> {self.video_id}"
        lines = [f"- {name}: {counts}"]
        for title, reasons in (("dropped", self.dropped), ("repaired", self.repaired)):
            if reasons:
                lines.append(f"  {title} {sum(reasons.values())}: {_reasons(reasons)}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


class ImportReport(BaseModel):
    """Every video of one import run, in the order they were found."""

    root: str
    memory: str = ""
    embedder: str = ""
    dry_run: bool = False
    videos: list[VideoReport] = Field(default_factory=list)

    @property
    def imported(self) -> list[VideoReport]:
        return [v for v in self.videos if v.status != "skipped"]

    @property
    def skipped(self) -> list[VideoReport]:
        return [v for v in self.videos if v.status == "skipped"]

    @property
    def ok(self) -> bool:
        return bool(self.videos) and not self.skipped

    def render(self) -> str:
        done = self.imported
        verb = "Imported" if any(v.status == "imported" for v in self.videos) else "Read"
        where = "" if self.dry_run or not self.memory else f" into {self.memory}"
        using = f" (embedder {self.embedder})" if self.embedder and not self.dry_run else ""
        lines = [f"{verb} {len(done)} of {len(self.videos)} video(s) from {self.root}{where}{using}:"]
        lines += [v.render() for v in self.videos]
        nodes = sum(v.nodes for v in done)
        edges = sum(v.counts.get("edges", 0) for v in done)
        dropped = sum(sum(v.dropped.values()) for v in done)
        repaired = sum(sum(v.repaired.values()) for v in done)
        lines.append(f"Total: {nodes} nodes, {edges} edges; {dropped} item(s) dropped, {repaired} repaired"
                     + (f"; {len(self.skipped)} video(s) skipped" if self.skipped else ""))
        if self.dry_run:
            lines.append("Dry run: nothing was written.")
        return "\n".join(lines)


def _reasons(reasons: dict[str, int]) -> str:
    ranked = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = "; ".join(f"{reason} ×{n}" for reason, n in ranked[:SHOWN_REASONS])
    more = len(ranked) - SHOWN_REASONS
    return shown + (f"; (+{more} more reasons, see --report)" if more > 0 else "")
