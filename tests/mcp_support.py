"""Shared by the ``test_mcp_*`` files: a small memory with keyframes, servers run as subprocesses, and one client API.

``make_memory`` writes ``kitchen_graph()`` plus twelve keyframes (one every 30 s, real JPEGs
under ``frames/<video>/``) with the deterministic ``TestEmbedder``, so servers started in
other processes reload the same embedder from the manifest. Keyframes are embedded with
the colour-honest ``TestImageEmbedder``, so ``search_frames`` works in every front end.

``Client``, ``MCPError`` and ``MODES`` let the same tests run on both MCP SDK majors: on mcp 2.x
they are the SDK's own (``mcp.Client`` in both connection modes); on mcp 1.x ``Client`` is a
``ClientSession`` over the same transports (in-memory JSON-RPC, stdio, streamable HTTP) whose
results read with 2.x's snake_case names (``result.is_error``), as the tests are written.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import httpx
import numpy as np
from pydantic import BaseModel

import memtools
from memtools.embed.images import TestImageEmbedder
from memtools.embed.testing import TestEmbedder
from memtools.mcp.sdk import SDK_MAJOR
from memtools.schema import Keyframe, VideoGraph, keyframe_id
from memtools.store import Memory
from memtools.testing import kitchen_graph

KEYFRAME_EVERY = 30
# One valid call per tool, against make_memory()'s "kitchen" video.
VALID_CALLS: dict[str, dict] = {
    "list_videos": {},
    "get_summary": {"video_id": "kitchen"},
    "get_super_events": {"video_id": "kitchen"},
    "get_macro_events": {"super_id": "kitchen/super_01"},
    "get_subgraph": {"macro_id": "kitchen/macro_0002"},
    "search_nodes": {"query": "the pan catches fire", "top_k": 3},
    "search_graph": {"query": "the pan catches fire", "top_k": 3, "video_id": "kitchen"},
    "search_entities": {"query": "cook", "top_k": 3},
    "get_entity_timeline": {"name": "cook", "video_id": "kitchen"},
    "get_event_chain": {"activity": "slices onions"},
    "search_by_time": {"start_sec": 130, "end_sec": 250, "video_id": "kitchen"},
    "get_transcript": {"video_id": "kitchen", "start_sec": 0, "end_sec": 120},
    "get_relations": {"node_id": "kitchen/macro_0001"},
    "inspect_frames": {"video_id": "kitchen", "start_sec": 100, "end_sec": 200, "max_frames": 3},
    "search_frames": {"query": "a blue frame", "top_k": 2, "video_id": "kitchen"},
}
BUSY = "memory is being updated, try again in a few seconds"


def jpeg(index: int) -> bytes:
    image = np.full((90, 160, 3), (40 * index % 255, 90, 200 - 10 * index), np.uint8)
    cv2.putText(image, f"kf {index}", (10, 50), cv2.FONT_HERSHEY_SIMPLEX, 1.0, (255, 255, 255), 2)
    ok, buf = cv2.imencode(".jpg", image)
    assert ok
    return buf.tobytes()


def with_keyframes(graph: VideoGraph, memory: Path) -> VideoGraph:
    vid = graph.video_id
    folder = memory / "frames" / vid
    folder.mkdir(parents=True, exist_ok=True)
    for n, t in enumerate(range(0, int(graph.video.duration), KEYFRAME_EVERY), 1):
        rel = f"frames/{vid}/kf_{n:04d}.jpg"
        (memory / rel).write_bytes(jpeg(n))
        macro = next(m for m in graph.macros if m.t_start <= t < m.t_end)
        graph.keyframes.append(Keyframe(id=keyframe_id(vid, n), video_id=vid, t=float(t), path=rel, macro_id=macro.id))
    graph.check()
    return graph


def make_memory(folder: Path, video_ids: tuple[str, ...] = ("kitchen",)) -> Path:
    path = folder / "mem"
    with Memory.create(path, TestEmbedder(64), image_embedder=TestImageEmbedder()) as memory:
        for vid in video_ids:
            memory.write_video(with_keyframes(kitchen_graph(vid), path))
    return path


_shared: dict[str, Path] = {}


def shared_memory(tmp_path_factory) -> Path:
    """One ``make_memory()`` for the whole session, for tests that only read (writers make their own)."""
    if "path" not in _shared:
        _shared["path"] = make_memory(tmp_path_factory.mktemp("mcp-shared"))
    return _shared["path"]


# --- subprocesses ---------------------------------------------------------------------


def mcp_command(memory: Path, *extra: str) -> tuple[str, list[str]]:
    """``memtools-mcp --memory DIR ...`` as (command, args), run by this Python on the memtools this test imports
    (the SDK's stdio client passes only a few environment variables, never ``PYTHONPATH``)."""
    src = str(Path(memtools.__file__).resolve().parents[1])
    entry = f"import sys; sys.path.insert(0, {src!r}); from memtools.mcp import main; sys.exit(main())"
    return sys.executable, ["-c", entry, "--memory", str(memory), *extra]


def console_script(name: str) -> str | None:
    return shutil.which(name, path=str(Path(sys.executable).parent))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def http_server(memory: Path, timeout: float = 60.0, host: str = "127.0.0.1", extra: tuple[str, ...] = (),
                env: dict[str, str] | None = None, headers: dict[str, str] | None = None) -> Iterator[str]:
    """``memtools serve --memory DIR --http --host H --port P [extra]`` in a subprocess; yields the MCP URL (on
    127.0.0.1); always stops it. ``headers`` go with the readiness probe (a token, when ``extra`` asks for one)."""
    port = free_port()
    script = console_script("memtools")
    cmd = [script] if script else [sys.executable, "-c", "import sys; from memtools.cli import main; sys.exit(main())"]
    cmd += ["serve", "--memory", str(memory), "--http", "--host", host, "--port", str(port), *extra]
    log = tempfile.TemporaryFile()  # not a pipe: a chatty server must never block on a full pipe
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, env={**os.environ, **(env or {})})
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"memtools serve exited with {proc.returncode}: {log.read().decode()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1.0, headers=headers).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise TimeoutError(f"memtools serve did not answer on port {port} within {timeout} s")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


# --- one client API on both SDK majors ---------------------------------------------------


class _Snake:
    """A 1.x wire model read with 2.x's attribute names (``is_error`` -> ``isError``); ``isinstance`` sees its type."""

    __slots__ = ("_model",)

    def __init__(self, model: BaseModel) -> None:
        object.__setattr__(self, "_model", model)

    @property  # type: ignore[misc]  # isinstance() falls back on __class__
    def __class__(self) -> type:
        return type(self._model)

    def __getattr__(self, name: str) -> Any:
        camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)
        return _snake(getattr(self._model, camel if camel in type(self._model).model_fields else name))

    def __repr__(self) -> str:
        return repr(self._model)


def _snake(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return _Snake(value)
    return [_snake(v) for v in value] if isinstance(value, list) else value


def v2_names(model: BaseModel) -> Any:
    """A wire model (e.g. a ``CallToolResult`` built by the adapter) read with 2.x's attribute names on either SDK."""
    return model if SDK_MAJOR == 2 else _Snake(model)


@contextlib.asynccontextmanager
async def http_streams(url: str, http_client: Any = None) -> Any:
    """The SDK client's (read, write) streams over streamable HTTP: 1.x yields a third item (the session id
    getter) and names the function streamablehttp_client in older releases; 2.x yields two."""
    from mcp.client import streamable_http

    connect = getattr(streamable_http, "streamable_http_client", None) or streamable_http.streamablehttp_client
    kwargs = {"http_client": http_client} if http_client is not None else {}
    async with connect(url, **kwargs) as streams:
        yield streams[0], streams[1]


class Mcp1Client:
    """``mcp.Client``'s constructor and methods, on mcp 1.x: a server object, ``StdioServerParameters`` or a URL."""

    def __init__(self, target: Any, mode: str = "memory", elicitation_callback: Any = None) -> None:
        self.target = target
        self.elicitation_callback = elicitation_callback  # declares the elicitation capability, as on 2.x
        self.instructions: str | None = None
        self._stack = contextlib.AsyncExitStack()

    async def __aenter__(self) -> Mcp1Client:
        import anyio
        from mcp import ClientSession, StdioServerParameters, stdio_client
        from mcp.shared.memory import create_client_server_memory_streams

        stack = await self._stack.__aenter__()
        try:
            if isinstance(self.target, StdioServerParameters):
                read, write = await stack.enter_async_context(stdio_client(self.target))
            elif isinstance(self.target, str):
                read, write = await stack.enter_async_context(http_streams(self.target))
            else:  # a server in this process, over JSON-RPC on memory streams (2.x's "legacy" mode)
                lowlevel = self.target._mcp_server
                (read, write), (server_read, server_write) = await stack.enter_async_context(
                    create_client_server_memory_streams())
                tasks = await stack.enter_async_context(anyio.create_task_group())
                stack.callback(tasks.cancel_scope.cancel)
                tasks.start_soon(lambda: lowlevel.run(server_read, server_write,
                                                      lowlevel.create_initialization_options()))
            self.session = await stack.enter_async_context(
                ClientSession(read, write, elicitation_callback=self.elicitation_callback))
            self.instructions = (await self.session.initialize()).instructions
        except BaseException:
            await self._stack.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._stack.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:  # list_tools, call_tool, read_resource, get_prompt, ...
        if name == "session":
            raise AttributeError("use the client inside `async with`")
        method = getattr(self.session, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            return _snake(await method(*args, **kwargs))

        return call


if SDK_MAJOR == 2:
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    MODES = ["auto", "legacy"]
    """``Client(server, mode=...)``: 2.x's direct dispatcher (protocol 2026-07-28) and JSON-RPC on memory streams."""
else:
    from mcp.shared.exceptions import McpError as MCPError  # noqa: F401 - imported by the tests

    Client = Mcp1Client  # type: ignore[assignment,misc]
    MODES = ["memory"]
