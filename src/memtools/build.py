"""Deprecated alias: the pipeline that turns videos into memories is ``memtools.builder`` now.

``memtools.build`` and every ``memtools.build.<module>`` still import, as the same module objects
as their ``memtools.builder`` names, with a ``DeprecationWarning``; the alias goes away in 0.3.
(The package was renamed because GitHub's Python ``.gitignore`` template, and tools that map a
source tree, treat every ``build/`` folder as build output.)"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from types import ModuleType

_OLD, _NEW = "memtools.build", "memtools.builder"

warnings.warn(f"{_OLD} is deprecated and goes away in memtools 0.3: import {_NEW} instead",
              DeprecationWarning, stacklevel=2)


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``memtools.build.<name>`` as the already importable ``memtools.builder.<name>``."""

    def find_spec(self, fullname: str, path: object = None, target: object = None):
        if fullname.startswith(_OLD + "."):
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec) -> ModuleType:
        return importlib.import_module(_NEW + spec.name[len(_OLD):])

    def exec_module(self, module: ModuleType) -> None:
        pass


if not any(isinstance(finder, _Alias) for finder in sys.meta_path):
    sys.meta_path.insert(0, _Alias())
sys.modules[__name__] = importlib.import_module(_NEW)
