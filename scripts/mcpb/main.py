"""Entry point of the memtools Claude Desktop extension (.mcpb): the memtools MCP server over stdio.

Runs the installed memtools when this Python has it, else the memtools wheel inside the bundle through
uvx (https://docs.astral.sh/uv/), so the extension works on a machine with only uv installed (the
wheel's dependencies come from the package index on the first start).
Options the user left empty in the extension's settings are dropped; a folder for videos turns
on add_video (and with it --allow-writes). No setting stops the server: without a model add_video
answers what to set; a budget that is not a positive number, or a video folder that is gone, leaves
the memory read-only (said on stderr, in Claude Desktop's log of the extension).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

VERSION = "@VERSION@"
WHEEL = "@WHEEL@"  # the wheel's file name, next to this file


FLAGS = frozenset({"--allow-writes", "--allow-urls", "--verbose", "-v", "--version", "--help"})
"""The options that take no value; every other ``--option`` of the manifest's args is followed by one."""


def _given(value: str) -> bool:
    """Not left empty (nor left as the manifest's placeholder by a host that had no value for it)."""
    value = value.strip()
    return bool(value) and not (value.startswith("${") and value.endswith("}"))


def arguments(argv: list[str]) -> list[str]:
    """``argv`` without the options whose value was left empty or absent; ``--allow-root DIR`` brings
    ``--allow-writes``."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        item = argv[i]
        if item.startswith("--") and item not in FLAGS and "=" not in item:
            value = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") else None
            if value is not None and _given(value):
                out += [item, value]
            i += 1 if value is None else 2
            continue
        if _given(item):
            out.append(item)
        i += 1
    unusable = _unusable_write_settings(out)
    if unusable:
        print(f"memtools extension: {unusable}; the memory is served read-only (no add_video) until it is fixed "
              "in the extension's settings", file=sys.stderr)
        out = _without(out, "--allow-root", "--max-cost", "--vlm")
    if "--allow-root" in out and "--allow-writes" not in out:
        out.append("--allow-writes")
    return out


def _value(args: list[str], option: str) -> str | None:
    return args[args.index(option) + 1] if option in args and args.index(option) + 1 < len(args) else None


def _without(args: list[str], *options: str) -> list[str]:
    out: list[str] = []
    skip = False
    for item in args:
        if skip:
            skip = False
        elif item in options:
            skip = True
        else:
            out.append(item)
    return out


def _unusable_write_settings(args: list[str]) -> str:
    """Why the video settings cannot be used as given ("" when they can): the server would refuse to start."""
    folder = _value(args, "--allow-root")
    if folder is not None and not Path(folder).expanduser().is_dir():
        return f"the video folder {folder!r} does not exist"
    budget = _value(args, "--max-cost")
    if folder is not None and budget is not None:
        try:
            positive = float(budget) > 0
        except ValueError:
            positive = False
        if not positive:
            return f"'Most dollars one added video may cost' is {budget!r}, not a positive number of dollars"
    return ""


def main() -> int:
    args = arguments(sys.argv[1:])
    try:
        from memtools.mcp import main as serve
    except ImportError:
        uvx = shutil.which("uvx")
        wheel = Path(__file__).resolve().parent / WHEEL
        if uvx is None:
            print("memtools extension: memtools is not installed for this Python and uvx was not found; install "
                  "uv (https://docs.astral.sh/uv/getting-started/installation/), or install memtools for this "
                  f"Python: pip install {wheel}", file=sys.stderr)
            return 1
        os.execv(uvx, [uvx, "--from", str(wheel), "memtools-mcp", *args])
    return serve(args)


if __name__ == "__main__":
    sys.exit(main())
