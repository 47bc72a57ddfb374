"""``memtools serve``: the memory as an MCP server, over stdio (default) or streamable HTTP."""

from __future__ import annotations

import argparse

from memtools.cli.common import add_serve_arguments
from memtools.rerank.arguments import add_reranker_arg


def register(sub: argparse._SubParsersAction) -> None:
    from memtools.cli import _version

    p = sub.add_parser(
        "serve", help="serve the memory to MCP clients (Claude Desktop, Claude Code, ...)",
        description="Serve a memory as an MCP server: every memtools tool (read-only), resources and an answering "
                    "prompt. stdio by default (for client configs); --transport http for streamable HTTP at /mcp "
                    "with the browsable pages at /.",
    )
    add_serve_arguments(p)
    add_reranker_arg(p)
    # as memtools-mcp takes them (docs/mcp-server.md: every way of starting the server does); -v's default is left
    # out, so `memtools -v serve` keeps the root's
    p.add_argument("--version", action="version", version=f"memtools {_version()}")
    p.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                   help="log requests and details to stderr")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from memtools.jobs.arguments import job_options
    from memtools.mcp import serve  # the MCP SDK loads only when serving
    from memtools.mcp.run import http_options

    serve(args.memory, http=args.transport == "http", host=args.host, port=args.port, verbose=args.verbose,
          options=http_options(args), tool_prefix=args.tool_prefix, poll_seconds=args.poll_seconds,
          cache_dir=args.cache_dir, allow_writes=args.allow_writes, jobs=job_options(args),
          structured_images=args.structured_images, audit_reads=args.audit_reads, memories=args.memories,
          config_file=args.search_config)
    return 0
