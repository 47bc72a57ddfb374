"""Running the server: ``serve()`` for Python callers, ``main()`` for the ``memtools-mcp`` console script.

stdout belongs to the protocol on stdio, so everything else (logs, the HTTP address) goes to
stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Literal

from memtools.errors import MemtoolsError
from memtools.mcp.sdk import LOOPBACK
from memtools.mcp.server import build_server
from memtools.options import add_serve_arguments, resolve_memory
from memtools.store import Memory

log = logging.getLogger(__name__)



def serve(memory: str | os.PathLike, *, http: bool = False, host: str = "127.0.0.1", port: int = 8765,
          verbose: bool = False) -> None:
    """Serve the memory folder over stdio (default) or streamable HTTP at ``http://host:port/mcp``.

    Raises ``MemoryNotFound`` / ``IncompatibleMemory`` before any client connects. Returns when
    the client closes stdin (stdio) or on Ctrl-C (HTTP).
    """
    opened = Memory.open(memory)  # reads the manifest only; the graph is opened per call
    level: Literal["INFO", "WARNING"] = "INFO" if verbose else "WARNING"
    server = build_server(opened, log_level=level)
    from memtools.mcp.warmup import warm_up

    warming = warm_up(opened)  # the first search then answers in well under a second after `initialize`
    try:
        if not http:
            server.run()
            return
        if host not in LOOPBACK:
            log.warning("serving on %s without authentication: anyone who can reach this port can read the memory",
                        host)
        print(f"memtools MCP server for {opened.path} on http://{host}:{port}/mcp", file=sys.stderr, flush=True)
        server.run_http(host, port)
    finally:
        if warming is not None:
            warming.join()  # it uses the memory: let it end before the memory closes
        opened.close()


def main(argv: list[str] | None = None) -> int:
    """``memtools-mcp --memory DIR [--http --host H --port P] [-v]``: the same options as ``memtools serve``."""
    parser = argparse.ArgumentParser(
        prog="memtools-mcp",
        description="Serve a memtools memory as an MCP server (stdio by default, streamable HTTP with --http).",
    )
    add_serve_arguments(parser)
    parser.add_argument("-v", "--verbose", action="store_true", help="log requests and details to stderr")
    args = parser.parse_args(argv)
    problem = resolve_memory(args)
    if problem:
        parser.error(problem)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        serve(args.memory, http=args.http, host=args.host, port=args.port, verbose=args.verbose)
    except MemtoolsError as exc:
        print(f"memtools-mcp: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
