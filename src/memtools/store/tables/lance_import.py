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
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from typing import Any

_CLIENT = "lance_namespace_urllib3_client"
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
    """``import lancedb``, with the REST client's package ``__init__`` deferred (see above)."""
    with _lock:
        _defer_package_init(_CLIENT)
    return importlib.import_module("lancedb")
