"""The server as clients really meet it: a stdio subprocess, streamable HTTP, and a hand-written JSON-RPC client."""

from __future__ import annotations

import base64
import json
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import pytest
from mcp import StdioServerParameters
from mcp.types import ImageContent, ResourceLink

from mcp_support import (
    VALID_CALLS,
    Client,
    console_script,
    http_server,
    jpeg,
    mcp_command,
    shared_memory,
    with_keyframes,
)
from memtools.embed.images import TestImageEmbedder
from memtools.embed.testing import TestEmbedder
from memtools.store import Memory
from memtools.testing import kitchen_graph
from memtools.tools import TOOL_SPECS

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def memory_path(tmp_path_factory):
    return shared_memory(tmp_path_factory)


async def exercise(client: Client) -> None:
    """List everything, call every tool, get frames as images + text, survive a bad call."""
    assert {t.name for t in (await client.list_tools()).tools} == set(TOOL_SPECS)
    assert "memtools://videos/kitchen/summary" in {str(r.uri) for r in (await client.list_resources()).resources}
    assert (await client.list_resource_templates()).resource_templates
    assert [p.name for p in (await client.list_prompts()).prompts] == ["answer_video_question"]
    for name, arguments in VALID_CALLS.items():
        result = await client.call_tool(name, arguments)
        assert not result.is_error, (name, result.content)
        assert result.structured_content is not None and result.content[0].text
    frames = await client.call_tool("inspect_frames", VALID_CALLS["inspect_frames"])
    images = [base64.b64decode(b.data) for b in frames.content if isinstance(b, ImageContent)]
    assert images == [jpeg(5), jpeg(6), jpeg(7)]
    assert not [b for b in frames.content if isinstance(b, ResourceLink)]  # URIs go as text (see adapter)
    assert "; resource memtools://videos/kitchen/keyframes/kf_0005" in frames.content[1].text
    assert "kitchen/macro_0001" in frames.content[0].text
    bad = await client.call_tool("get_subgraph", {"macro_id": "x') RETURN 1 //"})
    assert bad.is_error and "does not exist" in bad.content[0].text
    typo = await client.call_tool("search_nodes", {"query": "pan", "top_k": "3", "topk": 3})  # strict on the wire
    assert typo.is_error and typo.content[0].text == (
        "Tool error from search_nodes: unknown argument 'topk' for search_nodes (did you mean 'top_k'?); "
        "its arguments are: " + ", ".join(TOOL_SPECS["search_nodes"].args.model_fields)
        + '; top_k must be an integer, not "3" (a string)')
    summary = (await client.read_resource("memtools://videos/kitchen/summary")).contents[0]
    assert "Frying and the pan fire" in summary.text


async def test_stdio_subprocess(memory_path):
    command, args = mcp_command(memory_path)
    async with Client(StdioServerParameters(command=command, args=args)) as client:
        await exercise(client)
        started = time.perf_counter()
        for _ in range(20):
            result = await client.call_tool("get_subgraph", {"macro_id": "kitchen/macro_0002"})
            assert not result.is_error
        per_call = (time.perf_counter() - started) / 20
        print(f"stdio get_subgraph round trip: {per_call * 1000:.1f} ms")


async def test_streamable_http(memory_path):
    with http_server(memory_path) as url:
        async with Client(url) as client:
            await exercise(client)
        async with Client(url, mode="legacy") as client:
            result = await client.call_tool("search_nodes", {"query": "a cook covers the pan with a lid"})
            assert not result.is_error and result.structured_content["hits"]


def test_http_guards_against_dns_rebinding_on_loopback_only(memory_path):
    """On 127.0.0.1 a request naming another host is refused (a web page cannot rebind a name to the server);
    served on 0.0.0.0 for other machines, the host names given with --allowed-host are accepted."""
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "http-test", "version": "0"}}}

    def status(url: str, host: str) -> int:
        return httpx.post(url, json=initialize, timeout=30, headers={
            "Host": host, "Accept": "application/json, text/event-stream"}).status_code

    with http_server(memory_path) as url:
        port = url.split(":")[2].split("/")[0]
        assert status(url, f"127.0.0.1:{port}") == 200 and status(url, f"localhost:{port}") == 200
        assert status(url, f"attacker.example:{port}") == 421
    lan = ("--insecure-no-auth", "--allowed-host", "video-box.lan")
    with http_server(memory_path, host="0.0.0.0", extra=lan) as url:
        assert status(url, "video-box.lan:8765") == 200 and status(url, "attacker.example:8765") == 421


class RawClient:
    """Newline-delimited JSON-RPC over a subprocess's pipes, as a client without any MCP SDK speaks it."""

    def __init__(self, cmd: list[str]) -> None:
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, cwd=REPO)
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self.next_id = 0
        self.stderr = ""
        self.notifications: list[str] = []  # methods of the server's notifications, in order

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, method: str, params: dict | None = None, *, notify: bool = False) -> dict | None:
        message = {"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})}
        if not notify:
            self.next_id += 1
            message["id"] = self.next_id
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()
        while not notify:
            reply = json.loads(self.lines.get(timeout=60))  # anything on stdout must be JSON-RPC
            if reply.get("id") == self.next_id:
                return reply
            if "method" in reply and "id" not in reply:
                self.notifications.append(reply["method"])
        return None

    def close(self) -> int:
        """Close stdin, wait for the exit code; the server's stderr is then in ``self.stderr``."""
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=20)
        finally:
            self.log.seek(0)
            self.stderr = self.log.read().decode(errors="replace")
            self.log.close()


def test_thin_entry_speaks_plain_json_rpc(memory_path):
    raw = RawClient([sys.executable, "mcp_server/server.py", "--memory", str(memory_path)])
    try:
        init = raw.send("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                       "clientInfo": {"name": "raw-test", "version": "0"}})["result"]
        assert init["protocolVersion"] == "2025-06-18" and "get_subgraph" in init["instructions"]
        raw.send("notifications/initialized", notify=True)
        tools = {t["name"]: t for t in raw.send("tools/list")["result"]["tools"]}
        assert tools["search_nodes"]["annotations"]["readOnlyHint"] is True
        assert tools["search_nodes"]["inputSchema"]["properties"]["top_k"]["maximum"] == 50
        assert tools["search_nodes"]["_meta"]["anthropic/maxResultSizeChars"] > 0
        found = raw.send("tools/call", {"name": "search_nodes", "arguments": {"query": "pan fire"}})["result"]
        assert found["isError"] is False and found["structuredContent"]["hits"]
        frames = raw.send("tools/call", {"name": "inspect_frames", "arguments": VALID_CALLS["inspect_frames"]})
        kinds = [b["type"] for b in frames["result"]["content"]]
        assert kinds[:5] == ["text", "text", "image", "text", "image"]
        assert frames["result"]["content"][2]["mimeType"] == "image/jpeg"
        bad = raw.send("tools/call", {"name": "search_by_time", "arguments": {"start_sec": "soon", "end_sec": 3}})
        assert bad["result"]["isError"] is True and "start_sec" in bad["result"]["content"][0]["text"]
        for arguments, reason in (({}, "missing required argument 'question'"),
                                  ({"question": 5}, "Invalid request parameters")):  # strings only on the wire
            error = raw.send("prompts/get", {"name": "answer_video_question", "arguments": arguments})["error"]
            assert error["code"] == -32602 and reason in error["message"]
        assert raw.send("ping")["result"] == {}
    finally:
        assert raw.close() == 0  # stdin closed: the server exits cleanly
    assert "ERROR" not in raw.stderr and "Traceback" not in raw.stderr  # clients' mistakes are not server errors


def test_console_script_fails_fast_on_a_missing_memory(tmp_path):
    script = console_script("memtools-mcp")
    cmd = [script] if script else [sys.executable, "-m", "memtools.mcp"]
    done = subprocess.run([*cmd, "--memory", str(tmp_path / "none")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "no memtools memory" in done.stderr and done.stdout == ""


def test_http_with_a_token_on_every_address(memory_path):
    """The real server (uvicorn) on 0.0.0.0 with --auth-token-env: every route wants the token, GET /mcp ends."""
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "http-test", "version": "0"}}}
    token = {"Authorization": "Bearer 0123456789abcdef0123456789abcdef"}
    accept = {"Accept": "application/json, text/event-stream"}
    with http_server(memory_path, host="0.0.0.0", extra=("--auth-token-env", "MEMTOOLS_E2E_TOKEN"),
                     env={"MEMTOOLS_E2E_TOKEN": "0123456789abcdef0123456789abcdef"}, headers=token) as url:
        base = url.removesuffix("/mcp")
        refused = httpx.post(url, json=initialize, headers=accept, timeout=30)
        assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")
        assert httpx.post(url, json=initialize, headers={**accept, **token}, timeout=30).status_code == 200
        assert httpx.get(f"{base}/", timeout=30).status_code == 401
        assert httpx.get(f"{base}/", headers=token, timeout=30).status_code == 200
        assert httpx.get(url, headers={**token, "Accept": "text/event-stream"}, timeout=30).status_code == 405


def test_a_build_that_turns_visual_search_on_is_announced(tmp_path):
    """search_frames is listed once the memory has an image embedder, and a client that listed the tools before is
    sent notifications/tools/list_changed after its next call."""
    path = tmp_path / "mem"
    with Memory.create(path, TestEmbedder(64)) as memory:
        memory.write_video(with_keyframes(kitchen_graph("kitchen"), path))
    command, args = mcp_command(path)
    raw = RawClient([command, *args])
    try:
        init = raw.send("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                       "clientInfo": {"name": "raw-test", "version": "0"}})["result"]
        assert init["capabilities"]["tools"]["listChanged"] is True
        raw.send("notifications/initialized", notify=True)
        assert "search_frames" not in {t["name"] for t in raw.send("tools/list")["result"]["tools"]}
        raw.send("tools/call", {"name": "list_videos", "arguments": {}})
        assert raw.notifications == []  # nothing changed yet
        with Memory.open(path, image_embedder=TestImageEmbedder()) as memory:  # a later build with one
            memory.write_video(with_keyframes(kitchen_graph("garden"), path))
        raw.send("tools/call", {"name": "list_videos", "arguments": {}})
        assert raw.notifications == ["notifications/tools/list_changed"]
        assert "search_frames" in {t["name"] for t in raw.send("tools/list")["result"]["tools"]}
        raw.send("tools/call", {"name": "list_videos", "arguments": {}})
        assert raw.notifications == ["notifications/tools/list_changed"]  # said once
    finally:
        assert raw.close() == 0
