"""Background warm-up of a freshly started server, so the client's first search is not the slow one.

A cold process pays about a second for ``import lancedb`` and a fraction for loading the query
embedder and bm25s; a server starts long before its client asks anything, so ``serve`` does
these on a daemon thread while the client connects and lists the tools (and reads a small
vector table into memory; a large one is read from its second search on). Failures are only logged: the
real call reports them to the client in its own words.
"""

from __future__ import annotations

import logging
import threading

from memtools import background
from memtools.retrieval.root_words import root_words
from memtools.store import Memory

log = logging.getLogger(__name__)


def warm_up(memory: Memory) -> threading.Thread | None:
    """Load the query embedder and open the vector table on a background thread (started, returned;
    None if the process is exiting). Exit waits for it (``memtools.background``)."""

    def run() -> None:
        try:
            memory.embedder.embed_query("warm up")
            memory.vectors.warm_up()  # imports lancedb, opens the table, checks it against the manifest
            root_words(memory.vectors.video_profiles())  # imports bm25s, indexes the roots' words
        except Exception:  # noqa: BLE001 - a warm-up must never take the server down
            log.debug("warm-up of %s failed; the first call will report it", memory.path, exc_info=True)

    return background.start(run, name="memtools-warm-up")
