"""Read replicas end to end: ``memtools serve --memory s3://...`` processes (stdio and HTTP) following a writer
that imports and publishes, real MCP clients reading all the while, and publishes killed part-way."""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import StdioServerParameters
from mcp.types import ImageContent

from mcp_support import Client, http_server, jpeg, make_memory, mcp_command
from memtools.mcp.replica_serving import ReplicaTools
from replica_support import boto3, caption_file, keys, s3_endpoint_fixture, subprocess_env  # noqa: F401 - fixture

pytestmark = pytest.mark.slow
POLL = "0.3"
ADDED = (("lecture", "A lecturer draws a graph on the board"), ("garden", "A gardener waters the tomato plants"))
VERSIONS = [frozenset({"kitchen"}), frozenset({"kitchen", "lecture"}), frozenset({"kitchen", "lecture", "garden"})]


def memtools(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "import sys; from memtools.cli import main; sys.exit(main())",
                           *argv], env=env, capture_output=True, text=True, timeout=300)


def ok(run: subprocess.CompletedProcess) -> str:
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


def _bucket(endpoint: str, name: str) -> object:
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="testing",
                          aws_secret_access_key="testing")
    client.create_bucket(Bucket=name)
    return client


def _latest(client, bucket: str, prefix: str) -> int:
    import json

    return json.loads(client.get_object(Bucket=bucket, Key=f"{prefix}/LATEST.json")["Body"].read())["version"]


async def _videos(client) -> frozenset[str]:
    listed = await client.call_tool("list_videos", {})
    assert not listed.is_error, listed.content
    return frozenset(v["video_id"] for v in listed.structured_content["videos"])


async def test_two_replicas_follow_two_publishes_while_clients_read(tmp_path, s3_endpoint):
    client = _bucket(s3_endpoint, "replicas")
    uri = "s3://replicas/kitchen"
    memory = make_memory(tmp_path)  # "kitchen" with twelve keyframes under frames/
    env = subprocess_env(s3_endpoint)
    ok(memtools(env, "publish", "--memory", str(memory), uri))
    serving = ("--poll-seconds", POLL, "--cache-dir", str(tmp_path / "cache"))
    command, args = mcp_command(Path(), *serving)
    args[args.index("--memory") + 1] = uri
    answers: dict[str, list[frozenset[str]]] = {"http": [], "stdio": []}
    published = anyio.Event()

    async def read(name: str, mcp) -> None:
        while True:
            videos = await _videos(mcp)
            assert videos in VERSIONS, f"{name} answered with a mix of versions: {sorted(videos)}"
            answers[name].append(videos)
            found = await mcp.call_tool("search_nodes", {"query": "the pan catches fire", "top_k": 5})
            assert not found.is_error, found.content
            assert {h["video_id"] for h in found.structured_content["hits"]} <= videos
            if published.is_set() and videos == VERSIONS[-1]:
                return

    async def write() -> None:
        for video_id, words in ADDED:
            captions = caption_file(tmp_path, video_id, words)
            ok(await anyio.to_thread.run_sync(memtools, env, "import-captions", str(captions), "--memory", str(memory)))
            ok(await anyio.to_thread.run_sync(memtools, env, "publish", "--memory", str(memory), uri))
        published.set()

    with http_server(uri, extra=serving, env=env) as url:  # type: ignore[arg-type]
        stdio = StdioServerParameters(command=command, args=args, env=env)
        async with Client(url) as http_mcp, Client(stdio) as stdio_mcp:
            assert await _videos(http_mcp) == await _videos(stdio_mcp) == VERSIONS[0]
            with anyio.fail_after(240):  # a hang guard, not a timing: both must reach the last version
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(read, "http", http_mcp)
                    tasks.start_soon(read, "stdio", stdio_mcp)
                    tasks.start_soon(write)
            for name, seen in answers.items():  # each moved forward only, and ended on the last version
                order = [VERSIONS.index(v) for v in seen]
                assert order == sorted(order) and order[-1] == 2, (name, order)
            frames = await stdio_mcp.call_tool("inspect_frames", {"video_id": "kitchen", "start_sec": 100,
                                                                  "end_sec": 200, "max_frames": 3})
            assert [base64.b64decode(b.data) for b in frames.content if isinstance(b, ImageContent)] == [
                jpeg(5), jpeg(6), jpeg(7)]
            page = httpx.get(url.removesuffix("/mcp") + "/frames/kitchen/kf_0002.jpg", timeout=30)
            assert page.status_code == 200 and page.content == jpeg(2)
    assert _latest(client, "replicas", "kitchen") == 3
    replica = ReplicaTools(uri, cache_dir=tmp_path / "cache", poll_seconds=60, environ=env)
    replica.start()  # a server that starts removes what servers that are gone left in the cache (none is left now)
    assert replica.version == 3 and {v.video_id for v in replica().list_videos().videos} == VERSIONS[-1]
    replica.close()
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_dir() and p.name.startswith("server-")]


@pytest.mark.parametrize("point", ["publish.staged", "publish.upload:3", "publish.snapshot"])
async def test_a_publish_killed_part_way_leaves_the_previous_version_served(tmp_path, s3_endpoint, point):
    name = f"killed-{point.replace('.', '-').replace(':', '-')}"
    client = _bucket(s3_endpoint, name)
    uri = f"s3://{name}/lib"
    memory = make_memory(tmp_path)
    env = subprocess_env(s3_endpoint)
    ok(memtools(env, "publish", "--memory", str(memory), uri))
    ok(memtools(env, "import-captions", str(caption_file(tmp_path, *ADDED[0])), "--memory", str(memory)))
    serving = ("--poll-seconds", POLL, "--cache-dir", str(tmp_path / "cache"))
    with http_server(uri, extra=serving, env=env) as url:  # type: ignore[arg-type]

        async def videos_now() -> frozenset[str]:
            async with Client(url) as mcp:
                return await _videos(mcp)

        killed = await anyio.to_thread.run_sync(
            lambda: memtools({**env, "MEMTOOLS_FAULT_POINT": point}, "publish", "--memory", str(memory), uri))
        assert killed.returncode == -9, killed.stderr[-2000:]
        assert _latest(client, name, "lib") == 1
        for _ in range(5):  # several polls go by: LATEST did not move, so the server stays on version 1
            assert await videos_now() == VERSIONS[0]
            await anyio.sleep(float(POLL))
        out = ok(await anyio.to_thread.run_sync(memtools, env, "publish", "--memory", str(memory), uri))
        if point == "publish.staged":  # killed before any upload: the version number was not used
            assert "Published version 2" in out and "removed" not in out
            expected = {"000001", "000002"}
        else:  # the partial (or never pointed-at) version 2 is removed by the next publish
            assert "Published version 3" in out and "removed version(s) 2" in out
            expected = {"000001", "000003"}
        assert {k.split("/")[2] for k in keys(client, name, "lib/versions/")} == expected
        assert not list(memory.glob(".publish-*"))  # the killed publish's staging folder is gone
        with anyio.fail_after(120):  # a hang guard: the server moves to the new version
            while await videos_now() != VERSIONS[1]:
                await anyio.sleep(float(POLL))


async def test_a_ladybug_memory_is_published_and_served(tmp_path, s3_endpoint):
    """The graph file and any other files of the ladybug engine travel the same way (every process here is a
    child: ladybug cannot be loaded beside kuzu)."""
    import importlib.util
    import json

    if importlib.util.find_spec("ladybug") is None:  # find_spec does not import it (kuzu is loaded here)
        pytest.skip("ladybug is not installed: pip install 'memtools[ladybug]' (the dev extra has it)")
    client = _bucket(s3_endpoint, "ladybug")
    uri = "s3://ladybug/lib"
    memory = tmp_path / "memory"
    env = subprocess_env(s3_endpoint)
    ok(memtools(env, "import-captions", str(caption_file(tmp_path, *ADDED[0])), "--memory", str(memory),
                "--embedder", "test:64", "--graph-engine", "ladybug"))
    ok(memtools(env, "publish", "--memory", str(memory), uri))
    listing = json.loads(client.get_object(Bucket="ladybug", Key="lib/versions/000001/SNAPSHOT.json")["Body"].read())
    assert "graph.lbug" in {f["path"] for f in listing["files"]}  # ladybug's graph file
    command, args = mcp_command(Path(), "--poll-seconds", POLL, "--cache-dir", str(tmp_path / "cache"))
    args[args.index("--memory") + 1] = uri
    async with Client(StdioServerParameters(command=command, args=args, env=env)) as mcp:
        assert await _videos(mcp) == {"lecture"}
        ok(await anyio.to_thread.run_sync(lambda: memtools(env, "import-captions", str(caption_file(
            tmp_path, *ADDED[1])), "--memory", str(memory))))
        ok(await anyio.to_thread.run_sync(memtools, env, "publish", "--memory", str(memory), uri))
        with anyio.fail_after(120):  # a hang guard: the server moves to version 2
            while (videos := await _videos(mcp)) != {"lecture", "garden"}:
                assert videos == {"lecture"}
                await anyio.sleep(float(POLL))
        found = await mcp.call_tool("search_nodes", {"query": "gardener waters tomatoes", "top_k": 3})
        assert not found.is_error and found.structured_content["hits"][0]["video_id"] == "garden"
