"""Who is calling: the front end and person behind a request, and whether they may change the memory.

One ``contextvars`` value, ``CALLER``, read by the write tools (``memtools.changes.tool_specs``) and by
the change log (``memtools.changes``), set by each front end around the work it does for someone:

- Python (``memtools.changes`` called directly): the default, ``Caller("python", <user>, may_write=True)``;
  the owner of the folder may always write;
- the CLI: ``Caller("cli", <user>, may_write=True)``;
- the MCP server: ``Caller("mcp", <who>, may_write=...)``, decided per request by
  ``memtools.mcp.permission`` from ``--allow-writes`` and, over HTTP, the bearer token's scopes.

``acting_as(caller)`` sets it for a block (and for the worker thread a tool runs on).
"""

from __future__ import annotations

import contextlib
import getpass
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from memtools.errors import ToolError
from memtools.tools import messages as msg


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no user name in this environment (a container without one)
        return "unknown"


@dataclass(frozen=True)
class Caller:
    """``front_end``: ``python``, ``cli`` or ``mcp``; ``who``: a user, token subject or client; ``may_write``;
    ``scopes``: what an HTTP request's token was granted (``None``: not limited by a token; read by a server of many
    memories, ``memtools.mcp.many``, where ``memtools:read:NAME`` names one)."""

    front_end: str
    who: str
    may_write: bool = False
    scopes: frozenset[str] | None = None


CALLER: ContextVar[Caller | None] = ContextVar("memtools_caller", default=None)


def current() -> Caller:
    """The caller of the work running now (Python's owner when no front end said otherwise)."""
    return CALLER.get() or Caller("python", _user(), may_write=True)


def owner(front_end: str) -> Caller:
    """The owner of the folder through ``front_end`` (the CLI, Python): may write."""
    return Caller(front_end, _user(), may_write=True)


@contextlib.contextmanager
def acting_as(caller: Caller) -> Iterator[Caller]:
    token = CALLER.set(caller)
    try:
        yield caller
    finally:
        CALLER.reset(token)


class WriteForbidden(ToolError):
    """A write by a caller who may only read."""

    kind = "forbidden"


def require_write() -> Caller:
    """The current caller, if it may write; else ``WriteForbidden`` in plain words."""
    caller = current()
    if not caller.may_write:
        raise WriteForbidden(msg.WRITE_FORBIDDEN)
    return caller


__all__ = ["CALLER", "Caller", "WriteForbidden", "acting_as", "current", "owner", "require_write"]
