"""Start an unpacked memtools bundle (.mcpb) the way its manifest says and ask it one question over MCP (stdio).

    python scripts/mcpb/check_start.py UNPACKED_DIR MEMORY_DIR UV

scripts/check-release.sh runs it on the release's bundle: the manifest's command line (``uv run --directory
${__dirname} server/main.py --memory ...``, the optional settings left empty as Claude Desktop leaves them) with
the given uv, which installs memtools from the bundled wheel and its dependencies from the package index. Exits
non-zero, saying why, unless the server lists its tools and answers a search on the README's sample memory. Needs
the ``mcp`` package (memtools' dependency) in the running Python; not part of the bundle.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def command_line(folder: Path, memory: str) -> tuple[list[str], dict[str, str]]:
    """The manifest's args and env as a host fills them: the memory folder given, every other setting empty."""
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    config = {key: "" for key in manifest["user_config"]} | {"memory": memory}

    def fill(value: str) -> str:
        value = value.replace("${__dirname}", str(folder))
        for key, given in config.items():
            value = value.replace("${user_config." + key + "}", given)
        return value

    mcp = manifest["server"]["mcp_config"]
    return [fill(a) for a in mcp["args"]], {k: fill(v) for k, v in mcp.get("env", {}).items()}


async def ask(folder: Path, memory: str, uv: str) -> str:
    args, env = command_line(folder, memory)
    params = StdioServerParameters(command=uv, args=args, env={**os.environ, **env})
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {t.name for t in (await session.list_tools()).tools}
        if "search_nodes" not in tools or "add_video" in tools:
            raise SystemExit(f"the bundle's server lists {sorted(tools)}: search_nodes and no add_video expected")
        found = await session.call_tool("search_nodes", {"query": "why did the boxes fall", "top_k": 1})
        text = found.content[0].text if found.content else ""
        if found.isError or "falls over" not in text:
            raise SystemExit(f"the bundle's server did not answer from the sample memory: {text[:300]!r}")
        return f"{len(tools)} tools, search_nodes answers"


def main() -> int:
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    print(asyncio.run(ask(Path(sys.argv[1]).resolve(), sys.argv[2], sys.argv[3])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
