"""Who may use the HTTP server: a static bearer token, or tokens from an OAuth issuer (MCP authorization).

Both are checked by ``memtools.mcp.guard.Guard`` on every route.

- ``StaticToken``: ``--auth-token-env VAR`` names an environment variable holding one secret
  token (at least ``MIN_TOKEN_CHARS`` characters, or the server refuses to start); a request
  must carry ``Authorization: Bearer <it>`` (compared with ``hmac.compare_digest``). A refusal
  says ``WWW-Authenticate: Bearer realm="memtools"``. ``--write-token-env VAR2`` names a second
  token that may also write (with ``--allow-writes``; the first one only reads).
- ``IntrospectionVerifier``: ``--auth-issuer URL [--auth-audience AUD]`` (``https://``, or plain
  ``http://`` for an issuer on a loopback address only). The server is an
  OAuth 2.1 protected resource (RFC 9728): it serves its metadata at
  ``/.well-known/oauth-protected-resource`` (naming the issuer as its authorization server)
  and checks each token at the issuer's token introspection endpoint (RFC 7662), found in the
  issuer's metadata (RFC 8414 ``/.well-known/oauth-authorization-server``, else OpenID
  ``/.well-known/openid-configuration``). A token must be ``active``, unexpired, from that
  issuer (when the answer names one) and, with ``--auth-audience``, for that audience. If the
  issuer wants this server to authenticate itself, set ``MEMTOOLS_AUTH_CLIENT_ID`` and
  ``MEMTOOLS_AUTH_CLIENT_SECRET``. Answers are cached for at most a minute. When the issuer
  cannot be reached (refused, timed out, or answering 5xx) the request gets 503 with
  ``Retry-After``, not a refusal of its token (``AuthUnavailable``). A refusal says
  ``WWW-Authenticate: Bearer resource_metadata="<url>/.well-known/oauth-protected-resource"``.
  A token with the scope ``memtools:write`` may write (with ``--allow-writes``); any other valid
  token reads. It implements the SDK's ``TokenVerifier`` protocol (``verify_token -> AccessToken | None``).
"""

from __future__ import annotations

import hmac
import logging
import os
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import httpx
from mcp.server.auth.provider import AccessToken

from memtools.errors import ConfigError
from memtools.mcp.guard import MCP_PATH, METADATA_PATH, AuthUnavailable, is_loopback
from memtools.mcp.permission import READ_SCOPE, WRITE_SCOPE

log = logging.getLogger(__name__)

CLIENT_ID_ENV = "MEMTOOLS_AUTH_CLIENT_ID"
CLIENT_SECRET_ENV = "MEMTOOLS_AUTH_CLIENT_SECRET"
CACHE_SECONDS = 60.0
TIMEOUT = 10.0
MIN_TOKEN_CHARS = 32
"""The shortest static bearer token accepted (``secrets.token_urlsafe(32)`` gives 43 characters)."""


def read_token(where: str, env: str) -> bytes:
    """The secret token in environment variable ``env`` (refused, naming ``where`` it was asked for, when unset or
    too short to resist guessing)."""
    token = os.environ.get(env, "").strip()
    make = f"`export {env}=$(python -c \"import secrets; print(secrets.token_urlsafe(32))\")`"
    if not token:
        raise ConfigError(f"{where}: the environment variable {env} is not set or empty; "
                          f"set it to a long random secret, e.g. {make}")
    if len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(f"{where}: the token in {env} has {len(token)} characters, too few to "
                          f"resist guessing; use a random one of at least {MIN_TOKEN_CHARS}, e.g. {make}")
    return token.encode()


class StaticToken:
    """Shared secrets read from environment variables at startup: ``env`` (``--auth-token-env``) reads,
    ``write_env`` (``--write-token-env``) reads and writes (``memtools.mcp.permission``)."""

    def __init__(self, env: str | None, write_env: str | None = None) -> None:
        self._read = read_token(f"--auth-token-env {env}", env) if env else None
        self._write = read_token(f"--write-token-env {write_env}", write_env) if write_env else None
        if self._read is not None and self._write is not None and hmac.compare_digest(self._read, self._write):
            raise ConfigError(f"--auth-token-env {env} and --write-token-env {write_env} hold the same token: give "
                              "the writers a token of their own, so a reader's token cannot write")

    async def grant(self, token: str) -> frozenset[str] | None:
        """The scopes ``token`` grants (``None``: not a valid token)."""
        given = token.encode()
        if self._write is not None and hmac.compare_digest(given, self._write):
            return frozenset({READ_SCOPE, WRITE_SCOPE})
        if self._read is not None and hmac.compare_digest(given, self._read):
            return frozenset({READ_SCOPE})
        return None

    async def check(self, token: str) -> bool:
        return await self.grant(token) is not None

    def who(self, token: str) -> str:  # noqa: ARG002 - same API as the verifier
        return "token holder"

    def challenge(self, base_url: str, error: str | None) -> str:  # noqa: ARG002 - same API as the verifier
        return 'Bearer realm="memtools"' + (f', error="{error}"' if error else "")


class IntrospectionVerifier:
    """Tokens of one issuer, checked at its introspection endpoint (see the module docstring)."""

    def __init__(self, issuer: str, audience: str | None = None, *,
                 transport: httpx.BaseTransport | None = None, implicit_read: bool = True) -> None:
        parts = urlsplit(issuer)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"--auth-issuer {issuer!r}: give the issuer's URL, e.g. https://auth.example.com")
        if parts.scheme == "http" and not is_loopback(parts.hostname):
            raise ConfigError(f"--auth-issuer {issuer}: plain http would let anyone on the network read the tokens "
                              "and forge the issuer's answers; give its https:// URL (plain http is accepted only "
                              "for an issuer on this machine, e.g. http://127.0.0.1:9000)")
        self.issuer = issuer.rstrip("/")
        self.audience = audience
        self.implicit_read = implicit_read  # False with --memories: a token reads only the memories its scopes name
        self._client = httpx.Client(timeout=TIMEOUT, transport=transport)
        self._endpoint: str | None = None
        self._cache: dict[str, tuple[float, AccessToken | None]] = {}
        self._lock = threading.Lock()

    def metadata(self, base_url: str) -> dict[str, Any]:
        """The RFC 9728 protected-resource metadata of this server, seen at ``base_url``."""
        return {"resource": base_url.rstrip("/") + MCP_PATH, "authorization_servers": [self.issuer],
                "bearer_methods_supported": ["header"], "resource_name": "memtools video memory"}

    def challenge(self, base_url: str, error: str | None) -> str:
        return (f'Bearer resource_metadata="{base_url.rstrip("/")}{METADATA_PATH}"'
                + (f', error="{error}"' if error else ""))

    async def check(self, token: str) -> bool:
        """Whether ``token`` is valid; raises ``AuthUnavailable`` when the issuer cannot be asked."""
        return await self.grant(token) is not None

    async def grant(self, token: str) -> frozenset[str] | None:
        """The token's scopes (``None``: not valid): ``memtools:write`` writes; any valid token reads.
        Raises ``AuthUnavailable`` when the issuer cannot be asked."""
        import anyio.to_thread

        access = await anyio.to_thread.run_sync(self._verify, token)
        if access is None:
            return None
        return frozenset(access.scopes) | ({READ_SCOPE} if self.implicit_read else set())

    def who(self, token: str) -> str:
        """The token's subject or client, as the issuer named them (from the cached answer)."""
        with self._lock:
            cached = self._cache.get(token)
        access = cached[1] if cached is not None else None
        if access is None:
            return "token holder"
        return str(getattr(access, "subject", None) or access.client_id or "token holder")

    async def verify_token(self, token: str) -> AccessToken | None:
        import anyio.to_thread

        try:
            return await anyio.to_thread.run_sync(self._verify, token)
        except AuthUnavailable:
            return None  # the SDK's protocol has no third answer

    def _unreachable(self, what: str) -> AuthUnavailable:
        log.warning("cannot check tokens: the issuer %s %s", self.issuer, what)
        return AuthUnavailable(f"cannot check the bearer token now: the token issuer {self.issuer} {what}; "
                               "try again in a few seconds")

    def _ask(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """The issuer's answer; ``AuthUnavailable`` when it cannot give one."""
        try:
            answer = self._client.request(method, url, **kwargs)
        except httpx.TimeoutException as exc:
            raise self._unreachable(f"did not answer within {TIMEOUT:g} s") from exc
        except httpx.TransportError as exc:
            raise self._unreachable(f"cannot be reached ({exc or type(exc).__name__})") from exc
        if answer.status_code >= 500:
            raise self._unreachable(f"answered {answer.status_code}")
        return answer

    def _introspection_endpoint(self) -> str:
        if self._endpoint is None:
            for well_known in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
                answer = self._ask("GET", self.issuer + well_known)
                try:
                    endpoint = answer.json().get("introspection_endpoint") if answer.status_code == 200 else None
                except (AttributeError, ValueError):
                    endpoint = None
                if endpoint:
                    self._endpoint = str(endpoint)
                    break
            else:
                raise ConfigError(f"the issuer {self.issuer} publishes no introspection_endpoint in its metadata")
        return self._endpoint

    def _verify(self, token: str) -> AccessToken | None:
        now = time.time()
        with self._lock:
            cached = self._cache.get(token)
        if cached is not None and cached[0] > now:
            return cached[1]
        client_id, secret = os.environ.get(CLIENT_ID_ENV), os.environ.get(CLIENT_SECRET_ENV)
        credentials: Any = httpx.BasicAuth(client_id, secret) if client_id and secret else None
        try:
            answer = self._ask("POST", self._introspection_endpoint(), data={"token": token}, auth=credentials)
            claims = answer.json() if answer.status_code == 200 else {}
        except (httpx.HTTPError, ValueError, ConfigError) as exc:
            log.warning("token introspection at %s failed: %s", self.issuer, exc)
            return None  # not cached: the next request asks again
        access = self._accept(token, claims if isinstance(claims, dict) else {}, now)
        until = now + CACHE_SECONDS
        if access is not None and access.expires_at:
            until = min(until, float(access.expires_at))
        with self._lock:
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[token] = (until, access)
        return access

    def _accept(self, token: str, claims: dict[str, Any], now: float) -> AccessToken | None:
        """The token the issuer's answer describes, or None: inactive, expired, from another issuer or for another
        audience, or any claim of the wrong type or out of range (logged; a bad answer never becomes a 500)."""
        if claims.get("active") is not True:
            return None
        problem = claim_problem(claims, now)
        if problem is None:
            problem = self._foreign(claims)
        if problem is not None:
            log.info("refused a token: %s", problem)
            return None
        scope, exp = claims.get("scope"), claims.get("exp")
        return AccessToken(token=token, client_id=claims.get("client_id") or "",
                           scopes=scope.split() if scope is not None else [],
                           expires_at=int(exp) if exp is not None else None, subject=claims.get("sub"))

    def _foreign(self, claims: dict[str, Any]) -> str | None:
        """Why the (well-typed) claims name another issuer or audience, None if they do not."""
        iss = claims.get("iss")
        if iss is not None and iss.rstrip("/") != self.issuer:
            return f"its issuer is {_shown(iss)}, not {self.issuer}"
        if self.audience is not None:
            aud = claims.get("aud")
            if self.audience not in (aud if isinstance(aud, list) else [aud]):
                return f"its audience is {_shown(aud)}, not {self.audience!r}"
        return None


LATEST_EXP = 253_402_300_800
"""10000-01-01T00:00:00Z in epoch seconds: an ``exp`` at or past it is not a real expiry (nor a datetime)."""
TEXT_CLAIMS = ("iss", "sub", "client_id", "scope")


def _shown(value: Any) -> str:
    """A claim's value for the log, cut short (an issuer's answer may hold anything)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def claim_problem(claims: dict[str, Any], now: float) -> str | None:
    """What is wrong with an active token's claims (RFC 7662), None if nothing. A claim that is absent or
    ``null`` is not there (issuers write unset members either way), except ``exp``: a present expiry that
    cannot be read refuses the token rather than letting it live for ever; an absent one is allowed."""
    if "exp" in claims:
        exp = claims["exp"]
        if isinstance(exp, bool) or not isinstance(exp, (int, float)):
            return f"its exp is {_shown(exp)}, not a number of seconds"
        if not 0 < exp < LATEST_EXP:  # also NaN and +-Infinity (Python's json reads them)
            return f"its exp {_shown(exp)} is not a time between 1970 and 9999"
        if exp <= now:
            return "it has expired"
    for name in TEXT_CLAIMS:
        value = claims.get(name)
        if value is not None and not isinstance(value, str):
            return f"its {name} is {_shown(value)}, not a string"
    aud = claims.get("aud")
    if aud is not None and not isinstance(aud, str) and not (
            isinstance(aud, list) and all(isinstance(a, str) for a in aud)):
        return f"its aud is {_shown(aud)}, not a string or a list of strings"
    return None
