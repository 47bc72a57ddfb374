"""What a request may see and change on a server of many memories.

The HTTP guard puts the token's granted scopes on the request's ``Caller`` (``scopes``); stdio, and HTTP without
authentication, have none (``None``): every memory. With a token:

- ``memtools:read`` reads every memory, ``memtools:write`` reads and writes every memory;
- ``memtools:read:NAME`` reads the memory NAME, ``memtools:write:NAME`` reads and writes it;
- any other scope grants nothing here: a token without one of these sees no memory at all.

Writing also needs ``--allow-writes``.
"""

from __future__ import annotations

from memtools.mcp.permission import READ_SCOPE, WRITE_SCOPE, request_caller
from memtools.tools.caller import CALLER, Caller


def granted() -> frozenset[str] | None:
    """The scopes of the request being handled (``None``: not limited by a token)."""
    caller = CALLER.get()
    return caller.scopes if caller is not None and caller.front_end == "mcp" else None


def may_read(scopes: frozenset[str] | None, name: str) -> bool:
    return scopes is None or bool(scopes & {READ_SCOPE, WRITE_SCOPE, f"{READ_SCOPE}:{name}", f"{WRITE_SCOPE}:{name}"})


def may_write(scopes: frozenset[str] | None, name: str) -> bool:
    return scopes is None or bool(scopes & {WRITE_SCOPE, f"{WRITE_SCOPE}:{name}"})


def caller_for(name: str, allow_writes: bool) -> Caller:
    """The request's caller as the memory ``name`` sees it: may write there only if its scopes say so."""
    scopes = granted()
    who = request_caller(allow_writes).who
    return Caller("mcp", who, may_write=allow_writes and may_write(scopes, name), scopes=scopes)


__all__ = ["caller_for", "granted", "may_read", "may_write"]
