"""Deprecated alias: the MEMDREAMER importer lives in ``memtools.memdreamer`` (beside its exporter).

Its names still resolve here, with a ``DeprecationWarning``, until memtools 0.3. They are looked
up when first used, so ``memtools.importers`` never imports ``memtools.memdreamer`` (which builds
on the importers): no import circle between the two packages."""

from __future__ import annotations

import importlib
import warnings

_NAMES = ("FrameFile", "ImportReport", "MemdreamerImport", "MemdreamerVideo", "VideoReport", "export_memdreamer",
           "find_videos", "import_memdreamer", "read_memdreamer")


def __getattr__(name: str) -> object:
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"memtools.importers.memdreamer is deprecated and goes away in memtools 0.3: "
                  f"import {name} from memtools.memdreamer", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module("memtools.memdreamer"), name)
