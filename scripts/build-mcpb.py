#!/usr/bin/env python3
"""Build the Claude Desktop extension bundle: dist/memtools-<version>.mcpb (a zip of manifest.json, pyproject.toml,
the entry and memtools' wheel).

    python scripts/build-mcpb.py [--out DIR] [--wheel dist/memtools-<version>-py3-none-any.whl]

The manifest follows the MCPB manifest spec 0.4 with the ``uv`` server type: the host installs the dependencies
the bundle's pyproject.toml names (memtools, from the wheel inside the bundle, so this works before memtools is on
the package index; its own dependencies from the index on the first start) with uv, and runs
``uv run --directory ${__dirname} server/main.py --memory ...`` (the manifest's mcp_config). No Python of the user's
is needed. Claude Desktop asks for the user_config values at install (the memory folder; optionally a folder of
videos add_video may read, a model and its key); every optional setting may be left empty: the server starts,
and without a model add_video says what to set. The entry (scripts/mcpb/main.py) runs memtools' server, or, started
by a plain Python without memtools, the wheel through ``uvx``.
The wheel is ``--wheel``'s, else built with pip (``pip wheel --no-deps``); the rest is the standard library.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def project() -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - 3.10 has tomli as a dependency of memtools
        import tomli as tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def memtools_version() -> str:
    """The version pyproject.toml takes from ``src/memtools/version.py`` (its one place), read without importing."""
    text = (ROOT / "src" / "memtools" / "version.py").read_text(encoding="utf-8")
    found = re.search(r'^__version__ = "([^"]+)"', text, re.M)
    if found is None:
        raise SystemExit("src/memtools/version.py names no __version__")
    return found.group(1)


UV_RUN = ["run", "--quiet", "--directory", "${__dirname}"]
"""What the manifest's command line starts with: ``uv run`` in the unpacked bundle, whose pyproject.toml says what
to install."""


def manifest(version: str, description: str) -> dict:
    return {
        "manifest_version": "0.4",
        "name": "memtools",
        "display_name": "memtools video memory",
        "version": version,
        "description": "Long-term memory of your videos: Claude navigates, searches and inspects what was seen.",
        "long_description": description,
        "author": {"name": "memtools maintainers"},
        "license": "Apache-2.0",
        "keywords": ["video", "memory", "graph", "search"],
        "server": {
            "type": "uv",
            "entry_point": "server/main.py",
            "mcp_config": {
                "command": "uv",
                "args": [*UV_RUN, "server/main.py", "--memory", "${user_config.memory}",
                         "--allow-root", "${user_config.video_folder}", "--vlm", "${user_config.vlm}",
                         "--max-cost", "${user_config.max_cost}"],
                "env": {"MEMTOOLS_API_KEY": "${user_config.api_key}", "OPENAI_API_KEY": "${user_config.api_key}"},
            },
        },
        "tools_generated": True,
        "prompts_generated": True,
        "user_config": {
            "memory": {"type": "directory", "title": "Memory folder", "required": True,
                       "description": "The memory folder made by `memtools build` or `memtools import-captions`."},
            "video_folder": {"type": "directory", "title": "Videos Claude may add", "required": False, "default": "",
                             "description": "Optional: a folder whose videos Claude may add to the memory "
                                            "(add_video). Leave empty to keep the memory read-only."},
            "vlm": {"type": "string", "title": "Vision model for adding videos", "required": False, "default": "",
                    "description": "With a video folder: the model builds use, e.g. openai:gpt-4o-mini. Left "
                                   "empty, the memory is served and add_video says what to set."},
            "api_key": {"type": "string", "title": "Model API key", "required": False, "sensitive": True,
                        "default": "", "description": "The key of that model (OpenAI-compatible)."},
            "max_cost": {"type": "string", "title": "Most dollars one added video may cost", "required": False,
                         "default": "", "description": "Optional. Models that genai-prices lists are priced; "
                                                       "others need a prices.toml in the memory folder."},
        },
        "compatibility": {"platforms": ["darwin", "win32", "linux"], "runtimes": {"python": ">=3.10"}},
    }


def bundle_project(version: str, wheel: str) -> str:
    """The bundle's pyproject.toml: not a package itself (uv installs only its dependencies), memtools from the
    wheel beside the entry."""
    return (f'[project]\nname = "memtools-claude-extension"\nversion = "{version}"\nrequires-python = ">=3.10"\n'
            f'dependencies = ["memtools=={version}"]\n\n[tool.uv]\npackage = false\n\n'
            f'[tool.uv.sources]\nmemtools = {{ path = "server/{wheel}" }}\n')


def wheel_file(given: Path | None, version: str, folder: Path) -> Path:
    """``given``, else a wheel of this checkout built into ``folder`` (no dependencies; setuptools from the
    running Python when it has it, else pip's isolated build)."""
    if given is not None:
        if not given.name.startswith(f"memtools-{version}-") or given.suffix != ".whl":
            raise SystemExit(f"--wheel {given}: not a wheel of memtools {version}")
        return given
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(folder), str(ROOT)]
    if importlib.util.find_spec("setuptools") is not None:  # the faster build, without an isolated environment
        command.insert(4, "--no-build-isolation")
    subprocess.run(command, check=True, stdout=sys.stderr)
    return next(folder.glob(f"memtools-{version}-*.whl"))


def build(out: Path, wheel: Path | None = None) -> Path:
    meta = project()
    version = memtools_version()
    out.mkdir(parents=True, exist_ok=True)
    bundle = out / f"memtools-{version}.mcpb"
    with tempfile.TemporaryDirectory() as scratch:
        built = wheel_file(wheel, version, Path(scratch))
        entry = (ROOT / "scripts" / "mcpb" / "main.py").read_text(encoding="utf-8")
        entry = entry.replace("@VERSION@", version).replace("@WHEEL@", built.name)
        with zipfile.ZipFile(bundle, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("manifest.json", json.dumps(manifest(version, meta["description"]), indent=2) + "\n")
            z.writestr("pyproject.toml", bundle_project(version, built.name))
            z.writestr("server/main.py", entry)
            z.write(built, f"server/{built.name}")
    return bundle


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="folder for the bundle (default dist/)")
    parser.add_argument("--wheel", type=Path, help="memtools' wheel to put in the bundle (default: build one)")
    args = parser.parse_args()
    print(build(args.out, args.wheel))
    return 0


if __name__ == "__main__":
    sys.exit(main())
