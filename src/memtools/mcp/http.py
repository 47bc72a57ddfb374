"""Serving over HTTP: the SDK's streamable-HTTP app plus the show pages, behind one ``Guard``, run by uvicorn."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from memtools.errors import ConfigError
from memtools.mcp.connections import DEFAULT_PER_CLIENT, ConnectionLimits, limited_protocol
from memtools.mcp.guard import DEFAULT_MAX_CONNECTIONS, LOOPBACK_NAMES, METADATA_PATH, Gate, Guard

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HttpOptions:
    """How ``memtools serve --transport http`` guards the server (the ``--allowed-*`` / ``--auth-*`` options)."""

    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    auth_token_env: str | None = None
    write_token_env: str | None = None
    auth_issuer: str | None = None
    auth_audience: str | None = None
    insecure_no_auth: bool = False
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_client_connections: int = DEFAULT_PER_CLIENT
    tokens_file: str | None = None  # --tokens-file (memtools.mcp.tokens_file), with --memories only
    per_memory: bool = False  # --memories: scopes name memories; a token reads only what they name


def authenticator(options: HttpOptions) -> Any:
    """The ``StaticToken`` or ``IntrospectionVerifier`` the options ask for, or ``None``."""
    from memtools.mcp.auth import IntrospectionVerifier, StaticToken

    if (options.auth_token_env or options.write_token_env) and options.auth_issuer:
        raise ConfigError("give either --auth-token-env / --write-token-env or --auth-issuer, not both (with an "
                          "issuer, the memtools:write scope says who may write)")
    if options.auth_audience and not options.auth_issuer:
        raise ConfigError("--auth-audience needs --auth-issuer")
    if options.tokens_file:  # tokens that name their memories (memtools.mcp.tokens_file)
        from memtools.mcp.tokens_file import TokensFile

        if not options.per_memory:
            raise ConfigError("--tokens-file names the memories each token may use: serve them with --memories DIR "
                              "(one memory: --auth-token-env / --write-token-env)")
        if options.auth_token_env or options.write_token_env or options.auth_issuer:
            raise ConfigError("give either --tokens-file or --auth-token-env / --write-token-env / --auth-issuer")
        return TokensFile(options.tokens_file)
    if options.auth_token_env or options.write_token_env:
        return StaticToken(options.auth_token_env, options.write_token_env)
    if options.auth_issuer:
        return IntrospectionVerifier(options.auth_issuer, options.auth_audience, implicit_read=not options.per_memory)
    return None


def check_exposure(host: str, auth: Any, options: HttpOptions) -> None:
    """Refuse to listen beyond loopback without authentication unless ``--insecure-no-auth`` says so."""
    if host in LOOPBACK_NAMES or auth is not None:
        return
    if not options.insecure_no_auth:
        raise ConfigError(f"refusing to serve on {host} without authentication: anyone who can reach the port could "
                          "read the memory. Use --auth-token-env VAR or --auth-issuer URL, or --insecure-no-auth "
                          "if the network is trusted")
    log.warning("serving on %s without authentication (--insecure-no-auth): anyone who can reach this port can "
                "read the memory", host)


def http_app(server: Any, host: str = "127.0.0.1", options: HttpOptions | None = None, auth: Any = None) -> Guard:
    """The whole HTTP app of ``server`` (a ``MemtoolsServer``): ``/mcp``, the pages, ``/health`` and, with an
    issuer, the protected-resource metadata, all behind one ``Guard``."""
    options = options or HttpOptions()
    public: frozenset[str] = frozenset()
    if auth is not None and hasattr(auth, "metadata"):
        from starlette.responses import JSONResponse

        async def resource_metadata(request):
            return JSONResponse(auth.metadata(f"{request.url.scheme}://{request.headers.get('host', host)}"))

        for path in (METADATA_PATH, METADATA_PATH + "/mcp"):  # RFC 9728 §3.1: with and without the resource's path
            server.custom_route(path, methods=["GET"])(resource_metadata)
        public = frozenset({METADATA_PATH, METADATA_PATH + "/mcp"})
    gate = Gate.make(host, options.allowed_hosts, options.allowed_origins, authenticator=auth,
                     max_connections=options.max_connections, public_paths=public,
                     write_tools=server.write_tool_names())
    app = server.http_app()
    if getattr(server, "jobs", None) is not None:  # add_video while the job queue is full: 503 + Retry-After
        from memtools.mcp.jobs import FloodGate

        app = FloodGate(app, server.jobs.runner, server.tool_prefix + "add_video")
    return Guard(app, gate)


def run_http(server: Any, host: str, port: int, options: HttpOptions | None = None) -> None:
    """Serve ``server`` at ``http://host:port`` until Ctrl-C (``ConfigError`` before listening if misconfigured)."""
    import uvicorn

    options = options or HttpOptions()
    auth = authenticator(options)
    check_exposure(host, auth, options)
    app = http_app(server, host, options, auth)
    # no limit_concurrency: uvicorn's counts idle connections, so idle sockets would starve everyone; the
    # connection limits (memtools.mcp.connections) bound the sockets, the guard the requests in flight
    protocol = limited_protocol(ConnectionLimits(per_client=options.max_client_connections))
    uvicorn.run(app, host=host, port=port, log_level="warning", http=protocol, timeout_keep_alive=5)
