"""The results of the frame tools (``inspect_frames``, ``search_frames``): frames with their time,
episode and what the memory says is visible there, the images beside them."""

from __future__ import annotations

from pydantic import BaseModel, Field

from memtools.tools.results import ToolResult as _Result
from memtools.tools.text import clip, hms, span


class FrameItem(BaseModel):
    t: float
    macro_id: str = ""
    macro_label: str = ""
    source: str  # "video" (decoded now) or "keyframe" (stored)
    keyframe_id: str = ""
    path: str = ""
    description: str = Field("", description="What the memory says is visible at this moment (the episode's "
                                             "summary, events under way, on-screen text, entities), for clients "
                                             "that do not show the image")


class Frames(_Result):
    video_id: str
    start_sec: float
    end_sec: float
    frames: list[FrameItem]
    note: str = ""
    images: list[bytes] = Field(default_factory=list, exclude=True, repr=False)

    def render(self) -> str:
        if not self.frames:
            return f"No frames {self._scope()}. {self.note}".strip()
        lines = [self._heading()]
        for i, f in enumerate(self.frames, 1):
            where = f" in {f.macro_id} ({clip(f.macro_label, 70)})" if f.macro_id else ""
            lines.append(f"{i}. {self._frame_name(f)} at {hms(f.t)} ({f.t:.1f} s){where}{self._frame_extra(f)}")
            if f.description:
                lines.append(f"   shows: {f.description}")
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)

    def _scope(self) -> str:
        return f"for {self.video_id} {span(self.start_sec, self.end_sec)}"

    def _heading(self) -> str:
        return f"{len(self.frames)} frame(s) of {self.video_id} {span(self.start_sec, self.end_sec)}:"

    def _frame_name(self, frame: FrameItem) -> str:
        return "frame"

    def _frame_extra(self, frame: FrameItem) -> str:
        return ""
