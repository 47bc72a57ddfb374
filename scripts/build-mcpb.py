#!/usr/bin/env python3
"""Build the Claude Desktop extension bundle: dist/memtools-<version>.mcpb (a zip of manifest.json + the entry).

    python scripts/build-mcpb.py [--out DIR]

The manifest follows the MCPB manifest spec (manifest_version 0.3: name, version, description,
author, server with type/entry_point/mcp_config, user_config). Claude Desktop asks for the
user_config values at install (the memory folder; optionally a folder of videos add_video may
read, a model and its key) and starts ``python ${__dirname}/server/main.py --memory ...``, which
runs the installed memtools or, without it, ``uvx --from memtools==<version> memtools-mcp``.
Only the standard library is used, so it runs anywhere the repository is checked out.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
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


def manifest(version: str, description: str) -> dict:
    return {
        "manifest_version": "0.3",
        "name": "memtools",
        "display_name": "memtools video memory",
        "version": version,
        "description": "Long-term memory of your videos: Claude navigates, searches and inspects what was seen.",
        "long_description": description,
        "author": {"name": "memtools maintainers"},
        "license": "Apache-2.0",
        "keywords": ["video", "memory", "graph", "search"],
        "server": {
            "type": "python",
            "entry_point": "server/main.py",
            "mcp_config": {
                "command": "python",
                "args": ["${__dirname}/server/main.py", "--memory", "${user_config.memory}",
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
                    "description": "With a video folder: the model builds use, e.g. openai:gpt-4o-mini."},
            "api_key": {"type": "string", "title": "Model API key", "required": False, "sensitive": True,
                        "default": "", "description": "The key of that model (OpenAI-compatible)."},
            "max_cost": {"type": "string", "title": "Most dollars one added video may cost", "required": False,
                         "default": "", "description": "Optional; needs a prices.toml in the memory folder."},
        },
        "compatibility": {"platforms": ["darwin", "win32", "linux"], "runtimes": {"python": ">=3.10"}},
    }


def build(out: Path) -> Path:
    meta = project()
    version = memtools_version()
    out.mkdir(parents=True, exist_ok=True)
    bundle = out / f"memtools-{version}.mcpb"
    entry = (ROOT / "scripts" / "mcpb" / "main.py").read_text(encoding="utf-8").replace("@VERSION@", version)
    with zipfile.ZipFile(bundle, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("manifest.json", json.dumps(manifest(version, meta["description"]), indent=2) + "\n")
        z.writestr("server/main.py", entry)
    return bundle


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="folder for the bundle (default dist/)")
    print(build(parser.parse_args().out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
