"""Settings files: the ``[table]`` of a TOML (or JSON) file, read with plain-words errors.

Its own small module (not ``memtools.builder.settings``) because the build (``[build]``) and the
search options (``[search]``, ``memtools.rerank``) both read it, and search must not import the
builder."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from memtools.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # a dependency on Python 3.10 (pyproject.toml)
    import tomli as tomllib


def load_config_file(path: str | os.PathLike, table: str | None = "build") -> dict[str, Any]:
    """The ``[table]`` of a TOML (or JSON) settings file; for ``build``, a file without tables is the
    build table itself; ``None``: the whole file (its top-level keys, such as ``retention_days``)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {p}: {exc}") from exc
    try:
        if p.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            data = tomllib.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{p} is not valid {'JSON' if p.suffix.lower() == '.json' else 'TOML'}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{p} must hold a table of settings")
    if table is None:
        return data
    section = data.get(table, data if table == "build" else {})
    if not isinstance(section, dict):
        raise ConfigError(f"[{table}] in {p} must be a table")
    return section
