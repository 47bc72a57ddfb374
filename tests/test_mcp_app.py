"""The timeline MCP App (``memtools.mcp.app``) as the server offers it: tool links, the ``ui://`` resource, and
results that do not change for clients without the extension. On both SDK majors (``mcp_support.Client``)."""

from __future__ import annotations

import re

import pytest

from mcp_support import VALID_CALLS, Client, make_memory
from memtools.mcp import build_server
from memtools.mcp.app import APP_MIME, APP_URI, LINKED_TOOLS


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    return make_memory(tmp_path_factory.mktemp("app"))


def dump(model) -> dict:
    return getattr(model, "_model", model).model_dump(mode="json", by_alias=True, exclude_none=True)


async def test_the_tools_that_draw_link_the_app_and_it_reads_as_an_mcp_app(memory):
    async with Client(build_server(memory, tool_prefix="mt_")) as client:
        tools = {t["name"]: t for t in dump(await client.list_tools())["tools"]}
        linked = {name for name, t in tools.items() if "ui" in t.get("_meta", {})}
        assert linked == {"mt_" + n for n in LINKED_TOOLS}
        assert all(tools[n]["_meta"]["ui"] == {"resourceUri": APP_URI} for n in linked)
        assert all(t["_meta"]["anthropic/maxResultSizeChars"] > 0 for t in tools.values())  # kept beside it
        content = dump(await client.read_resource(APP_URI))["contents"][0]
        assert content["mimeType"] == APP_MIME == "text/html;profile=mcp-app"
        ui = content["_meta"]["ui"]
        assert not any(ui["csp"].values()) and ui["prefersBorder"] is True  # no domain of any kind
        html = content["text"]
        policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1)
        assert "connect-src 'none'" in policy and "img-src data:" in policy and "unsafe" not in policy
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # nothing from the network
        assert len(html.encode()) < 100_000
        listed = [str(r.uri) for r in (await client.list_resources()).resources]
        assert APP_URI not in listed and "memtools://videos" in listed  # reached through its tools, not a menu


async def test_results_are_the_same_with_and_without_the_app(memory):
    async with Client(build_server(memory)) as with_app, Client(build_server(memory, app=False)) as without:
        for name, arguments in VALID_CALLS.items():
            got, bare = await with_app.call_tool(name, arguments), await without.call_tool(name, arguments)
            assert dump(got) == dump(bare), name
        listed = {t["name"]: t for t in dump(await with_app.list_tools())["tools"]}
        plain = {t["name"]: t for t in dump(await without.list_tools())["tools"]}
        for t in listed.values():
            t["_meta"].pop("ui", None)
        assert listed == plain  # tools/list differs only in the link
        assert APP_URI not in {str(r.uri) for r in (await without.list_resources()).resources}
        with pytest.raises(Exception, match="(?i)unknown resource"):
            await without.read_resource(APP_URI)
