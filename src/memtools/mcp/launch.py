"""What both kinds of server (one memory, ``memtools.mcp.run``; many, ``memtools.mcp.many``) start the same way:
the build jobs' runner of a memory, and the transport."""

from __future__ import annotations

import sys
from typing import Any

from memtools.errors import ConfigError
from memtools.jobs.arguments import make_runner
from memtools.mcp.http import HttpOptions, run_http
from memtools.store import Memory


def serve_on(server: Any, http: bool, host: str, port: int, options: HttpOptions | None, what: str) -> None:
    """Run ``server`` over stdio, or over streamable HTTP on ``host:port`` after saying where (``what``) on stderr."""
    if not http:
        server.run()
        return
    shown = f"[{host}]" if ":" in host else host
    print(f"{what}: MCP at http://{shown}:{port}/mcp, browsable pages at http://{shown}:{port}/", file=sys.stderr,
          flush=True)
    run_http(server, host, port, options)


def job_runner(memory: Memory, jobs: dict):
    """add_video's runner; without a usable model (none given, an unknown one, a budget without a price) a stand-in
    whose add_video says what to set, so that the other tools are served all the same (``memtools.mcp.no_model``)."""
    try:
        return make_runner(memory, jobs)
    except ConfigError as exc:
        from memtools.mcp.no_model import runner_without_model

        return runner_without_model(memory, jobs, exc)


__all__ = ["job_runner", "serve_on"]
