"""A script of ``benchmarks/`` imported by a test: the scripts import each other by name
(``from import_bounded import write_file``), so their folder is on ``sys.path`` while the test uses them."""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@contextlib.contextmanager
def benchmarks(*names: str) -> Iterator[tuple[ModuleType, ...]]:
    """The named scripts as modules, with ``benchmarks/`` on ``sys.path`` until the block ends."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield tuple(importlib.import_module(name) for name in names)
    finally:
        sys.path.remove(str(BENCHMARKS))
