"""Command-line options shared by the ``memtools`` CLI and the ``memtools-mcp`` script.

Their own module (not ``memtools.cli.common``), so the MCP server's entry point does not import
the CLI that launches it.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765

MEMORY_ENV = "MEMTOOLS_MEMORY"
"""Environment variable naming the memory folder when ``--memory`` is not given."""


def add_memory_arg(p: argparse.ArgumentParser, required: bool = True) -> None:
    """``--memory DIR`` on a subcommand. It may also come before the subcommand (``memtools --memory DIR
    info``) or from ``$MEMTOOLS_MEMORY``; ``resolve_memory`` checks, after parsing, that one was given."""
    from memtools.cli.arg_types import folder  # here, not at the top: memtools.cli imports this module

    p.add_argument("--memory", "-m", type=folder, default=argparse.SUPPRESS, metavar="DIR",
                   help=f"memory folder (created by import-captions or build); default ${MEMORY_ENV}")
    p.set_defaults(memory_required=required)


def resolve_memory(args: argparse.Namespace) -> str | None:
    """Fill ``args.memory`` from ``$MEMTOOLS_MEMORY`` when no ``--memory`` was given; the problem, if any."""
    if getattr(args, "memory", None) is None:
        env = os.environ.get(MEMORY_ENV, "").strip()
        args.memory = Path(env) if env else None
    if args.memory is None and getattr(args, "memory_required", False):
        return f"the memory folder is missing: pass --memory DIR (before or after the command) or set {MEMORY_ENV}"
    return None


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"port must be a number 1-65535, not {text!r}") from None
    if not 0 < value < 65536:
        raise argparse.ArgumentTypeError(f"port must be 1-65535, not {value}")
    return value


def add_serve_arguments(p: argparse.ArgumentParser) -> None:
    """The options ``memtools serve`` and ``memtools-mcp`` share."""
    add_memory_arg(p)
    p.add_argument("--http", action="store_true",
                   help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio")
    p.add_argument("--host", default=DEFAULT_HOST, help=f"address to listen on with --http (default {DEFAULT_HOST})")
    p.add_argument("--port", type=_port, default=DEFAULT_PORT, help=f"port for --http (default {DEFAULT_PORT})")


__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "MEMORY_ENV", "add_memory_arg", "add_serve_arguments", "resolve_memory"]
