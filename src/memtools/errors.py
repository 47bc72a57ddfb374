"""Every exception memtools raises, in one tree.

Two audiences react to errors, so there are two branches:

    MemtoolsError                  developer-facing: misuse, config, broken input files
    ├── ConfigError                bad settings, unknown backend, missing optional extra
    ├── MemoryError_               the memory folder itself
    │   ├── MemoryNotFound         no memory at that path
    │   ├── IncompatibleMemory     built with another embedder or a newer schema
    │   ├── MemoryBusy             another process is writing; try again shortly
    │   └── MemoryDamaged          a part is missing or disagrees (also a ToolError: names the fix)
    ├── StoreError                 the graph or vector engine failed (chained cause)
    │   └── OutOfResources         memory, disk or open files ran out: nothing is damaged
    ├── ImportFormatError          a caption / MEMDREAMER file we could not read
    ├── VideoError                 unreadable, corrupt, empty or non-video file
    ├── PerceptionError            a vision-language model backend failed for good
    ├── EmbeddingError             an embedder failed
    ├── SpeechError                a speech recogniser failed for good (model, server)
    ├── RerankError                a reranker failed or answered something unusable (search falls back)
    ├── WallClockError             (memtools.wallclock, also a ValueError) a recording time, zone or
    │                              pattern that cannot be read, or a time a memory cannot hold
    └── BuildError                 the construction pipeline could not finish

    ToolError                      model-facing: written for an LLM to read and act on
    ├── ToolNotFound               an id (or name) the call named does not exist
    ├── ToolBusy                   the memory is being written; the same call works shortly
    └── MemoryDamaged              (see above) the memory needs a repair first

Every ``ToolError`` carries a ``kind`` (``"bad-arguments"``, ``"not-found"``, ``"busy"``,
``"unavailable"``) that front ends read instead of comparing message texts.

Third-party exceptions (kuzu, lance, cv2, httpx) are translated where they are caught and
chained with ``raise ... from exc``; they never leak out of memtools. The message says in plain
words what failed and the command that helps (``memtools check`` / ``memtools repair``); the
engine's own text (lance's Rust paths, kuzu's "Reading past the end of the file") goes to the
debug log (``logging``), never into the message: ``memtools.store.graph.cypher.translate`` for the graph,
``memtools.store.integrity.guarded_index.GuardedIndex`` and ``memtools.store.problems.unreadable`` for lance.
"""

from __future__ import annotations

import logging
from typing import Literal

ToolErrorKind = Literal["bad-arguments", "not-found", "busy", "unavailable", "forbidden"]
"""What went wrong with a tool call: the model's arguments, a missing id, a busy memory, a memory
that cannot be read at all (``unavailable``: not found, damaged or incompatible; a developer must act),
or a change asked by a caller who may only read (``forbidden``)."""


class MemtoolsError(Exception):
    """Base of every developer-facing memtools error."""


class ConfigError(MemtoolsError):
    """Bad settings, an unknown backend name, or a missing optional extra."""


class MemoryError_(MemtoolsError):  # noqa: N801 - avoid shadowing the builtin MemoryError
    """A problem with the memory folder."""


class MemoryNotFound(MemoryError_):
    """No memtools memory at the given path."""


class IncompatibleMemory(MemoryError_):
    """The memory was built with another embedder or a newer schema version."""


class MemoryBusy(MemoryError_):
    """Another process holds the memory for writing; retrying later will work."""


class RecoveryPending(MemoryBusy):
    """A killed writer left a write half-done (its journal, or the graph engine's shadow pages of a
    commit cut short) that only a writer can finish: ``memtools recover`` (or any write) does it."""


# Where an engine's own text starts in a message (lance wraps Rust errors with source paths).
_ENGINE_TEXT = ("lance error:", "LanceError(", "/rustc/", ".cargo/registry", "Runtime exception:")


class StoreError(MemtoolsError):
    """The graph or vector engine failed; the engine's exception is chained.

    The last guard of the plain-words rule: a message that still carries an engine's text (a caller
    wrote ``f"...: {exc}"``) keeps its memtools part, names ``memtools check``, and sends the whole
    text to the debug log."""

    def __init__(self, message: str = "", *args: object) -> None:
        cut = min((message.find(marker) for marker in _ENGINE_TEXT if marker in message), default=-1)
        if cut >= 0:
            logging.getLogger("memtools.store").debug("storage engine: %s", message)
            message = (message[:cut].rstrip(" :;,(") + " (the storage engine could not read or write its files; "
                       "`memtools check` on the memory says what is damaged)")
        super().__init__(message, *args)


class OutOfResources(StoreError):
    """The process ran out of memory, disk space or open files while reading or writing a memory
    (``memtools.store.resources``): the memory is not damaged; the message says what to free or raise."""

    def __init__(self, message: str = "", *args: object, resource: str = "memory") -> None:
        super().__init__(message, *args)
        self.resource = resource  # memory | disk | files


class ImportFormatError(MemtoolsError):
    """An input annotation file (captions, MEMDREAMER release) could not be read."""


class VideoError(MemtoolsError):
    """A video file is unreadable, corrupt, empty or not a video."""


class PerceptionError(MemtoolsError):
    """A vision-language model backend failed after its retries."""


class EmbeddingError(MemtoolsError):
    """An embedder failed."""


class SpeechError(MemtoolsError):
    """A speech recogniser failed: a model that cannot load, a server that keeps failing."""


class RerankError(MemtoolsError):
    """A reranker failed, timed out or returned unusable scores. Search catches it and keeps the
    first-stage order (with a warning in the result); it reaches callers of ``Reranker.rerank``."""


class BuildError(MemtoolsError):
    """The construction pipeline could not finish."""


class ToolError(Exception):
    """A tool call the model should change: the message says what to do instead.

    Deliberately not a ``MemtoolsError``: front ends turn it into an observation for the
    model (an MCP ``is_error`` result, a LangChain error ToolMessage, an ORA observation)
    while developer errors propagate. ``kind`` says which sort of mistake it is.
    """

    kind: ToolErrorKind = "bad-arguments"


class ToolNotFound(ToolError):
    """The call named an id (video, node, keyframe) that this memory does not hold."""

    kind: ToolErrorKind = "not-found"


class ToolBusy(ToolError):
    """Another process is writing the memory; the same call will work in a few seconds."""

    kind: ToolErrorKind = "busy"


class MemoryDamaged(MemoryError_, ToolError):
    """A part of the memory folder is missing or disagrees with the others.

    Also a ``ToolError``, so every front end shows a tool caller the message, which names the
    damage and the command that repairs it (``memtools check`` / ``memtools repair``). Its kind
    is ``unavailable``: no other arguments help until a developer repairs the memory.
    """

    kind: ToolErrorKind = "unavailable"


__all__ = [
    "BuildError",
    "ConfigError",
    "EmbeddingError",
    "ImportFormatError",
    "IncompatibleMemory",
    "MemoryBusy",
    "MemoryDamaged",
    "MemoryError_",
    "MemoryNotFound",
    "MemtoolsError",
    "OutOfResources",
    "PerceptionError",
    "SpeechError",
    "StoreError",
    "ToolBusy",
    "ToolError",
    "ToolErrorKind",
    "ToolNotFound",
    "VideoError",
]
