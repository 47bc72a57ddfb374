"""``search_frames``: the keyframes themselves, searched by image-text similarity.

A text query is embedded with the memory's image embedder (CLIP, SigLIP, ...) and matched
against the lance ``keyframes`` table; ``frame_id`` instead finds frames that look like a
stored one ("more like this"). Each hit carries its time, macro event and JPEG, so every
front end shows it the way it shows ``inspect_frames``.
"""

from __future__ import annotations

from pathlib import Path

from memtools.errors import ToolError, ToolNotFound
from memtools.store.base import SearchFilter
from memtools.store.tables.keyframe_index import FrameRow
from memtools.tools import messages as msg
from memtools.tools.frame_results import FrameItem, Frames
from memtools.tools.frame_text import describe_frames
from memtools.tools.host import ToolsHost
from memtools.tools.text import span

FRAMES_TOP_K = 6
FRAMES_TOP_K_MAX = 16


class FrameMatch(FrameItem):
    video_id: str
    score: float


class FrameMatches(Frames):
    """Keyframes ranked by similarity to ``query`` or to the frame ``frame_id``."""

    frames: list[FrameMatch]  # type: ignore[assignment]
    query: str = ""
    frame_id: str = ""

    def _scope(self) -> str:
        what = f"looking like {self.frame_id}" if self.frame_id else f"matching {self.query!r}"
        window = f" {span(self.start_sec, self.end_sec)}" if self.end_sec else ""
        return f"{what} in {self.video_id or 'every video'}{window}"

    def _heading(self) -> str:
        return f"{len(self.frames)} frame(s) {self._scope()} (by visual similarity, best first):"

    def _frame_name(self, frame: FrameItem) -> str:
        return frame.keyframe_id

    def _frame_extra(self, frame: FrameItem) -> str:
        return f", similarity {frame.score:.2f}" if isinstance(frame, FrameMatch) else ""


class FrameSearchTools(ToolsHost):
    """``search_frames`` for ``MemoryTools`` (which provides ``memory``, ``_video_id`` and ``_outline``)."""

    def search_frames(self, query: str | None = None, frame_id: str | None = None, video_id: str | None = None,
                      start_sec: float | None = None, end_sec: float | None = None,
                      top_k: int = FRAMES_TOP_K) -> FrameMatches:
        if (query is None or not query.strip()) == (frame_id is None):
            raise ToolError(msg.FRAME_QUERY_OR_ID)
        if not 1 <= top_k <= FRAMES_TOP_K_MAX:
            raise ToolError(msg.BAD_RANGE.format(name="top_k", low=1, high=FRAMES_TOP_K_MAX, value=top_k))
        start, end = start_sec or 0.0, end_sec
        if (start_sec is not None and start_sec < 0) or (end is not None and end <= start):
            raise ToolError(msg.BAD_WINDOW.format(start=start_sec, end=end_sec))
        memory = self.memory
        memory.refresh()
        vid = self._video_id(video_id) if video_id is not None else None
        table = memory.keyframes
        if table is None:
            raise ToolError(msg.NO_FRAME_VECTORS)
        where = SearchFilter(video_ids=None if vid is None else (vid,), start=start_sec, end=end)
        if frame_id is not None:
            found = table.frame(frame_id)
            if found is None:
                raise ToolNotFound(msg.NO_FRAME_VECTOR.format(frame_id=frame_id))
            vector = found[1]
            rows = [r for r in table.search(vector, top_k + 1, where) if r.id != frame_id][:top_k]
        else:
            embedder = memory.image_embedder  # present whenever the keyframes table is
            if embedder is None:
                raise ToolError(msg.NO_FRAME_VECTORS)
            rows = table.search(embedder.embed_query(query or ""), top_k, where)
        return self._matches(rows, vid or "", start, end or 0.0, query or "", frame_id or "")

    def _matches(self, rows: list[FrameRow], video_id: str, start: float, end: float, query: str,
                 frame_id: str) -> FrameMatches:
        root = Path(self.memory.path)
        items, images, missing = [], [], 0
        for row in rows:
            path = root / row.path
            if not path.is_file():
                missing += 1
                continue
            outline = self._outline(row.video_id)
            macros = outline.macros if outline is not None else ()
            macro = next((m for m in macros if m.id == row.macro_id), None) or next(
                (m for m in macros if m.t_start <= row.t <= m.t_end), None)
            images.append(path.read_bytes())
            items.append(FrameMatch(t=row.t, macro_id=macro.id if macro else row.macro_id,
                                    macro_label=macro.label if macro else "", source="keyframe",
                                    keyframe_id=row.id, path=row.path, video_id=row.video_id,
                                    score=round(row.score, 4)))
        episodes = [m for vid in {i.video_id for i in items} if (o := self._outline(vid)) is not None
                    for m in o.macros]
        with self._reading() as g:
            describe_frames(items, episodes, lambda macro_id: g.subgraph(macro_id)[0])
        note = f"{missing} matching keyframe image(s) are missing from the memory folder." if missing else ""
        return FrameMatches(video_id=video_id, start_sec=start, end_sec=end, frames=items, images=images,
                            query=query, frame_id=frame_id, note=note)
