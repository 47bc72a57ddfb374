"""Options and helpers several subcommands share."""

from __future__ import annotations

import argparse
from pathlib import Path

from memtools.store import Memory


def add_memory_arg(p: argparse.ArgumentParser, required: bool = True) -> None:
    p.add_argument("--memory", "-m", type=Path, required=required, metavar="DIR",
                   help="memory folder (created by import-captions or build)")


def add_embedder_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--embedder", default=None, metavar="SPEC",
                   help="embedder for a new memory: default (all-MiniLM-L6-v2), hf:MODEL, openai:MODEL, test:DIM")


def open_memory(path: Path) -> Memory:
    """Open an existing memory read-mostly with the embedder it was built with."""
    return Memory.open(path)


def create_memory(path: Path, embedder_spec: str | None) -> Memory:
    """Open a memory for writing, creating it with the chosen embedder when it does not exist."""
    from memtools.embed import embedder_from_spec
    from memtools.store.manifest import MANIFEST

    if (path / MANIFEST).exists() and embedder_spec is None:
        return Memory.open(path)
    return Memory.create(path, embedder_from_spec(embedder_spec or "default"))
