"""The graph engines memtools can run on, and how a process loads one.

Both run the same Cypher through ``KuzuGraph``; they differ in their driver module, their file
and whether readers may stay open beside a writer. ``kuzu`` and ``ladybug`` cannot be imported
in one process (both register the same native types), so a driver is imported only when a
memory that uses it opens its graph, and a process that has one refuses the other.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from memtools.errors import ConfigError
from memtools.store.base import GraphStore

DEFAULT_GRAPH_ENGINE = "kuzu"


@dataclass(frozen=True)
class CypherEngine:
    """A graph engine with kuzu's Python API (kuzu itself, or a fork of it)."""

    name: str
    module: str
    file_name: str
    readers_beside_writer: bool
    install: str

    def driver(self) -> ModuleType:
        others = [e.module for e in GRAPH_ENGINES.values() if e.module != self.module and e.module in sys.modules]
        if others:
            raise ConfigError(
                f"this process already uses the {others[0]} graph engine, and {self.module} cannot be loaded beside "
                f"it (both register the same native types); open memories of the {self.name} engine in another "
                f"process (e.g. run the command separately), or migrate one memory: memtools migrate --engine ...")
        try:
            return importlib.import_module(self.module)
        except ImportError as exc:
            raise ConfigError(f"the {self.name} graph engine is not installed: {self.install}") from exc

    def open(self, path: Path, *, read_only: bool, buffer_pool_mb: int = 256) -> GraphStore:
        from memtools.store.graph.cypher import KuzuGraph

        return KuzuGraph(path, read_only=read_only, buffer_pool_mb=buffer_pool_mb, driver=self.driver())


GRAPH_ENGINES: dict[str, CypherEngine] = {
    "kuzu": CypherEngine("kuzu", "kuzu", "graph.kuzu", readers_beside_writer=False,
                         install="pip install kuzu==0.11.3 (memtools depends on it)"),
    "ladybug": CypherEngine("ladybug", "ladybug", "graph.lbug", readers_beside_writer=True,
                            install="pip install 'memtools[ladybug]'"),
}


def graph_engine(name: str | None) -> CypherEngine:
    """The graph engine called ``name`` (None: the default, kuzu)."""
    engine = GRAPH_ENGINES.get(name or DEFAULT_GRAPH_ENGINE)
    if engine is None:
        raise ConfigError(f"unknown graph engine {name!r}; choose one of {', '.join(GRAPH_ENGINES)}")
    return engine
