"""Running the server: ``serve()`` for Python callers, ``main()`` for the ``memtools-mcp`` console script.

stdout belongs to the protocol on stdio, so everything else (logs, the HTTP address) goes to
stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path
from typing import Literal

from memtools.errors import ConfigError, MemtoolsError
from memtools.jobs.arguments import job_options
from memtools.mcp.http import HttpOptions, authenticator, check_exposure
from memtools.mcp.launch import job_runner, serve_on
from memtools.mcp.server import _version, build_server
from memtools.options import add_serve_arguments, resolve_memory
from memtools.rerank.arguments import add_reranker_arg
from memtools.store import Memory

log = logging.getLogger(__name__)



def serve(memory: str | os.PathLike, *, http: bool = False, host: str = "127.0.0.1", port: int = 8765,
          verbose: bool = False, options: HttpOptions | None = None, tool_prefix: str = "",
          poll_seconds: float = 30.0, cache_dir: Path | None = None, allow_writes: bool = False,
          jobs: dict | None = None, structured_images: bool = True, audit_reads: bool = False,
          memories: str | os.PathLike | None = None, config_file: str | os.PathLike | None = None) -> None:
    """Serve the memory folder over stdio (default) or streamable HTTP at ``http://host:port/mcp``.

    ``memory`` may also be ``s3://bucket/prefix``, where ``memtools publish`` put the memory: the
    latest version is downloaded to ``cache_dir`` and served read-only, and a newer one is picked
    up every ``poll_seconds`` (``memtools.mcp.replica_serving``).

    ``options`` guard HTTP (allowed hosts and origins, authentication, connection cap; see
    ``memtools.mcp.http``). ``allow_writes`` serves the tools that change the memory, to the callers
    that may write (``memtools.mcp.permission``); a read replica refuses it. ``jobs``
    (``memtools.jobs.arguments.job_options``, needs ``allow_writes``) turns on ``add_video``: its runner
    starts with the server and resumes the jobs a stopped server left; without a usable model the server starts
    all the same and ``add_video`` answers what to set (``memtools.mcp.no_model``).
    Raises ``MemoryNotFound`` / ``IncompatibleMemory`` / ``ConfigError``
    before any client connects. Returns when
    the client closes stdin (stdio) or on Ctrl-C (HTTP).
    ``audit_reads`` records every tool call in ``<memory>/reads.jsonl`` (``memtools.mcp.audit_reads``);
    ``memories`` (a folder, with ``memory`` ``None``) serves every memory under it (``memtools.mcp.many``).
    A memory folder's retention policy (its ``retention.json``, else ``config_file``'s ``retention_days``) is
    applied at start and once a day (``memtools.changes.retention_daily``).
    """
    if memories is not None:  # many memories behind one server
        if memory is not None:
            raise ConfigError("give --memory DIR (one memory) or --memories DIR (every memory under DIR), not both")
        from memtools.mcp.many import serve_many

        return serve_many(memories, http=http, host=host, port=port, verbose=verbose, options=options,
                          tool_prefix=tool_prefix, allow_writes=allow_writes, jobs=jobs,
                          structured_images=structured_images, audit_reads=audit_reads, config_file=config_file)
    if http:  # a refused exposure or a missing token fails before anything else
        check_exposure(host, authenticator(options or HttpOptions()), options or HttpOptions())
        if allow_writes and options is not None and options.auth_token_env and not options.write_token_env:
            log.warning("--allow-writes with only --auth-token-env: that token only reads, so no HTTP client can "
                        "write; add --write-token-env VAR for the writers' token")
    from memtools.mcp.warmup import warm_up

    level: Literal["INFO", "WARNING"] = "INFO" if verbose else "WARNING"
    if allow_writes and isinstance(memory, str) and "://" in memory:
        raise ConfigError("--allow-writes: a read replica never writes; change the memory where it is built, "
                          "then `memtools publish` it")
    if jobs is not None and not allow_writes:
        raise ConfigError("add_video (--allow-root, --allow-urls) writes to the memory: start the server with "
                          "--allow-writes too")
    if isinstance(memory, str) and "://" in memory:
        from memtools.mcp.replica_serving import ReplicaTools

        replica = ReplicaTools(memory, cache_dir=cache_dir, poll_seconds=poll_seconds)
        replica.start()  # downloads, checks, opens and warms up the latest version
        provider: Memory | ReplicaTools = replica
        close, warming, where = replica.close, None, f"{memory} (version {replica.version})"
    else:
        opened = Memory.open(memory)  # reads the manifest only; the graph is opened per call
        provider, close, where = opened, opened.close, str(opened.path)
        warming = None
    try:
        runner = job_runner(provider, jobs) if jobs is not None and isinstance(provider, Memory) else None
        server = build_server(provider, log_level=level, tool_prefix=tool_prefix, allow_writes=allow_writes,
                              jobs=runner, structured_images=structured_images, audit_reads=audit_reads)
    except MemtoolsError:
        close()
        raise
    if runner is not None:
        runner.start()  # resumes what a stopped server left unfinished
        stop_jobs = runner.close
    else:
        stop_jobs = None
    if isinstance(provider, Memory):
        warming = warm_up(provider)  # the first search then answers in well under a second after `initialize`
    from memtools.changes.retention_daily import DailyRetention

    retention = DailyRetention(provider, config_file).start() if isinstance(provider, Memory) else None
    try:
        serve_on(server, http, host, port, options, f"memtools MCP server for {where}")
    finally:
        if stop_jobs is not None:
            stop_jobs()  # a running build stays checkpointed; the next start resumes it
        if retention is not None:
            retention.close()
        if warming is not None:
            warming.join()  # it uses the memory: let it end before the memory closes
        close()


def http_options(args: argparse.Namespace) -> HttpOptions:
    """The ``HttpOptions`` of parsed ``add_serve_arguments`` options."""
    return HttpOptions(allowed_hosts=tuple(args.allowed_host), allowed_origins=tuple(args.allowed_origin),
                       auth_token_env=args.auth_token_env, write_token_env=args.write_token_env,
                       auth_issuer=args.auth_issuer,
                       auth_audience=args.auth_audience, insecure_no_auth=args.insecure_no_auth,
                       max_connections=args.max_connections,
                       max_client_connections=args.max_client_connections,
                       tokens_file=getattr(args, "tokens_file", None))


def main(argv: list[str] | None = None) -> int:
    """``memtools-mcp --memory DIR [--transport http --host H --port P ...] [-v]``: ``memtools serve``'s options."""
    parser = argparse.ArgumentParser(
        prog="memtools-mcp",
        description="Serve a memtools memory as an MCP server (stdio by default, streamable HTTP with "
                    "--transport http).",
    )
    add_serve_arguments(parser)
    add_reranker_arg(parser)  # the same --reranker and --config as `memtools serve`
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log requests and details to stderr")
    args = parser.parse_args(argv)
    problem = resolve_memory(args)
    if problem:
        parser.error(problem)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        serve(args.memory, http=args.transport == "http", host=args.host, port=args.port, verbose=args.verbose,
              options=http_options(args), tool_prefix=args.tool_prefix, poll_seconds=args.poll_seconds,
              cache_dir=args.cache_dir, allow_writes=args.allow_writes, jobs=job_options(args),
              structured_images=args.structured_images, audit_reads=args.audit_reads, memories=args.memories,
              config_file=args.search_config)
    except MemtoolsError as exc:
        print(f"memtools-mcp: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0
