"""Options and helpers several subcommands share."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from memtools.errors import ConfigError, MemoryNotFound
from memtools.options import DEFAULT_HOST as DEFAULT_HOST  # re-exported: the subcommands import them from here
from memtools.options import DEFAULT_PORT as DEFAULT_PORT
from memtools.options import MEMORY_ENV as MEMORY_ENV
from memtools.options import add_memory_arg as add_memory_arg
from memtools.options import add_serve_arguments as add_serve_arguments
from memtools.options import resolve_memory as resolve_memory
from memtools.store import Memory

SIGNED_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$|^-(inf|infinity|nan)$", re.IGNORECASE)
"""What argparse must read as a negative number rather than an option (``-5``, ``-1e3``, ``-inf``)."""


def accept_signed_numbers(p: argparse.ArgumentParser) -> None:
    """Let option values such as ``-5``, ``-1e3`` and ``-inf`` through as values, not as unknown options.

    argparse only treats ``-5``-like strings as values; this widens its (long-stable) matcher
    so the argument checks can say what is wrong with the number instead.
    """
    p._negative_number_matcher = SIGNED_NUMBER  # noqa: SLF001 - argparse has no public switch for this


def chosen_parser(root: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub)parser that read the command line: ``memtools``, ``memtools tool``, ``memtools tool NAME``."""
    parser = root
    while True:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]  # noqa: SLF001
        name = getattr(args, subs[0].dest, None) if subs else None
        if name not in (subs[0].choices if subs else {}):
            return parser
        parser = subs[0].choices[name]


def add_embedder_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--embedder", default=None, metavar="SPEC",
                   help="embedder for a new memory: default (all-MiniLM-L6-v2), hf:MODEL, openai:MODEL, test:DIM")
    p.add_argument("--image-embedder", default=None, metavar="SPEC",
                   help="embed keyframes for search_frames (visual search): hf:CLIP_OR_SIGLIP (hub id or folder), "
                        "openai:MODEL (multimodal /embeddings at --image-base-url), test; default: none")
    p.add_argument("--image-base-url", default=None, metavar="URL",
                   help="OpenAI-compatible server of an openai: image embedder")


def open_memory(path: Path, *, recover: bool = True) -> Memory:
    """Open an existing memory read-mostly with the embedder it was built with (finishing a write a
    killed process left, unless ``recover=False``: ``Memory.open``)."""
    if path.is_file():
        raise MemoryNotFound(f"{path} is a file, not a memory folder; pass the folder that holds memtools.json")
    return Memory.open(path, recover=recover)


def add_tables_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tables", metavar="URI", default=None,
                   help="for a new memory: keep its search tables on object storage (s3://BUCKET/PREFIX, gs://, "
                        "az://; credentials from AWS_* / GOOGLE_* / AZURE_* variables)")
    p.add_argument("--graph-engine", choices=("kuzu", "ladybug"), default=None,
                   help="for a new memory: the graph database (default kuzu; ladybug lets readers work during "
                        "writes, pip install 'memtools[ladybug]')")


def create_memory(path: Path, embedder_spec: str | None, tables: str | None = None,
                  graph_engine: str | None = None) -> Memory:
    """Open a memory for writing, creating it with the chosen embedder when it does not exist."""
    from memtools.embed import embedder_from_spec
    from memtools.store.catalog.manifest import MANIFEST, read_manifest
    from memtools.store.tables.location import check_same_tables

    if path.exists() and not path.is_dir():
        raise ConfigError(f"{path} is a file, not a memory folder; pass a folder (a new one is created)")
    if (path / MANIFEST).exists() and embedder_spec is None:
        manifest = read_manifest(path)
        check_same_tables(path, manifest.tables, tables)
        if graph_engine is not None and graph_engine != manifest.graph_engine:
            raise ConfigError(f"memory at {path} uses the {manifest.graph_engine} graph engine, not {graph_engine}; "
                              f"leave out --graph-engine, or copy it over: memtools migrate --memory {path} "
                              f"--engine {graph_engine} --to NEW_FOLDER")
        return Memory.open(path)
    return Memory.create(path, embedder_from_spec(embedder_spec or "default"), tables=tables,
                         graph_engine=graph_engine)


def use_image_embedder(memory: Memory, args: argparse.Namespace) -> Memory:
    """``--image-embedder``: embed the keyframes of what this command writes, for ``search_frames``."""
    from memtools.embed import image_embedder_from_spec

    if getattr(args, "image_embedder", None) is not None:
        try:
            memory.use_image_embedder(image_embedder_from_spec(args.image_embedder, base_url=args.image_base_url))
        except BaseException:
            memory.close()
            raise
    return memory
