"""add_video through the official MCP client: a job followed to done with progress, resumed after kill -9, capped.

Servers run as subprocesses over stdio and streamable HTTP, on an empty memory, with the
package's scripted fake model (``jobs_support.gated_vlm`` where a build must stand still).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest
from mcp import StdioServerParameters

from jobs_support import GATED, SCRIPTED, make_sample_video, server_command, server_env
from mcp_support import Client, free_port
from memtools.embed.testing import TestEmbedder
from memtools.mcp.sdk import SDK_MAJOR
from memtools.speech import voice_weights, whisper
from memtools.store import Memory


@pytest.fixture(scope="module")
def videos(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("videos")
    make_sample_video(folder / "sample.mp4")
    for name in ("second.mp4", "third.mp4"):
        shutil.copy(folder / "sample.mp4", folder / name)
    return folder


def empty_memory(folder: Path) -> Path:
    Memory.create(folder / "mem", TestEmbedder(64)).close()
    return folder / "mem"


def stdio(memory: Path, *extra: str, speech: str = "none", **env: str) -> StdioServerParameters:
    """The server over stdio; its builds recognise no speech unless ``speech`` says (whisper costs seconds)."""
    command, args = server_command(memory, "--allow-writes", "--speech", speech, *extra)
    return StdioServerParameters(command=command, args=args, env=server_env(**env))


async def follow(client, job_id: str, progress=None) -> dict:
    """get_job until the job is finished (each call waits up to 25 s, within the HTTP client's timeout; a busy
    machine builds slowly)."""
    for _ in range(40):
        result = await client.call_tool("get_job", {"job_id": job_id, "wait_seconds": 25},
                                        **({"progress_callback": progress} if progress else {}))
        job = result.structured_content
        if job["state"] in ("done", "failed"):
            return job
    raise AssertionError(f"job {job_id} did not finish: {job}")


async def test_add_the_sample_follow_the_job_with_progress_and_search_it(tmp_path, videos):
    memory = empty_memory(tmp_path)
    params = stdio(memory, "--allow-root", str(videos), "--vlm", SCRIPTED, "--preset", "short", speech="auto")
    async with Client(params) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"add_video", "get_job", "list_jobs", "estimate_build"} <= names
        estimate = await client.call_tool("estimate_build", {"sources": ["sample.mp4"]})
        assert not estimate.is_error and "no model was called" in estimate.content[0].text
        planned = estimate.structured_content["calls"]
        added = await client.call_tool("add_video", {"source": "sample.mp4"})
        assert not added.is_error, added.content[0].text
        job_id = added.structured_content["job_id"]
        assert added.structured_content["state"] in ("queued", "running")
        seen: list[tuple[float, str | None]] = []

        async def progress(value: float, total: float | None, message: str | None) -> None:
            seen.append((value, message))

        done = await follow(client, job_id, progress)
        assert done["state"] == "done", done
        assert done["video_id"] == "sample" and done["calls"] > 0 and done["input_tokens"] > 0
        assert abs(planned - done["calls"]) <= 0.2 * done["calls"]
        assert seen and any("running" in (m or "") for _, m in seen)  # progress notifications came
        assert [v for v, _ in seen] == sorted(v for v, _ in seen)
        found = await client.call_tool("search_nodes", {"query": "a red ball knocks over boxes", "top_k": 3})
        assert "sample/macro_" in found.content[0].text
        transcript = await client.call_tool("get_transcript", {"video_id": "sample", "start_sec": 0, "end_sec": 180})
        if whisper.available() and voice_weights.available():  # the build heard who spoke, as memtools build does
            assert not transcript.is_error and "S1" in transcript.content[0].text
        listed = await client.call_tool("list_videos", {})
        assert "sample" in listed.content[0].text
        resources = [str(r.uri) for r in (await client.list_resources()).resources]
        assert any("sample" in uri for uri in resources)  # its summary is a resource now
        again = await client.call_tool("add_video", {"source": str(videos / "sample.mp4")})
        assert not again.is_error  # adding it again is a job that finds it built: nothing written twice
        second = await follow(client, again.structured_content["job_id"])
        assert second["state"] == "done" and second["calls"] == 0
    with Memory.open(memory) as opened:
        assert opened.video_ids() == ["sample"]


async def test_hostile_sources_are_refused_in_plain_words(tmp_path, videos):
    memory = empty_memory(tmp_path)
    root = tmp_path / "root"
    root.mkdir()
    (root / "escape.mp4").symlink_to(videos / "sample.mp4")  # a link out of the root
    (root / "zero.mp4").symlink_to("/dev/zero")
    os.mkfifo(root / "pipe.mp4")
    params = stdio(memory, "--allow-root", str(root), "--vlm", SCRIPTED)
    async with Client(params) as client:
        for source in ("../videos/sample.mp4", f"{root}/../{videos.name}/sample.mp4", "escape.mp4", "zero.mp4",
                       "/dev/zero", "pipe.mp4", "http://127.0.0.1:9/a.mp4", "missing.mp4"):
            result = await client.call_tool("add_video", {"source": source})
            assert result.is_error, source
            text = result.content[0].text
            assert "Traceback" not in text and ("outside" in text or "not a regular file" in text
                                                or "no file" in text or "without --allow-urls" in text), text
        jobs = await client.call_tool("list_jobs", {})
        assert "No jobs" in jobs.content[0].text
        bad = await client.call_tool("add_video", {"source": "x.mp4", "unknown": 1})
        assert bad.is_error and "unknown" in bad.content[0].text


async def test_a_flood_of_jobs_is_capped(tmp_path, videos):
    memory = empty_memory(tmp_path)
    params = stdio(memory, "--allow-root", str(videos), "--vlm", GATED, "--max-queued-jobs", "2",
                   JOBS_TEST_OPEN_CALLS="0", JOBS_TEST_GATE=str(tmp_path / "never"))
    async with Client(params) as client:
        for name in ("sample.mp4", "second.mp4"):
            assert not (await client.call_tool("add_video", {"source": name})).is_error
        refused = await client.call_tool("add_video", {"source": "third.mp4"})
        assert refused.is_error and "try again in 30 s" in refused.content[0].text
        assert refused.meta["memtools/errorKind"] == "busy"


def _serve_http(memory: Path, port: int, *extra: str, **env: str) -> subprocess.Popen:
    code = "import sys; from memtools.cli import main; sys.exit(main())"
    log = tempfile.TemporaryFile()
    command = [sys.executable, "-c", code, "serve", "--memory", str(memory), "--http", "--port", str(port),
               "--allow-writes", "--speech", "none", *extra]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log, env=server_env(**env))
    deadline = time.monotonic() + 180
    token = env.get("WRITE_TOKEN")
    while True:
        try:
            headers = {"Authorization": f"Bearer {token}"} if token else None
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1, headers=headers).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            log.seek(0)
            raise RuntimeError(log.read().decode()[-2000:])
        time.sleep(0.1)


async def test_over_http_a_job_is_followed_with_progress_and_a_flood_gets_503_with_retry_after(tmp_path, videos):
    memory = empty_memory(tmp_path)
    port = free_port()
    gate = tmp_path / "gate"
    proc = _serve_http(memory, port, "--allow-root", str(videos), "--vlm", GATED, "--max-queued-jobs", "1",
                       JOBS_TEST_OPEN_CALLS="0", JOBS_TEST_GATE=str(gate))
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        async with Client(url) as client:
            added = await client.call_tool("add_video", {"source": "sample.mp4"})
            job_id = added.structured_content["job_id"]
            call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                    "params": {"name": "add_video", "arguments": {"source": "second.mp4"}}}
            flood = httpx.post(url, json=call, headers={"Accept": "application/json, text/event-stream"})
            assert flood.status_code == 503 and flood.headers["Retry-After"] == "30"
            gate.touch()
            seen: list[str | None] = []

            async def progress(value: float, total: float | None, message: str | None) -> None:
                seen.append(message)

            assert (await follow(client, job_id, progress))["state"] == "done"
            assert seen and any("running" in (m or "") for m in seen)  # the answer streamed its progress
            plain = httpx.post(url, json={"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {
                "name": "get_job", "arguments": {"job_id": job_id}}},
                headers={"Accept": "application/json, text/event-stream"})
            assert plain.headers["content-type"].startswith("application/json")  # no progress asked: one JSON body
            assert plain.json()["result"]["structuredContent"]["state"] == "done"
            found = await client.call_tool("search_nodes", {"query": "red ball", "top_k": 2})
            assert "sample/" in found.content[0].text
    finally:
        proc.terminate()
        proc.wait(10)


async def test_kill_9_during_a_job_then_restart_resumes_it_without_duplicates(tmp_path, videos):
    memory = empty_memory(tmp_path)
    calls_log, gate = tmp_path / "calls.log", tmp_path / "gate"
    port = free_port()
    proc = _serve_http(memory, port, "--allow-root", str(videos), "--vlm", GATED, "--preset", "short",
                       JOBS_TEST_OPEN_CALLS="3", JOBS_TEST_GATE=str(gate), JOBS_TEST_CALL_LOG=str(calls_log))
    try:
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            job_id = (await client.call_tool("add_video", {"source": "sample.mp4"})).structured_content["job_id"]
        checkpoints = memory / "work" / "sample" / "calls"
        deadline = time.monotonic() + 60
        while len(list(checkpoints.rglob("*.json"))) < 3:
            assert time.monotonic() < deadline + 240, "the build never answered three calls"
            time.sleep(0.1)
        running = json.loads((memory / "jobs.json").read_text())["jobs"][0]
        assert running["state"] == "running"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    gate.touch()
    params = stdio(memory, "--allow-root", str(videos), "--vlm", GATED, "--preset", "short",
                   JOBS_TEST_GATE=str(gate), JOBS_TEST_CALL_LOG=str(calls_log))
    async with Client(params) as client:
        job = await follow(client, job_id)
        assert job["state"] == "done" and job["runs"] == 2
        jobs = (await client.call_tool("list_jobs", {})).structured_content["jobs"]
        assert [j["job_id"] for j in jobs] == [job_id]
    answered = calls_log.read_text().splitlines()
    assert len(answered) == 9  # 3 before the kill + 6 after: the uninterrupted short build's 9, none asked twice
    with Memory.open(memory) as opened:
        assert opened.video_ids() == ["sample"]
        assert opened.manifest.videos["sample"].counts["macro"] == 6


def _rpc(url: str, token: str, method: str, params: dict) -> httpx.Response:
    return httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, timeout=30,
                      headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"})


def test_a_read_only_token_neither_sees_nor_calls_the_build_tools(tmp_path, videos):
    memory = empty_memory(tmp_path)
    port = free_port()
    proc = _serve_http(memory, port, "--allow-root", str(videos), "--vlm", SCRIPTED, "--auth-token-env", "READ_TOKEN",
                       "--write-token-env", "WRITE_TOKEN", READ_TOKEN="r" * 32, WRITE_TOKEN="w" * 32)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        listed = {t["name"] for t in _rpc(url, "r" * 32, "tools/list", {}).json()["result"]["tools"]}
        assert "search_nodes" in listed and not listed & {"add_video", "get_job", "list_jobs", "estimate_build"}
        for name in ("add_video", "get_job", "list_jobs"):
            refused = _rpc(url, "r" * 32, "tools/call", {"name": name, "arguments": {"source": "sample.mp4"}})
            assert refused.status_code == 403 and "insufficient_scope" in refused.headers["WWW-Authenticate"]
        writer = {t["name"] for t in _rpc(url, "w" * 32, "tools/list", {}).json()["result"]["tools"]}
        assert {"add_video", "get_job", "list_jobs", "estimate_build"} <= writer
        added = _rpc(url, "w" * 32, "tools/call", {"name": "add_video", "arguments": {"source": "sample.mp4"}})
        assert added.json()["result"]["structuredContent"]["state"] in ("queued", "running", "done")
    finally:
        proc.terminate()
        proc.wait(10)


def test_add_video_needs_allow_writes(tmp_path, videos):
    memory = empty_memory(tmp_path)
    command, args = server_command(memory, "--allow-root", str(videos), "--vlm", SCRIPTED)
    done = subprocess.run([command, *args], capture_output=True, text=True, timeout=60, env=server_env(),
                          stdin=subprocess.DEVNULL)
    assert done.returncode != 0 and "--allow-writes" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.skipif(SDK_MAJOR != 1, reason="reads notifications with mcp 1.x's ClientSession message_handler")
async def test_the_client_is_told_when_an_added_video_lands(tmp_path, videos):
    from mcp import ClientSession, stdio_client
    from mcp.types import ResourceListChangedNotification, ServerNotification

    memory = empty_memory(tmp_path)
    heard: list[object] = []

    async def listen(message: object) -> None:
        if isinstance(message, ServerNotification):
            heard.append(message.root)

    params = stdio(memory, "--allow-root", str(videos), "--vlm", SCRIPTED, "--preset", "short")
    async with stdio_client(params) as (read, write), ClientSession(read, write, message_handler=listen) as session:
        await session.initialize()
        job_id = (await session.call_tool("add_video", {"source": "sample.mp4"})).structuredContent["job_id"]
        assert not any(isinstance(n, ResourceListChangedNotification) for n in heard)
        for _ in range(15):
            done = (await session.call_tool("get_job", {"job_id": job_id, "wait_seconds": 60})).structuredContent
            if done["state"] != "running" and done["state"] != "queued":
                break
        assert done["state"] == "done"
        assert any(isinstance(n, ResourceListChangedNotification) for n in heard)
