"""``--reranker SPEC``: the one flag ``memtools tool``, ``serve``, ``ask`` and ``info`` share.

The flag is a spelling of ``$MEMTOOLS_RERANKER``: the spec is checked when the command line is
parsed (a bad one exits 2 before any memory is opened) and set in this process's environment,
where every ``MemoryTools`` the command builds finds it (the MCP server's and the ORA loop's
included). Nothing is built or imported for it until a search runs.

    --reranker http:MODEL@URL        a /rerank server (Cohere, Jina, Infinity, vLLM)
    --reranker tei:URL               text-embeddings-inference
    --reranker cross-encoder:PATH    a local cross-encoder
    --reranker llm:openai:MODEL[@URL] listwise, through a chat model
    --reranker none                  no reranking (also when the variable is unset)
"""

from __future__ import annotations

import argparse
import os
from typing import Any

RERANKER_ENV = "MEMTOOLS_RERANKER"
RERANKED_TOOLS = frozenset({"search_nodes", "search_graph", "search_entities"})


class _UseReranker(argparse.Action):
    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from memtools.errors import ConfigError
        from memtools.rerank import check_reranker_spec

        try:
            spec = check_reranker_spec(str(values))
        except ConfigError as exc:
            parser.error(f"{option_string}: {exc}")
        os.environ[RERANKER_ENV] = spec
        setattr(namespace, self.dest, spec)


class _SearchSettings(argparse.Action):
    """``--config FILE``: the ``[search]`` table of a memtools.toml (``reranker = "SPEC"``). The file
    names the reranker only where neither ``--reranker`` nor ``$MEMTOOLS_RERANKER`` does, as a build's
    ``[build]`` table gives way to flags and the environment."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from memtools.config_file import load_config_file
        from memtools.errors import ConfigError
        from memtools.rerank import check_reranker_spec

        try:
            table = load_config_file(str(values), "search")
            unknown = sorted(set(table) - SEARCH_SETTINGS)
            if unknown:
                raise ConfigError(f"unknown search setting(s) {', '.join(unknown)} in [search]; valid: "
                                  f"{', '.join(sorted(SEARCH_SETTINGS))}")
            spec = table.get("reranker")
            if spec is not None and not isinstance(spec, str):
                raise ConfigError(f"[search] reranker must be a string such as \"http:MODEL@URL\", not {spec!r}")
            checked = check_reranker_spec(spec) if spec is not None else None
        except ConfigError as exc:
            parser.error(f"{option_string} {values}: {exc}")
        if checked is not None and getattr(namespace, "reranker", None) is None and not os.environ.get(RERANKER_ENV):
            os.environ[RERANKER_ENV] = checked
        setattr(namespace, self.dest, values)


SEARCH_SETTINGS = frozenset({"reranker"})


def add_reranker_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reranker", metavar="SPEC", default=None, action=_UseReranker,
                   help="rerank search results (search_nodes, search_graph, search_entities): http:MODEL@URL "
                        "(Cohere/Jina/Infinity/vLLM /rerank, key in $MEMTOOLS_RERANKER_API_KEY), tei:URL, "
                        "cross-encoder:PATH, llm:openai:MODEL[@URL], or none; default: $MEMTOOLS_RERANKER, else "
                        "the --config file's [search] reranker, else none")
    p.add_argument("--config", metavar="FILE", default=None, action=_SearchSettings, dest="search_config",
                   help='settings file (memtools.toml): its [search] table may name the reranker, reranker = "SPEC"')


def describe_reranker() -> str:
    """What ``memtools info`` says about reranking: the reranker's name and where it was named."""
    spec = os.environ.get(RERANKER_ENV, "").strip()
    if not spec or spec == "none":
        return f"no reranker (--reranker SPEC or ${RERANKER_ENV} adds one)"
    from memtools.errors import ConfigError
    from memtools.rerank import reranker_name

    try:
        return f"reranker {reranker_name(spec)} (${RERANKER_ENV})"
    except ConfigError as exc:
        return f"reranker: ${RERANKER_ENV} is not usable: {exc}"
