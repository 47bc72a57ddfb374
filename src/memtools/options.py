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
TRANSPORT_ENV, HOST_ENV, PORT_ENV = "MEMTOOLS_TRANSPORT", "MEMTOOLS_HOST", "MEMTOOLS_PORT"

MEMORY_ENV = "MEMTOOLS_MEMORY"
"""Environment variable naming the memory folder when ``--memory`` is not given."""


def add_memory_arg(p: argparse.ArgumentParser, required: bool = True, *, published: bool = False) -> None:
    """``--memory DIR`` on a subcommand. It may also come before the subcommand (``memtools --memory DIR
    info``) or from ``$MEMTOOLS_MEMORY``; ``resolve_memory`` checks, after parsing, that one was given.
    ``published``: ``s3://bucket/prefix`` (a memory published with ``memtools publish``) is accepted too."""
    from memtools.arg_types import folder, folder_or_uri  # here, not at the top: memtools.cli imports this

    if published:
        p.add_argument("--memory", "-m", type=folder_or_uri, default=argparse.SUPPRESS, metavar="DIR|s3://...",
                       help="memory folder (created by import-captions or build), or s3://BUCKET/PREFIX where "
                            f"`memtools publish` put it (served read-only, following new versions); default "
                            f"${MEMORY_ENV}")
    else:
        p.add_argument("--memory", "-m", type=folder, default=argparse.SUPPRESS, metavar="DIR",
                       help=f"memory folder (created by import-captions or build); default ${MEMORY_ENV}")
    p.set_defaults(memory_required=required)


def resolve_memory(args: argparse.Namespace) -> str | None:
    """Fill ``args.memory`` from ``$MEMTOOLS_MEMORY`` when no ``--memory`` was given; the problem, if any."""
    if getattr(args, "memory", None) is None:
        env = "" if getattr(args, "memories", None) else os.environ.get(MEMORY_ENV, "").strip()  # --memories: many
        args.memory = (env if "://" in env else Path(env)) if env else None
    if args.memory is None and getattr(args, "memory_required", False) and not getattr(args, "memories", None):
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


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"give a whole number of at least 1, not {text!r}")
    return int(text)


def _env(name: str, default: str) -> str:
    return os.environ.get(name, "").strip() or default


def add_serve_arguments(p: argparse.ArgumentParser) -> None:
    """The options ``memtools serve`` and ``memtools-mcp`` share (``$MEMTOOLS_TRANSPORT``, ``$MEMTOOLS_HOST`` and
    ``$MEMTOOLS_PORT`` give defaults for the first three)."""
    from memtools.arg_types import folder, positive_seconds

    add_memory_arg(p, published=True)
    transport = _env(TRANSPORT_ENV, "stdio")
    p.add_argument("--transport", choices=("stdio", "http"), default=transport if transport in ("stdio", "http")
                   else "stdio", help=f"stdio (for client configs) or streamable HTTP at http://HOST:PORT/mcp with "
                                      f"the browsable pages at / (default ${TRANSPORT_ENV} or stdio)")
    p.add_argument("--http", dest="transport", action="store_const", const="http", help="same as --transport http")
    p.add_argument("--host", default=_env(HOST_ENV, DEFAULT_HOST),
                   help=f"address to listen on over HTTP (default ${HOST_ENV} or {DEFAULT_HOST}); beyond loopback "
                        "it needs --auth-token-env, --auth-issuer or --insecure-no-auth")
    p.add_argument("--port", type=_port, default=_env(PORT_ENV, str(DEFAULT_PORT)),
                   help=f"port over HTTP (default ${PORT_ENV} or {DEFAULT_PORT})")
    p.add_argument("--tool-prefix", default="", metavar="PREFIX",
                   help="put PREFIX before every tool name (e.g. memtools_, so search_nodes cannot collide with "
                        "another server's tool)")
    p.add_argument("--no-structured-images", dest="structured_images", action="store_false",
                   help="leave structuredContent out of inspect_frames / search_frames results (for clients that "
                        "drop a result's images when it has structured content)")
    r = p.add_argument_group("read replicas (--memory s3://BUCKET/PREFIX)")
    r.add_argument("--poll-seconds", type=positive_seconds, default=30.0, metavar="S",
                   help="read LATEST.json this often and move to a newer published version (default 30)")
    r.add_argument("--cache-dir", type=folder, default=None, metavar="DIR",
                   help="where the served version is downloaded (default $MEMTOOLS_CACHE_DIR, else "
                        "$XDG_CACHE_HOME/memtools/replicas or ~/.cache/memtools/replicas)")
    p.add_argument("--memories", type=folder, default=None, metavar="DIR",
                   help="serve every memory under DIR (each subfolder holding one; new ones are found within "
                        "seconds) instead of --memory: every tool takes memory=NAME, and a token sees only the "
                        "memories its scopes name (memtools:read:NAME, memtools:write:NAME; see --tokens-file)")
    p.add_argument("--audit-reads", action="store_true",
                   help="append one JSON line per tool call (when, caller, tool, arguments, node ids returned) to "
                        "reads.jsonl in the memory folder; `memtools log --reads` prints it")
    p.add_argument("--allow-writes", action="store_true",
                   help="serve the tools that change the memory (add_note, rename_entity, merge_entities, "
                        "split_entity, forget_video, label_person, forget_person, undo_change, list_changes; each "
                        "recorded in `memtools log`, all undoable but forget_person; with --allow-root or "
                        "--allow-urls also add_video, get_job, list_jobs, cancel_job, estimate_build); over HTTP "
                        "only tokens of --write-token-env, or with the memtools:write scope, may use them")
    g = p.add_argument_group("HTTP security")
    g.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                   help="also accept requests whose Host header names NAME (loopback names and the --host address "
                        "are accepted; repeatable; '*' accepts any)")
    g.add_argument("--allowed-origin", action="append", default=[], metavar="ORIGIN",
                   help="also accept browser requests from ORIGIN, e.g. https://app.example.com (loopback and "
                        "same-origin pages are accepted; repeatable)")
    g.add_argument("--auth-token-env", metavar="VAR",
                   help="require 'Authorization: Bearer <token>' on every route, the token being the value of the "
                        "environment variable VAR")
    g.add_argument("--write-token-env", metavar="VAR",
                   help="with --allow-writes: a second bearer token, the value of VAR, that may also change the "
                        "memory (the --auth-token-env token only reads)")
    g.add_argument("--tokens-file", metavar="FILE",
                   help="with --memories: a JSON object naming bearer tokens (an environment variable's name, or "
                        "sha256:HEX of the token) with their scopes, e.g. {\"ALICE_TOKEN\": "
                        "[\"memtools:read:kitchen\"]}")
    g.add_argument("--auth-issuer", metavar="URL",
                   help="MCP authorization: accept OAuth access tokens of this issuer (checked at its token "
                        "introspection endpoint); serves /.well-known/oauth-protected-resource")
    g.add_argument("--auth-audience", metavar="AUD", help="with --auth-issuer: the audience tokens must name")
    g.add_argument("--insecure-no-auth", action="store_true",
                   help="allow listening beyond loopback without authentication (trusted networks only)")
    g.add_argument("--max-connections", type=_count, default=64, metavar="N",
                   help="requests served at once; more are answered 503 (default 64)")
    g.add_argument("--max-client-connections", type=_count, default=16, metavar="N",
                   help="connections one client address may hold open; more are answered 503 (default 16; raise "
                        "it behind a reverse proxy, where every client has the proxy's address). Every connection "
                        "must send its request headers within 5 s")
    from memtools.jobs.arguments import add_job_arguments

    add_job_arguments(p)

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "MEMORY_ENV", "add_memory_arg", "add_serve_arguments", "resolve_memory"]
