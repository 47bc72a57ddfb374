"""Builds started from a front end (``add_video`` over MCP): checked sources, persisted jobs, one runner.

    from memtools.jobs import JobRunner, SourcePolicy

- ``sources``: which files and URLs may be read (``--allow-root``, ``--allow-urls``), and downloads;
- ``book``:    the jobs of a memory in ``jobs.json``, so they survive a restart;
- ``runner``:  builds them one at a time with the server's model, resuming after a restart,
               within ``--max-cost`` per job and per day.

Depends on ``build/`` and ``store/``; only front ends (``mcp/``) import it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memtools.jobs.book import Job, JobBook, JobList
    from memtools.jobs.runner import JobLimits, JobRunner, JobsFull
    from memtools.jobs.sources import SourcePolicy, SourceRefused

# Loaded on first use: ``memtools.jobs.arguments`` (every ``memtools`` command's parser, through
# ``serve``'s options) must not bring the runner's builder, cv2 and httpx with it.
_HOMES = {"Job": "book", "JobBook": "book", "JobList": "book", "JobLimits": "runner", "JobRunner": "runner",
          "JobsFull": "runner", "SourcePolicy": "sources", "SourceRefused": "sources"}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'memtools.jobs' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"memtools.jobs.{_HOMES[name]}"), name)
    globals()[name] = value
    return value


__all__ = ["Job", "JobBook", "JobLimits", "JobList", "JobRunner", "JobsFull", "SourcePolicy", "SourceRefused"]
