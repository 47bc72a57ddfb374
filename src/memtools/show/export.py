"""``export_show``: write the pages, timeline pictures and keyframe thumbnails of a memory to a folder."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import cv2

from memtools.errors import ConfigError
from memtools.show.collect import library, used_frames, video_view
from memtools.show.page import frames_base, library_pages, timeline_name, video_files, video_page_name
from memtools.show.timeline import draw_timeline
from memtools.store import Memory
from memtools.tools import MemoryTools

THUMB_HEIGHT = 144


@dataclass
class ShowReport:
    out: Path
    index: Path
    pages: dict[str, Path] = field(default_factory=dict)  # video id -> its page
    timelines: dict[str, Path] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)  # video id -> bytes of its page
    skipped: dict[str, str] = field(default_factory=dict)  # video id -> why

    def render(self) -> str:
        lines = [f"Wrote {len(self.pages)} video page(s) and the library index to {self.out}",
                 f"Open {self.index}"]
        lines += [f"  {vid}: {path.name} ({self.sizes[vid] / 1024:.0f} KiB), {self.timelines[vid].name}"
                  if vid in self.timelines else f"  {vid}: {path.name} ({self.sizes[vid] / 1024:.0f} KiB)"
                  for vid, path in list(self.pages.items())[:20]]
        if len(self.pages) > 20:
            lines.append(f"  … and {len(self.pages) - 20} more")
        lines += [f"  skipped {vid}: {why}" for vid, why in self.skipped.items()]
        return "\n".join(lines)


def write_thumbnail(source: Path, target: Path, height: int = THUMB_HEIGHT) -> bool:
    """A small JPEG of ``source`` at ``target`` (False when the source cannot be read)."""
    image = cv2.imread(str(source), cv2.IMREAD_COLOR)
    if image is None:
        return False
    h, w = image.shape[:2]
    if h > height:
        image = cv2.resize(image, (max(1, round(w * height / h)), height), interpolation=cv2.INTER_AREA)
    target.parent.mkdir(parents=True, exist_ok=True)
    return bool(cv2.imwrite(str(target), image, [cv2.IMWRITE_JPEG_QUALITY, 80]))


def _write(path: Path, text: str) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8")
    path.write_bytes(data)
    return len(data)


def export_show(memory: Memory | MemoryTools, out: str | os.PathLike, *, video_ids: Sequence[str] | None = None,
                timeline: bool = True, progress: bool = False) -> ShowReport:
    """Write the library index and one page (plus timeline PNG and thumbnails) per ready video.

    ``video_ids`` limits the video pages written (the index always lists the whole library and
    links every page present in ``out``). ``progress`` shows a bar on stderr.
    """
    tools = memory if isinstance(memory, MemoryTools) else MemoryTools(memory)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; give a folder for the pages")
    out.mkdir(parents=True, exist_ok=True)
    rows = library(tools)
    known = {r.video_id: r for r in rows}
    wanted = list(dict.fromkeys(video_ids)) if video_ids else [r.video_id for r in rows]
    unknown = [v for v in wanted if v not in known]
    if unknown:
        some = ", ".join(list(known)[:5]) or "(none)"
        raise ConfigError(f"no video {unknown[0]!r} in this memory; it holds {some}; see memtools info")
    report = ShowReport(out=out, index=out / "index.html")
    from tqdm.auto import tqdm

    for vid in tqdm(wanted, desc="show", unit="video", disable=not progress or len(wanted) < 2):
        if known[vid].status != "ready":
            report.skipped[vid] = f"status {known[vid].status}, not ready"
            continue
        view = video_view(tools, vid)
        for name, rel in used_frames(view).items():
            source, target = tools.memory.path / rel, out / frames_base(vid) / name
            if not target.exists() or target.stat().st_mtime < source.stat().st_mtime:  # a rebuild's new frame
                write_thumbnail(source, target)
        if timeline:
            report.timelines[vid] = out / timeline_name(vid)
            draw_timeline(view, report.timelines[vid], memory_path=tools.memory.path)
        for name, text in video_files(view, timeline=timeline).items():
            size = _write(out / name, text)
            if name == video_page_name(vid):
                report.pages[vid], report.sizes[vid] = out / name, size
    linked = {r.video_id for r in rows if (out / video_page_name(r.video_id)).exists()}
    for name, text in library_pages(rows, linked, title=f"memtools library: {tools.memory.path.name}").items():
        _write(out / name, text)
    return report
