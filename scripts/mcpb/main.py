"""Entry point of the memtools Claude Desktop extension (.mcpb): the memtools MCP server over stdio.

Runs the installed memtools when this Python has it, else the released package through uvx
(https://docs.astral.sh/uv/), so the extension works on a machine with only uv installed.
Options the user left empty in the extension's settings are dropped; a folder for videos turns
on add_video (and with it --allow-writes).
"""

from __future__ import annotations

import os
import shutil
import sys

VERSION = "@VERSION@"


def arguments(argv: list[str]) -> list[str]:
    """``argv`` without options whose value was left empty; ``--allow-root DIR`` brings ``--allow-writes``."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        item = argv[i]
        if item.startswith("--") and i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            if argv[i + 1].strip():
                out += [item, argv[i + 1]]
            i += 2
            continue
        if item.strip():
            out.append(item)
        i += 1
    if "--allow-root" in out and "--allow-writes" not in out:
        out.append("--allow-writes")
    return out


def main() -> int:
    args = arguments(sys.argv[1:])
    try:
        from memtools.mcp import main as serve
    except ImportError:
        uvx = shutil.which("uvx")
        if uvx is None:
            print("memtools extension: memtools is not installed for this Python and uvx was not found; install "
                  "uv (https://docs.astral.sh/uv/getting-started/installation/) or `pip install memtools`",
                  file=sys.stderr)
            return 1
        os.execv(uvx, [uvx, "--from", f"memtools=={VERSION}", "memtools-mcp", *args])
    return serve(args)


if __name__ == "__main__":
    sys.exit(main())
