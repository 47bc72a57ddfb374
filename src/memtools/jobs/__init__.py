"""Builds started from a front end (``add_video`` over MCP): checked sources, persisted jobs, one runner.

    from memtools.jobs import JobRunner, SourcePolicy

- ``sources``: which files and URLs may be read (``--allow-root``, ``--allow-urls``), and downloads;
- ``book``:    the jobs of a memory in ``jobs.json``, so they survive a restart;
- ``runner``:  builds them one at a time with the server's model, resuming after a restart,
               within ``--max-cost`` per job and per day.

Depends on ``build/`` and ``store/``; only front ends (``mcp/``) import it.
"""

from memtools.jobs.book import Job, JobBook, JobList
from memtools.jobs.runner import JobLimits, JobRunner, JobsFull
from memtools.jobs.sources import SourcePolicy, SourceRefused

__all__ = ["Job", "JobBook", "JobLimits", "JobList", "JobRunner", "JobsFull", "SourcePolicy", "SourceRefused"]
