"""``--tokens-file FILE``: static bearer tokens, each with the memories it may read or write (``memtools serve
--memories DIR``).

The file is a JSON object; each key names one token without holding it, each value lists its scopes::

    {
      "ALICE_TOKEN": ["memtools:read:kitchen", "memtools:write:kitchen"],
      "BOB_TOKEN": ["memtools:read:garden"],
      "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae": ["memtools:read"]
    }

- a key is the name of an environment variable holding the token (read at start; at least
  ``MIN_TOKEN_CHARS`` characters), or ``sha256:`` and the hex SHA-256 of the token (so the file
  can be shared without the secret: ``printf %s "$TOKEN" | sha256sum``). Tokens never go on
  the command line.
- scopes: ``memtools:read:NAME`` reads the memory NAME (a subfolder of ``--memories``),
  ``memtools:write:NAME`` reads and writes it (with ``--allow-writes``), ``memtools:read`` /
  ``memtools:write`` every memory.
- the request's caller (the change log's *who*, ``reads.jsonl``'s *caller*) is the key: the variable's name,
  or ``sha256:`` and the first 12 hex digits.

The file is read once, at start: restart the server to change it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
from pathlib import Path

from memtools.errors import ConfigError
from memtools.mcp.auth import read_token
from memtools.mcp.permission import READ_SCOPE, WRITE_SCOPE

MEMORY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""A memory's name: its folder's name under ``--memories`` (other folders are not served)."""
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
HASH_KEY = re.compile(r"sha256:([0-9a-fA-F]{64})")
EXAMPLE = '{"ALICE_TOKEN": ["memtools:read:kitchen"], "BOB_TOKEN": ["memtools:write:garden"]}'


def scope_problem(scope: object) -> str | None:
    """Why ``scope`` is not one a token of the file may hold, or ``None``."""
    if not isinstance(scope, str):
        return f"{json.dumps(scope)} is not a string"
    if scope in (READ_SCOPE, WRITE_SCOPE):
        return None
    kind, _, name = scope.rpartition(":")
    if kind in (READ_SCOPE, WRITE_SCOPE) and MEMORY_NAME.fullmatch(name):
        return None
    return (f"{json.dumps(scope)} is not a scope: use memtools:read:NAME or memtools:write:NAME (NAME: a memory "
            "folder's name), or memtools:read / memtools:write for every memory")


class TokensFile:
    """The tokens of a ``--tokens-file`` (see the module docstring); the guard's authenticator API
    (``grant``, ``check``, ``who``, ``challenge``)."""

    def __init__(self, path: str | os.PathLike) -> None:
        where = f"--tokens-file {path}"
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"{where}: no such file; write a JSON object of tokens and scopes, e.g. {EXAMPLE}") \
                from None
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{where}: not a readable JSON file ({exc}); e.g. {EXAMPLE}") from None
        if not isinstance(data, dict) or not data:
            raise ConfigError(f"{where}: give a JSON object naming at least one token, e.g. {EXAMPLE}")
        self._secrets: list[tuple[bytes, str, frozenset[str]]] = []  # (token, who, scopes)
        self._hashes: list[tuple[bytes, str, frozenset[str]]] = []  # (sha-256 hex, who, scopes)
        for key, scopes in data.items():
            if not isinstance(scopes, list) or not scopes:
                raise ConfigError(f"{where}: {key!r} must list its scopes, e.g. [\"memtools:read:kitchen\"]")
            for scope in scopes:
                problem = scope_problem(scope)
                if problem:
                    raise ConfigError(f"{where}: {key!r}: {problem}")
            granted = frozenset(scopes)
            if (found := HASH_KEY.fullmatch(key)) is not None:
                digest = found.group(1).lower()
                self._hashes.append((digest.encode(), f"sha256:{digest[:12]}", granted))
            elif ENV_NAME.fullmatch(key):
                self._secrets.append((read_token(where, key), key, granted))
            else:
                raise ConfigError(f"{where}: {key!r} is neither an environment variable's name nor sha256:<64 hex "
                                  "digits>; tokens never go in the file itself")
        digests = [hashlib.sha256(t).hexdigest().encode() for t, _, _ in self._secrets] + [d for d, _, _ in
                                                                                         self._hashes]
        if len(set(digests)) < len(digests):
            raise ConfigError(f"{where}: two entries name the same token; give each caller a token of its own")


    def _match(self, token: str) -> tuple[str, frozenset[str]] | None:
        given = token.encode()
        digest = hashlib.sha256(given).hexdigest().encode()
        found = None
        for secret, who, scopes in self._secrets:  # every entry is compared: the time says nothing of which
            if hmac.compare_digest(given, secret):
                found = (who, scopes)
        for expected, who, scopes in self._hashes:
            if hmac.compare_digest(digest, expected):
                found = (who, scopes)
        return found

    async def grant(self, token: str) -> frozenset[str] | None:
        """The scopes ``token`` grants (``None``: not a token of the file)."""
        found = self._match(token)
        return None if found is None else found[1]

    async def check(self, token: str) -> bool:
        return self._match(token) is not None

    def who(self, token: str) -> str:
        found = self._match(token)
        return found[0] if found is not None else "token holder"

    def challenge(self, base_url: str, error: str | None) -> str:  # noqa: ARG002 - same API as the verifier
        return 'Bearer realm="memtools"' + (f', error="{error}"' if error else "")


__all__ = ["MEMORY_NAME", "TokensFile", "scope_problem"]
