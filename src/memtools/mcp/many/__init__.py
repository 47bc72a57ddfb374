"""Many memories behind one MCP server: ``memtools serve --memories DIR`` (docs/mcp-server.md, "Many memories").

Design: one server whose every tool takes the memory as an argument (``memory``, a plain string), not one set of
prefixed tools per memory. The tool list then stays one catalogue long however many memories there are, names no
memory (a caller must not learn the others' names), and the guard and clients see the same tool names as with one
memory. A caller finds its memories with the ``list_memories`` tool, the ``memtools://memories`` resource or the
completion of ``memory``; every one of these, the resources (``memtools://NAME/videos/...``), the prompt and the
pages (``/m/NAME/``) shows only the memories the caller's token names, and a memory it may not see is refused with
the very words an unknown one gets.

- ``access``: what a request's scopes let it read and write (``memtools:read:NAME`` ...);
- ``registry``: the memory folders under DIR, each served by its own ``MemtoolsServer`` (its own writers' lock,
  change log, jobs and ``reads.jsonl``);
- ``server``: ``ManyServer``, the one MCP server that routes to them;
- ``pages``: the show pages of each memory under ``/m/NAME/``, and ``/`` listing the caller's memories;
- ``serving``: ``serve_many``, what ``memtools serve --memories DIR`` runs.
"""

from memtools.mcp.many.serving import build_many_server, serve_many

__all__ = ["build_many_server", "serve_many"]
