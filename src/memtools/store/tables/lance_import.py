"""``import lancedb`` without paying for the REST namespace client it never uses here.

``lancedb.db`` imports ``lance_namespace``, which imports models from
``lance_namespace_urllib3_client``, a generated REST client whose package ``__init__`` also
imports every API class (~370 ``validate_call`` methods): about 1 s of a cold ``memtools tool``
search on a 2-core machine, for a client that only a ``lancedb.connect_namespace("rest", ...)``
uses. memtools opens local folders and object storage, never a REST namespace.

``import_lancedb()`` registers that package without running its ``__init__``: its submodules
(the models ``lance_namespace`` needs) import as usual through the package path, and the first
access to any name the ``__init__`` would have defined runs the real ``__init__`` then (PEP 562
``__getattr__``), so code that does use the REST client still gets it. If the package is
already imported, or is not where it is expected, nothing is changed.

It also sets lance's own log to errors (``LANCE_LOG=error``) unless the user chose a level: lance's
native module reads that variable once, when it loads, and otherwise prints a warning for each
product-quantizer sub-vector whenever a fold trains a vector index (24 a build at 384 dimensions,
135-165 lines in a 50 MB caption import, across the progress bar), because memtools trains the
codebook on fewer rows a centroid than lance would (``lance_fold.PQ_SAMPLE_RATE``, on purpose: the
ninth round of docs/scaling.md), and an INFO line from pylance's Python logger (which reads the same
variable) even without ``--verbose``; lancedb's own copy of lance (which builds the index where
pylance is not installed) reads ``LANCEDB_LOG``, set the same way. ``LANCE_LOG=warn`` (or
``LANCEDB_LOG=warn``) brings them back.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
import types
from typing import Any

_CLIENT = "lance_namespace_urllib3_client"
LANCE_LOG = "error"  # lance's log level unless the user set LANCE_LOG (see above)
_lock = threading.Lock()


def _defer_package_init(name: str) -> None:
    if name in sys.modules:
        return
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        return
    package = types.ModuleType(name)
    package.__spec__ = spec
    package.__path__ = list(spec.submodule_search_locations)
    package.__file__ = spec.origin
    package.__package__ = name
    package.__loader__ = spec.loader
    loader = spec.loader
    loaded = False

    def __getattr__(attribute: str) -> Any:  # noqa: N807 - the module-level hook of PEP 562
        nonlocal loaded
        if attribute.startswith("__") or loaded:
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}")
        with _lock:
            if not loaded:
                loaded = True
                del package.__dict__["__getattr__"]
                loader.exec_module(package)
        return getattr(package, attribute)

    package.__dict__["__getattr__"] = __getattr__
    sys.modules[name] = package


def defer_package_init(name: str) -> None:
    """Register package ``name`` without running its ``__init__`` (as above), if it is not imported yet.
    ``memtools.mcp`` does this for the ``mcp`` SDK, whose ``__init__`` also imports its client."""
    with _lock:
        _defer_package_init(name)


def import_lancedb() -> types.ModuleType:
    """``import lancedb``, with the REST client's package ``__init__`` deferred and lance's log at
    errors unless the user chose a level (see above)."""
    os.environ.setdefault("LANCE_LOG", LANCE_LOG)  # pylance's native module and its Python logger
    os.environ.setdefault("LANCEDB_LOG", LANCE_LOG)  # lancedb's (the vector index without pylance)
    with _lock:
        _defer_package_init(_CLIENT)
    return importlib.import_module("lancedb")
