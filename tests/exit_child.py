"""One process that exits while memtools' background threads are inside native code
(tests/test_clean_exit.py runs it many times): the server warm-up and a background read of the
vector table in lance, and the frame decoder in OpenCV as a build fails. Before these threads
were stopped and joined at exit, such processes aborted (``terminate called without an active
exception``) or crashed (SIGSEGV, ``Fatal Python error``) now and then.

    python exit_child.py MEMORY_DIR VIDEO
"""

import asyncio
import sys
from pathlib import Path

from memtools.build.frames import FrameGrid, FrameReader
from memtools.embed.testing import TestEmbedder
from memtools.mcp.warmup import warm_up
from memtools.store import Memory, resident_search
from memtools.store.base import SearchQuery

memory_dir, video = Path(sys.argv[1]), Path(sys.argv[2])
resident_search.HOLD_AT_ONCE_BYTES = 0  # the rows are read on a background thread from the second search on
memory = Memory.open(memory_dir, TestEmbedder(64))
warm_up(memory)
for text in ("dog", "cat"):
    memory.vectors.search_columns(SearchQuery("vector", 5, memory.embedder.embed_query(text), lite=True))


async def a_build_that_fails() -> None:
    reader = FrameReader(video, FrameGrid(60.0, 0.1), max_side=160, max_ahead=10_000)
    reader.hold("segment", 0.0)
    reader.start()
    await reader.at([0.05])
    raise RuntimeError("the model's answer was not recorded")  # the decoder is still at work


try:
    asyncio.run(a_build_that_fails())
except RuntimeError as exc:
    print(f"build failed: {exc}", flush=True)
