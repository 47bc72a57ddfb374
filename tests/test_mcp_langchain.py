"""A third-party client: langchain-mcp-adapters loads the tools from the stdio server and calls search_nodes.

langchain-mcp-adapters is written against mcp 1.x: 0.3.2 (the latest) pins ``mcp<2``, and
0.3.1 (what ``pip install memtools[dev]`` resolves next to mcp 2.3) fails to import
(``mcp.shared.context.RequestContext`` is gone). So the client runs in an interpreter where it
works: this one when the import succeeds, else ``$MEMTOOLS_MCP1_PYTHON``, a venv made with
``pip install langchain-mcp-adapters "mcp<2"``. The server always runs here, on mcp 2.x,
which is the realistic pairing: an app pinned to mcp 1.x calling our server over stdio.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mcp_support import mcp_command, shared_memory
from memtools.tools import TOOL_SPECS

pytestmark = pytest.mark.slow

CLIENT = """
import asyncio, json, sys
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools

async def main():
    client = MultiServerMCPClient({"memtools": {"command": sys.argv[1], "args": sys.argv[2:], "transport": "stdio"}})
    async with client.session("memtools") as session:  # one server process for every call
        tools = {t.name: t for t in await load_mcp_tools(session)}
        search = tools["search_nodes"]
        schema = search.args_schema if isinstance(search.args_schema, dict) else search.args_schema.model_json_schema()
        found = await search.ainvoke({"query": "the cook covers the burning pan with a lid", "top_k": 3})
        try:
            bad = str(await search.ainvoke({"query": "pan", "top_k": 500}))
        except Exception as exc:
            bad = f"{type(exc).__name__}: {exc}"
    print(json.dumps({"tools": sorted(tools), "schema": schema, "found": str(found), "bad": bad}))

asyncio.run(main())
"""


def client_python() -> str:
    try:
        import langchain_mcp_adapters.client  # noqa: F401
    except ImportError as exc:
        if os.environ.get("MEMTOOLS_MCP1_PYTHON"):
            return os.environ["MEMTOOLS_MCP1_PYTHON"]
        pytest.skip(f"langchain-mcp-adapters does not import next to mcp 2.x ({exc}); set MEMTOOLS_MCP1_PYTHON "
                    "to a python with `pip install langchain-mcp-adapters 'mcp<2'` to run this test")
    return sys.executable


def test_langchain_mcp_adapters_loads_and_calls_search_nodes(tmp_path_factory):
    python = client_python()
    command, args = mcp_command(shared_memory(tmp_path_factory))
    done = subprocess.run([python, "-c", CLIENT, command, *args], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["tools"] == sorted(TOOL_SPECS)
    assert out["schema"]["properties"]["top_k"]["maximum"] == 50 and out["schema"]["required"] == ["query"]
    assert "kitchen/macro_0002" in out["found"] and "match(es)" in out["found"]
    assert "less than or equal to 50" in out["bad"]
