"""The index stage of a build: embed the video's searchable texts a batch at a time, then write.

    await index_video(memory, graph, progress)

The store embeds whatever it writes (``Memory.write_videos``), a few thousand texts per call,
so on a slow machine loading the embedder and embedding one video's texts took a minute with
the progress line standing still. Here the build embeds the search rows' texts itself first,
``BATCH`` at a time (the first batch small: that call also loads the model), advancing the
``index`` stage per text, and hands the vectors to the write (``embed_cache``), which then
embeds only what is left (the entity profiles, made from these vectors) and writes: the last
step of the stage. The vectors are the ones the store would compute (the same embedder on the
same texts), so the memory is the same.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from memtools.builder.progress import Progress
from memtools.schema import VideoGraph
from memtools.store import Memory
from memtools.store.tables.payload import index_rows
from memtools.store.writes.batch import EMBED_CACHE_TEXTS

STAGE = "index"
FIRST_BATCH = 4
BATCH = 64


async def index_video(memory: Memory, graph: VideoGraph, progress: Progress, *, frames: Path | None = None) -> None:
    """Write ``graph`` into ``memory``; the ``index`` stage counts the texts embedded, then the write.
    ``frames``: the staging root of the video's keyframe files, swapped in by the write."""
    texts = list(dict.fromkeys(row["text"] for row in index_rows([graph])))
    if len(texts) > EMBED_CACHE_TEXTS:  # the store would drop so large a cache and embed everything again
        texts = []
    progress.begin(STAGE, len(texts) + 1)
    cache: dict[str, object] = {}
    done = 0
    while done < len(texts):
        chunk = texts[done:done + (FIRST_BATCH if done == 0 else BATCH)]
        vectors = await asyncio.to_thread(memory.embedder.embed_documents, chunk)
        cache.update(zip(chunk, vectors, strict=True))
        progress.advance(STAGE, len(chunk), one_off=done == 0)  # the first call also loaded the model
        done += len(chunk)
    staged = {graph.video_id: frames} if frames is not None else None
    await asyncio.to_thread(memory.write_videos, [graph], embed_cache=cache, staged_frames=staged)
    progress.finish(STAGE)
