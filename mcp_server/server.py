"""Run the memtools MCP server from a checkout: ``python mcp_server/server.py --memory DIR [--http ...]``.

A thin entry for client configs that point at a file; all logic lives in ``memtools.mcp``
(installed, ``memtools-mcp`` does the same). Without an installed memtools, ``src/`` of this
checkout is used.
"""

import sys
from pathlib import Path

try:
    from memtools.mcp import main
except ModuleNotFoundError as exc:  # running from a checkout that was not pip-installed
    if exc.name != "memtools":
        raise
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from memtools.mcp import main

if __name__ == "__main__":
    sys.exit(main())
