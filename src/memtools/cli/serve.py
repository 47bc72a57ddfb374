"""``memtools serve``: the memory as an MCP server, over stdio (default) or streamable HTTP."""

from __future__ import annotations

import argparse

from memtools.cli.common import add_memory_arg

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def _port(text: str) -> int:
    value = int(text)
    if not 0 < value < 65536:
        raise argparse.ArgumentTypeError(f"port must be 1-65535, not {value}")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options ``memtools serve`` and ``memtools-mcp`` share."""
    add_memory_arg(p)
    p.add_argument("--http", action="store_true",
                   help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio")
    p.add_argument("--host", default=DEFAULT_HOST, help=f"address to listen on with --http (default {DEFAULT_HOST})")
    p.add_argument("--port", type=_port, default=DEFAULT_PORT, help=f"port for --http (default {DEFAULT_PORT})")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve", help="serve the memory to MCP clients (Claude Desktop, Claude Code, ...)",
        description="Serve a memory as an MCP server: nine read-only tools, resources and an answering prompt. "
                    "stdio by default (for client configs); --http for streamable HTTP.",
    )
    add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from memtools.mcp import serve

    serve(args.memory, http=args.http, host=args.host, port=args.port, verbose=args.verbose)
    return 0
