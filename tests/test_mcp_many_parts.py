"""Many memories behind one server, in process: the MCP client on both SDK majors, new memories found while
serving, OAuth scopes that name memories, and a tokens file that says clearly what is wrong with it."""

from __future__ import annotations

import hashlib
import json

import httpx
import pytest
from starlette.testclient import TestClient

from mcp_support import MODES, Client, make_memory
from memtools.errors import ConfigError
from memtools.mcp.auth import IntrospectionVerifier
from memtools.mcp.http import HttpOptions, authenticator, http_app
from memtools.mcp.many import build_many_server
from memtools.mcp.run import serve
from memtools.mcp.sdk import SDK_MAJOR
from memtools.mcp.tokens_file import TokensFile

MODE = "legacy" if SDK_MAJOR == 2 else "memory"
TOKEN = "t" * 40
HEADERS = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("many-parts")
    (root / "memories").mkdir()
    make_memory(root / "one").rename(root / "memories" / "home")
    make_memory(root / "two", ("office",)).rename(root / "memories" / "work")
    (root / "memories" / "not a memory").mkdir()
    (root / "memories" / ".hidden").mkdir()
    return root / "memories"


@pytest.mark.parametrize("mode", MODES)
async def test_the_client_reads_each_memory_and_its_links(folder, mode):
    server = build_many_server(folder)
    try:
        async with Client(server, mode=mode) as client:
            assert "list_memories" in (client.instructions or "")
            listed = await client.call_tool("list_memories", {})
            assert [m["name"] for m in listed.structured_content["memories"]] == ["home", "work"]
            tools = (await client.list_tools()).tools
            assert "get_summary" in {t.name for t in tools}  # linked to the timeline app by one memory's server only
            assert not any("ui" in (t.meta or {}) for t in tools)
            frames = await client.call_tool("inspect_frames", {"memory": "home", "video_id": "kitchen",
                                                                "start_sec": 100, "end_sec": 200, "max_frames": 1})
            uri = frames.structured_content["frames"][0]["uri"]
            assert uri.startswith("memtools://home/videos/kitchen/keyframes/") and uri in frames.content[0].text
            image = await client.read_resource(uri)
            assert image.contents[0].mime_type == "image/jpeg"
            office = await client.call_tool("get_summary", {"memory": "work", "video_id": "office"})
            assert not office.is_error
            wrong = await client.call_tool("get_summary", {"memory": "home", "video_id": "office"})
            assert wrong.is_error and "office" in wrong.content[0].text  # each memory answers for itself
            extra = await client.call_tool("list_memories", {"memory": "home"})
            assert extra.is_error
    finally:
        server.memories.close()


async def test_a_new_memory_is_found_while_serving(folder, tmp_path):
    (tmp_path / "all").mkdir()
    make_memory(tmp_path / "first").rename(tmp_path / "all" / "first")
    server = build_many_server(tmp_path / "all", rescan_seconds=0)
    try:
        async with Client(server, mode=MODE) as client:
            names = await client.call_tool("list_memories", {})
            assert [m["name"] for m in names.structured_content["memories"]] == ["first"]
            make_memory(tmp_path / "second").rename(tmp_path / "all" / "second")
            names = await client.call_tool("list_memories", {})
            assert [m["name"] for m in names.structured_content["memories"]] == ["first", "second"]
            assert not (await client.call_tool("list_videos", {"memory": "second"})).is_error
    finally:
        server.memories.close()


def issuer(scopes_by_token: dict[str, str]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("oauth-authorization-server"):
            return httpx.Response(200, json={"introspection_endpoint": "https://issuer.test/introspect"})
        token = dict(x.split("=", 1) for x in request.content.decode().split("&"))["token"]
        if token not in scopes_by_token:
            return httpx.Response(200, json={"active": False})
        return httpx.Response(200, json={"active": True, "sub": token, "scope": scopes_by_token[token]})

    return httpx.MockTransport(handle)


def test_oauth_scopes_name_the_memories(folder):
    scopes = {"reader-of-home": "memtools:read:home", "writer-of-work": "memtools:write:work openid",
              "everything": "memtools:read", "nothing": "openid profile"}
    verifier = IntrospectionVerifier("https://issuer.test", transport=issuer(scopes), implicit_read=False)
    server = build_many_server(folder, allow_writes=True)
    app = http_app(server, "127.0.0.1", HttpOptions(auth_issuer="https://issuer.test", per_memory=True), verifier)
    expected = {"reader-of-home": [{"name": "home", "may_write": False}],
                "writer-of-work": [{"name": "work", "may_write": True}],
                "everything": [{"name": "home", "may_write": False}, {"name": "work", "may_write": False}],
                "nothing": []}
    try:
        with TestClient(app, base_url="http://127.0.0.1:8765") as client:
            for token, memories in expected.items():
                body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": "list_memories", "arguments": {}}}
                answer = client.post("/mcp", json=body, headers={**HEADERS, "Authorization": f"Bearer {token}"})
                assert answer.json()["result"]["structuredContent"]["memories"] == memories, token
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": "add_note", "arguments": {"memory": "work", "about": "office@10", "text": "a note"}}}
            answer = client.post("/mcp", json=body, headers={**HEADERS, "Authorization": "Bearer writer-of-work"})
            assert not answer.json()["result"].get("isError"), answer.json()
            assert "writer-of-work" in (folder / "work" / "changes.sqlite").read_bytes().decode("latin-1")
            pages = client.get("/", headers={"Authorization": "Bearer reader-of-home"})
            assert 'href="m/home/"' in pages.text and "work" not in pages.text
    finally:
        server.memories.close()
    one = IntrospectionVerifier("https://issuer.test", transport=issuer(scopes))
    assert authenticator(HttpOptions(auth_issuer="https://issuer.test")).implicit_read  # one memory: any token reads
    import anyio

    assert anyio.run(one.grant, "nothing") == {"openid", "profile", "memtools:read"}
    assert anyio.run(verifier.grant, "nothing") == {"openid", "profile"}


def tokens(tmp_path, data) -> str:
    path = tmp_path / "tokens.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


@pytest.mark.parametrize(("data", "env", "says"), [
    ("{not json", {}, "not a readable JSON file"),
    ({}, {}, "at least one token"),
    ({"A_TOKEN": ["memtools:read:home"]}, {}, "A_TOKEN is not set"),
    ({"A_TOKEN": ["memtools:read:home"]}, {"A_TOKEN": "short"}, "too few"),
    ({"A_TOKEN": ["memtools:admin"]}, {"A_TOKEN": TOKEN}, "is not a scope"),
    ({"A_TOKEN": ["memtools:read:../etc"]}, {"A_TOKEN": TOKEN}, "is not a scope"),
    ({"A_TOKEN": []}, {"A_TOKEN": TOKEN}, "must list its scopes"),
    ({"a token in the file": ["memtools:read"]}, {}, "tokens never go in the file"),
    ({"A_TOKEN": ["memtools:read"], "sha256:" + hashlib.sha256(TOKEN.encode()).hexdigest(): ["memtools:write"]},
     {"A_TOKEN": TOKEN}, "the same token"),
])
def test_a_bad_tokens_file_says_what_is_wrong(tmp_path, monkeypatch, data, env, says):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=says):
        TokensFile(tokens(tmp_path, data))


async def test_a_tokens_file_grants_and_names(tmp_path, monkeypatch):
    monkeypatch.setenv("A_TOKEN", TOKEN)
    other = "o" * 40
    found = TokensFile(tokens(tmp_path, {"A_TOKEN": ["memtools:read:home"],
                                         "sha256:" + hashlib.sha256(other.encode()).hexdigest().upper():
                                             ["memtools:write:work"]}))
    assert await found.grant(TOKEN) == {"memtools:read:home"} and found.who(TOKEN) == "A_TOKEN"
    assert await found.grant(other) == {"memtools:write:work"} and found.who(other).startswith("sha256:")
    assert await found.grant("x" * 40) is None and not await found.check(TOKEN[:-1])


def test_options_that_do_not_fit_together(tmp_path, folder, monkeypatch):
    monkeypatch.setenv("A_TOKEN", TOKEN)
    path = tokens(tmp_path, {"A_TOKEN": ["memtools:read"]})
    with pytest.raises(ConfigError, match="--memories"):
        authenticator(HttpOptions(tokens_file=path))
    with pytest.raises(ConfigError, match="either --tokens-file"):
        authenticator(HttpOptions(tokens_file=path, auth_token_env="A_TOKEN", per_memory=True))
    with pytest.raises(ConfigError, match="not both"):
        serve(folder / "home", memories=folder)
    with pytest.raises(ConfigError, match="--transport http"):
        serve(None, memories=folder, options=HttpOptions(tokens_file=path))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="not a folder"):
        build_many_server(tmp_path / "absent")
