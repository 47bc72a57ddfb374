"""``memtools show`` at scale: time to collect, draw and write, and the size of a video page.

Synthetic warehouse videos of one macro event a minute (each with 8 entities, 8 micro-events,
2 on-screen texts and 15 edges, as in ``tests/show_support.long_graph``) are written to a
memory with a small test embedder (search is not measured here), then exported. Prints a
markdown table per video length.

    python benchmarks/show_pages.py [--hours 1,6,12,24] [--workdir /tmp]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from _common import load_average, markdown_table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from memtools.embed import TestEmbedder  # noqa: E402
from memtools.show.collect import used_frames, video_view  # noqa: E402
from memtools.show.page import video_files  # noqa: E402
from memtools.show.timeline import draw_timeline  # noqa: E402
from memtools.store import Memory  # noqa: E402
from memtools.tools import MemoryTools  # noqa: E402
from show_support import long_graph  # noqa: E402


def one(hours: float, workdir: Path) -> list[object]:
    folder = workdir / f"memtools-show-bench-{hours:g}h"
    shutil.rmtree(folder, ignore_errors=True)
    macros = int(hours * 60)
    graph = long_graph(video_id="long", macros=macros)
    started = time.perf_counter()
    with Memory.create(folder / "memory", TestEmbedder(16)) as memory:
        memory.write_video(graph)
    write_s = time.perf_counter() - started
    with Memory.open(folder / "memory", TestEmbedder(16)) as memory:
        tools = MemoryTools(memory)
        t0 = time.perf_counter()
        view = video_view(tools, "long")
        collect_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        draw_timeline(view, folder / "timeline.png", memory_path=memory.path)
        draw_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        files = video_files(view)
        page_s = time.perf_counter() - t0
    assert not used_frames(view)  # no keyframes in the synthetic graph
    page = len(files["video-long.html"].encode())
    parts = [len(text.encode()) for name, text in files.items() if name.endswith(".js")]
    shutil.rmtree(folder, ignore_errors=True)
    return [f"{hours:g} h", macros, f"{write_s:.1f}", f"{collect_s:.1f}", f"{draw_s:.1f}", f"{page_s:.2f}",
            f"{page / 1024 / 1024:.2f}", len(parts), f"{sum(parts) / 1024 / 1024:.2f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hours", default="1,6,12,24", help="video lengths in hours, comma-separated")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp"))
    args = parser.parse_args()
    rows = [one(float(h), args.workdir) for h in args.hours.split(",")]
    print(markdown_table(["video", "macro events", "write s", "collect s", "timeline s", "page s", "page MB",
                          "part files", "parts MB"], rows))
    print(f"\nload average: {load_average()}")


if __name__ == "__main__":
    main()
