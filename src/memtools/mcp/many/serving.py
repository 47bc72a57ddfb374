"""``memtools serve --memories DIR``: build and run the one server of many memories."""

from __future__ import annotations

import dataclasses
import logging
import os
from pathlib import Path
from typing import Any, Literal

import anyio.to_thread

from memtools.changes.retention_daily import DailyRetention
from memtools.errors import ConfigError
from memtools.mcp import caching
from memtools.mcp.http import HttpOptions, authenticator, check_exposure
from memtools.mcp.launch import job_runner, serve_on
from memtools.mcp.many.pages import register_pages
from memtools.mcp.many.registry import Memories, Served
from memtools.mcp.many.server import MANY_INSTRUCTIONS, ManyServer, register
from memtools.mcp.prompts import INSTRUCTIONS, WRITE_INSTRUCTIONS
from memtools.mcp.server import LEVELS, _version, build_server
from memtools.store import Memory

log = logging.getLogger(__name__)


def opener(*, log_level: str = "WARNING", tool_prefix: str = "", allow_writes: bool = False,
           jobs: dict | None = None, structured_images: bool = True, audit_reads: bool = False,
           config_file: str | os.PathLike | None = None) -> Any:
    """``open_one(name, folder)`` for ``Memories``: the memory's own server (its runner started, when jobs are on)
    and its retention policy applied at once and daily (``memtools.changes.retention_daily``), as one memory's
    server does."""

    def open_one(name: str, folder: Path) -> Served:
        memory = Memory.open(folder)  # reads the manifest only; the graph is opened per call
        try:
            runner = job_runner(memory, jobs) if jobs is not None else None
            server = build_server(memory, name=f"memtools-{name}", log_level=log_level,  # type: ignore[arg-type]
                                  tool_prefix=tool_prefix, allow_writes=allow_writes, jobs=runner,
                                  structured_images=structured_images, audit_reads=audit_reads)
        except BaseException:
            memory.close()
            raise
        if runner is not None:
            runner.start()  # resumes what a stopped server left unfinished
        retention = DailyRetention(memory, config_file).start()

        def close() -> None:
            retention.close()
            if runner is not None:
                runner.close()
            memory.close()

        return Served(name, server, close)

    return open_one


def build_many_server(folder: str | Path, *, log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR",
                                                                "CRITICAL"] = "WARNING",
                      tool_prefix: str = "", allow_writes: bool = False, jobs: dict | None = None,
                      structured_images: bool = True, audit_reads: bool = False,
                      rescan_seconds: float | None = None,
                      config_file: str | os.PathLike | None = None) -> ManyServer:
    """The one MCP server of every memory under ``folder`` (``memtools.mcp.many``); ``server.memories.close()``
    closes them."""
    if jobs is not None and not allow_writes:
        raise ConfigError("add_video (--allow-root, --allow-urls) writes to the memory: start the server with "
                          "--allow-writes too")
    open_one = opener(log_level=log_level, tool_prefix=tool_prefix, allow_writes=allow_writes, jobs=jobs,
                      structured_images=structured_images, audit_reads=audit_reads, config_file=config_file)
    memories = Memories(folder, open_one, **({"rescan_seconds": rescan_seconds} if rescan_seconds is not None
                                             else {}))
    memories.scan()
    if not memories.all():
        log.warning("no memory under %s yet: its subfolders holding a memory are served as they appear", folder)
    instructions = INSTRUCTIONS + (WRITE_INSTRUCTIONS if allow_writes else "") + MANY_INSTRUCTIONS
    server = ManyServer(memories, allow_writes=allow_writes, tool_prefix=tool_prefix, name="memtools",
                        title="memtools video memories", instructions=instructions, version=_version(),
                        log_level=log_level, cache_hints=caching.cache_hints())  # stale for at most the hints' ttl
    register(server, anyio.to_thread.run_sync)
    register_pages(server)

    async def set_level(level: str) -> None:
        logging.getLogger("memtools").setLevel(LEVELS.get(level, logging.WARNING))

    server.on_set_level(set_level)

    @server.custom_route("/health", methods=["GET"])
    async def health(request):  # noqa: ARG001 - Starlette passes the request
        from starlette.responses import JSONResponse

        return JSONResponse({"status": "ok", "server": "memtools"})

    return server


def serve_many(folder: str | Path, *, http: bool = False, host: str = "127.0.0.1", port: int = 8765,
               verbose: bool = False, options: HttpOptions | None = None, tool_prefix: str = "",
               allow_writes: bool = False, jobs: dict | None = None, structured_images: bool = True,
               audit_reads: bool = False, config_file: str | os.PathLike | None = None) -> None:
    """Serve every memory under ``folder`` over stdio or streamable HTTP (``memtools.mcp.run.serve``'s options)."""
    options = dataclasses.replace(options or HttpOptions(), per_memory=True)
    if http:
        check_exposure(host, authenticator(options), options)
    elif options.tokens_file:
        raise ConfigError("--tokens-file guards HTTP: add --transport http (over stdio the client that starts the "
                          "server may use every memory)")
    server = build_many_server(folder, log_level="INFO" if verbose else "WARNING", tool_prefix=tool_prefix,
                               allow_writes=allow_writes, jobs=jobs, structured_images=structured_images,
                               audit_reads=audit_reads, config_file=config_file)
    try:
        serve_on(server, http, host, port, options, f"memtools MCP server for the memories under {folder}")
    finally:
        server.memories.close()


__all__ = ["build_many_server", "opener", "serve_many"]
